"""A Redis Cluster on loopback for the tests: 3 primaries and 3 replicas of
the embedded server's redis-server with its modules, formed from Python
(CLUSTER ADDSLOTSRANGE, MEET, REPLICATE)."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
from pathlib import Path

import redis

from redismem.server import (
    FREE_PORT_SPAN,
    _port_free,
    ephemeral_ports,
    find_binaries,
    free_port,
)

SLOTS = 16384
BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10000


def _node_port() -> int:
    """A free port for a node whose bus port (+10000) is free too, both below
    the ports free_port() gives the suite's other servers: a node a test
    killed must find its ports free when it starts again, and a client
    retrying the dead node's address must not reach another test's server
    (it met that server's password: a refused login, not an outage)."""
    low, _ = ephemeral_ports()
    top = low - FREE_PORT_SPAN - BUS_OFFSET
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.randrange(1024, top) if top > 2048 else free_port()
        if port + BUS_OFFSET < 65536 and _port_free(port) and _port_free(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free pair of ports for a cluster node")


class LocalCluster:
    def __init__(self, directory: Path, primaries: int = 3, replicas: int = 1,
                 password: str = "cluster-test") -> None:
        self.directory = directory
        self.password = password
        self.primaries, self.replicas = primaries, replicas
        self.ports: list[int] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._args: dict[int, list[str]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports[: self.primaries])
        return f"redis+cluster://default:{self.password}@{hosts}/0"

    def node_url(self, port: int) -> str:
        return f"redis://default:{self.password}@127.0.0.1:{port}/0"

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, password=self.password, socket_timeout=10)

    def start_node(self) -> int:
        port = _node_port()
        data = self.directory / str(port)
        data.mkdir(parents=True)
        binaries = find_binaries()
        args = [str(binaries.redis_server), "--port", str(port), "--bind", "127.0.0.1",
                "--dir", str(data), "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                "--appendonly", "yes", "--save", "", "--requirepass", self.password,
                "--masterauth", self.password, "--logfile", str(data / "redis.log")]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        self._args[port] = args
        self.procs[port] = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        self.ports.append(port)
        self._wait(lambda: self._ping(port), f"node {port} to answer")
        return port

    def _ping(self, port: int) -> bool:
        try:
            with self.client(port) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    @staticmethod
    def _wait(ready: object, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for {what}")
            time.sleep(0.05)

    def start(self) -> LocalCluster:
        for _ in range(self.primaries * (1 + self.replicas)):
            self.start_node()
        clients = [self.client(port) for port in self.ports]
        try:
            for index, client in enumerate(clients[: self.primaries]):
                low = index * SLOTS // self.primaries
                high = (index + 1) * SLOTS // self.primaries - 1
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
            for client in clients[1:]:
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", self.ports[0])
            self._wait(lambda: all(len(c.execute_command("CLUSTER", "NODES").splitlines())
                                   == len(clients) for c in clients), "every node to meet")
            ids = [c.execute_command("CLUSTER", "MYID").decode() for c in clients]
            for index, client in enumerate(clients[self.primaries:]):
                primary = ids[index % self.primaries]
                self._wait(lambda c=client, p=primary: self._replicate(c, p),
                           "a replica to attach")
            self._wait(lambda: all(b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO")
                                   for c in clients), "cluster_state:ok everywhere")
            # a replica that never synced will not stand for election
            self._wait(lambda: all(c.info("replication").get("master_link_status") == "up"
                                   for c in clients[self.primaries:]), "replicas to sync")
        finally:
            for client in clients:
                client.close()
        return self

    def restart_node(self, port: int) -> None:
        """Start a killed node again on its port and data (a killed primary
        comes back as a replica of the one that replaced it)."""
        self.procs[port].wait()
        self.procs[port] = subprocess.Popen(self._args[port], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        self._wait(lambda: self._ping(port), f"node {port} to answer again")

    def kill(self, port: int) -> None:
        """SIGKILL one node and wait until it is gone."""
        self.procs[port].kill()
        self.procs[port].wait()

    def owner_of_slot(self, slot: int) -> int | None:
        """The port of the primary that the live nodes say owns ``slot``."""
        for port in self.ports:
            if self.procs[port].poll() is not None:
                continue
            try:
                with self.client(port) as client:
                    for low, high, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
                        if low <= slot <= high:
                            return int(primary[1])
            except redis.RedisError:
                continue
        return None

    def wait_failover(self, port: int, slot: int, timeout: float = 60.0) -> int:
        """Wait until a live node other than ``port`` owns ``slot`` and says
        it is a primary; returns its port."""
        found: list[int] = []

        def promoted() -> bool:
            owner = self.owner_of_slot(slot)
            if owner is None or owner == port:
                return False
            with self.client(owner) as client:
                if client.info("replication").get("role") != "master":
                    return False
            found.append(owner)
            return True

        self._wait(promoted, f"a replica of {port} to take over slot {slot}", timeout)
        return found[-1]

    def wait_healthy(self, timeout: float = 60.0) -> None:
        """Start any killed node again and wait until every node answers,
        the cluster is ok everywhere and every replica is in sync."""
        for port, proc in self.procs.items():
            if proc.poll() is not None:
                self.restart_node(port)

        def healthy() -> bool:
            maps, roles = set(), {}
            try:
                for port in self.ports:
                    with self.client(port) as client:
                        if b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                            return False
                        info = client.info("replication")
                        if info.get("role") == "slave" and info.get(
                                "master_link_status") != "up":
                            return False
                        roles[port] = info.get("role")
                        maps.add(tuple(sorted(
                            (low, high, int(primary[1])) for low, high, primary, *_
                            in client.execute_command("CLUSTER", "SLOTS"))))
            except redis.RedisError:
                return False
            # every node tells the same slot owners, and each owner is a primary
            return len(maps) == 1 and all(roles[owner] == "master"
                                          for *_, owner in next(iter(maps)))

        self._wait(healthy, "the cluster to be healthy", timeout)

    def node_id(self, port: int) -> str:
        with self.client(port) as client:
            return str(client.execute_command("CLUSTER", "MYID").decode())

    def migrate_slot(self, slot: int, source: int, target: int, batch: int = 50,
                     pause: float = 0.02) -> int:
        """Move ``slot`` from primary ``source`` to primary ``target`` as
        ``redis-cli --cluster reshard`` does (SETSLOT IMPORTING/MIGRATING,
        MIGRATE in batches of ``batch`` keys with ``pause`` seconds between,
        then SETSLOT NODE on every primary); returns the keys moved."""
        source_id, target_id = self.node_id(source), self.node_id(target)
        moved = 0
        with self.client(source) as src, self.client(target) as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
                src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 10_000,
                                    "AUTH2", "default", self.password, "KEYS", *keys)
                moved += len(keys)
                time.sleep(pause)
            dst.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        for port in self.ports[: self.primaries]:
            if port not in (source, target):
                with self.client(port) as client:
                    client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        return moved

    @staticmethod
    def _replicate(client: redis.Redis, primary: str) -> bool:
        try:
            client.execute_command("CLUSTER", "REPLICATE", primary)
        except redis.ResponseError:  # the primary is not known to this node yet
            return False
        return True

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
        for proc in self.procs.values():
            proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)
