"""docker-compose.yml: parses, runs a Redis 8 image with AOF on, checks its
health and keeps its data in a volume."""

from __future__ import annotations

import re
from typing import Any

import yaml

from .helpers import REPO


def compose() -> dict[str, Any]:
    data = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_redis_8_with_aof_a_healthcheck_and_a_volume() -> None:
    data = compose()
    redis = data["services"]["redis"]
    image = redis["image"]
    assert re.fullmatch(r"redis:8(\.\d+)*", image), image
    command = [str(part) for part in redis["command"]]
    assert command[0] == "redis-server"
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] in ("everysec", "always")
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert "--loadmodule" not in command  # the image's entrypoint loads its modules itself
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    volume, _, mount = redis["volumes"][0].partition(":")
    assert mount == command[command.index("--dir") + 1] == "/data"
    assert volume in data["volumes"]
    assert all(str(port).startswith("127.0.0.1:") for port in redis["ports"])


def test_the_readme_points_redismem_at_it() -> None:
    readme = (REPO / "README.md").read_text()
    assert "docker compose up -d" in readme
    assert "export REDISMEM_URL=redis://127.0.0.1:6379/0" in readme


def test_the_cluster_compose_file_forms_3_primaries_and_3_replicas() -> None:
    data = yaml.safe_load((REPO / "docker-compose.cluster.yml").read_text())
    nodes = {name: s for name, s in data["services"].items() if name.startswith("redis-")}
    assert len(nodes) == 6
    addresses = []
    for service in nodes.values():
        assert re.fullmatch(r"redis:8(\.\d+)*", service["image"])
        command = [str(part) for part in service["command"]]
        option = {command[i]: command[i + 1] for i in range(1, len(command) - 1, 2)}
        assert command[0] == "redis-server"
        assert option["--cluster-enabled"] == "yes" and option["--appendonly"] == "yes"
        assert option["--maxmemory-policy"] == "noeviction" and option["--bind"] == "127.0.0.1"
        assert service["network_mode"] == "host"
        assert service["healthcheck"]["test"][-3:] == ["-p", option["--port"], "ping"]
        volume, _, mount = service["volumes"][0].partition(":")
        assert mount == option["--dir"] and volume in data["volumes"]
        addresses.append(f"127.0.0.1:{option['--port']}")
    create = data["services"]["cluster-create"]
    script = create["command"][0]
    assert f"--cluster create {' '.join(addresses)} --cluster-replicas 1" in script
    assert set(create["depends_on"]) == set(nodes)
    readme = (REPO / "README.md").read_text()
    assert "docker compose -f docker-compose.cluster.yml up -d" in readme
    assert f"redis+cluster://{','.join(addresses[:3])}/0" in readme
