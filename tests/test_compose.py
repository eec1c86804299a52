"""docker-compose.yml: parses, runs a Redis 8 image with AOF on, checks its
health and keeps its data in a volume. docker-compose.cluster.yml: six
nodes and a cluster-create step whose command lines, run here without
Docker, form a cluster redismem uses."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

import redismem
from redismem.server import find_binaries

from .cluster import LocalCluster, _node_port
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


def test_the_production_guide_points_redismem_at_it() -> None:
    readme = (REPO / "docs" / "production.md").read_text()
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
    readme = (REPO / "docs" / "production.md").read_text()
    assert "docker compose -f docker-compose.cluster.yml up -d" in readme
    assert f"redis+cluster://{','.join(addresses[:3])}/0" in readme


@pytest.mark.cluster
def test_the_cluster_compose_commands_form_a_working_cluster(tmp_path: Path) -> None:
    """The compose file's node command lines, run with the embedded server
    (ports and data directories swapped for free ones, its modules loaded
    as the image loads its own), and its cluster-create script, run with
    redis-cli, form a cluster that redismem uses through the README's URL."""
    data = yaml.safe_load((REPO / "docker-compose.cluster.yml").read_text())
    nodes = {name: s for name, s in data["services"].items() if name.startswith("redis-")}
    binaries = find_binaries()
    ports: dict[str, int] = {}
    procs = []
    try:
        for name, service in nodes.items():
            command = [str(part) for part in service["command"]]
            old = command[command.index("--port") + 1]
            ports[old] = _node_port()
            command[command.index("--port") + 1] = str(ports[old])
            (tmp_path / name).mkdir()
            command[command.index("--dir") + 1] = str(tmp_path / name)
            command[0] = str(binaries.redis_server)
            for module in binaries.modules:
                command += ["--loadmodule", str(module)]
            procs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        script = data["services"]["cluster-create"]["command"][0]
        for old, new in ports.items():
            script = script.replace(f":{old}", f":{new}").replace(f"-p {old}", f"-p {new}")
        for port in ports.values():
            LocalCluster._wait(lambda p=port: _answers(p), f"node {port} to answer")
        subprocess.run(["sh", "-c", script], check=True, capture_output=True, timeout=60)
        LocalCluster._wait(lambda: all(_cluster_ok(p) for p in ports.values()),
                           "cluster_state:ok on every node")
        readme = (REPO / "docs" / "production.md").read_text()
        url = re.search(r"REDISMEM_URL=(redis\+cluster://\S+)", readme)
        assert url is not None
        cluster_url = url[1]
        for old, new in ports.items():
            cluster_url = cluster_url.replace(f":{old}", f":{new}")

        async def use() -> None:
            async with await redismem.connect(cluster_url, namespace="compose") as mem:
                scope = mem.session("s")
                assert (await scope.set("k", 1)).revision == 1
                await scope.set_vector("v", [1.0, 0.0])
                assert [m.key for m in await scope.similarity_search([1.0, 0.1])] == ["v"]

        asyncio.run(use())
        roles = [_role(port) for port in ports.values()]
        assert sorted(roles) == ["master"] * 3 + ["slave"] * 3
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _answers(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=2) as client:
            return bool(client.ping())
    except redis.RedisError:
        return False


def _cluster_ok(port: int) -> bool:
    with redis.Redis(port=port, socket_timeout=2) as client:
        return b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO")


def _role(port: int) -> str:
    with redis.Redis(port=port, socket_timeout=2) as client:
        return str(client.info("replication")["role"])
