"""rediss:// end to end: Debian's redis-server (built with TLS; the embedded
binary is not) with a CA, a server certificate and a client certificate
made in the test, client certificates required, and an ACL user."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
import trustme

import redismem
from redismem import acl, users
from redismem.client import open_client
from redismem.server import free_port

BINARY = Path("/usr/bin/redis-server")


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[dict[str, str | int]]:
    assert BINARY.exists(), "Debian's redis-server is needed: apt-get install redis-server"
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    client_cert = ca.issue_cert("redismem-client")
    files = {"ca": tmp_path / "ca.pem", "cert": tmp_path / "server.pem",
             "key": tmp_path / "server.key", "client": tmp_path / "client.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    server_cert.cert_chain_pems[0].write_to_path(str(files["cert"]))
    server_cert.private_key_pem.write_to_path(str(files["key"]))
    client_cert.private_key_and_cert_chain_pem.write_to_path(str(files["client"]))
    port, password = free_port(), uuid.uuid4().hex
    config = tmp_path / "redis.conf"
    config.write_text(f"requirepass {password}\n")
    process = subprocess.Popen(
        [str(BINARY), str(config), "--port", "0", "--tls-port", str(port),
         "--bind", "127.0.0.1", "--tls-cert-file", str(files["cert"]),
         "--tls-key-file", str(files["key"]), "--tls-ca-cert-file", str(files["ca"]),
         "--tls-auth-clients", "yes", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    query = (f"ssl_ca_certs={quote(str(files['ca']))}&ssl_certfile={quote(str(files['client']))}"
             f"&ssl_keyfile={quote(str(files['client']))}")
    url = f"rediss://default:{password}@127.0.0.1:{port}/0?{query}"
    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail(f"{BINARY} did not start with TLS on port {port}")
            time.sleep(0.05)
    yield {"url": url, "port": port, "query": query, "ca": str(files["ca"])}
    process.kill()
    process.wait()


async def test_rediss_with_a_ca_and_client_certificates(tls_server: dict[str, str | int]
                                                        ) -> None:
    url, port = str(tls_server["url"]), int(tls_server["port"])
    # without TLS, or with TLS but without a client certificate: refused
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, socket_timeout=2).ping()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, ssl=True, ssl_ca_certs=str(tls_server["ca"]),
                    socket_timeout=2).ping()
    admin = await open_client(url)
    async with await redismem.connect(url, namespace="tls") as mem:  # loads the library
        assert not mem.capabilities.search  # Debian's 7.0 has no search module
        await mem.session("s").set("k", {"over": "tls"})
        await mem.session("s").set_vector("v", [1.0, 0.0])
        assert [h.key for h in await mem.session("s").similarity_search([1.0, 0.0])] == ["v"]
    await users.add_user(admin, "alice", acl.Role("writer", "tls"), password="alice-pw-01234")
    await admin.aclose()
    alice = f"rediss://alice:alice-pw-01234@127.0.0.1:{port}/0?{tls_server['query']}"
    async with await redismem.connect(alice, namespace="tls") as mem:
        assert mem.principal == "alice"
        assert (await mem.session("s").set("k", 2)).revision == 2
        page = await mem.session("s").changes(after=0)
        assert page.items[-1].principal == "alice"
        with pytest.raises(redismem.PermissionDeniedError):
            await mem.configure(max_value_bytes=4096)
