"""One fault run: a server, client and watcher processes, a nemesis, then
the final reads and every checker.

The nemesis is this process. On a seeded schedule it injects, in turn:
``client-kill`` (``CLIENT KILL TYPE normal``: every client connection
dropped, calls in flight included), ``pause`` (SIGSTOP of the server for
longer than the clients' socket timeout, then SIGCONT), ``server-kill``
(SIGKILL, then a restart on the same data directory and port; the feed and
threads are read right after, for the durability check),
``process-kill`` (SIGKILL of a client process mid-work; a new one takes
its place) and ``lost-reply`` (clients reach the server through a proxy,
tests/faults/proxy.py, which for a moment lets the server run each library
call and then drops the connection instead of the reply). The server runs
with ``appendfsync always``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

import redismem
from redismem import keys as K
from redismem.errors import ServerStartError
from redismem.server import EmbeddedServer, free_port

from . import checks
from .broken import installed
from .history import UNKNOWN, Op, load
from .proxy import ThreadedProxy
from .workload import THREADS

REPO = Path(__file__).resolve().parents[2]
FAULTS = ("client-kill", "pause", "server-kill", "process-kill", "lost-reply")
LOSING_SECONDS = 0.3
NAMESPACE = "faults"
SOCKET_TIMEOUT = 0.5
PAUSES = (1.5, 6.0)
"""Seconds a pause lasts: longer than SOCKET_TIMEOUT, so calls in flight
time out and are sent again (redismem.retries.RETRIES)."""


@dataclass
class Config:
    seed: int
    seconds: float
    processes: int = 3
    tasks: int = 2
    watchers: int = 2
    faults: tuple[str, ...] = FAULTS
    interval: float = 2.0
    """Mean seconds between faults."""
    patch: str = ""
    """A broken library to run instead (tests/faults/broken.py)."""
    workdir: Path = field(default_factory=lambda: Path("faults-run"))


@dataclass
class Report:
    config: Config
    ops: list[Op]
    faults: Counter[str]
    unknown_by_fault: Counter[str]
    events: int
    problems: dict[str, list[str]]
    seconds: float
    lost_replies: int
    """Replies the proxy swallowed (each call then retried)."""
    port_waits: int
    """Restarts that found the server's port held (restarts.log says by what)."""

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    def summary(self) -> str:
        outcomes = Counter(op.outcome for op in self.ops)
        calls = Counter(op.f for op in self.ops)
        lines = [
            f"seed {self.config.seed}: {len(self.ops)} calls in {self.config.seconds:.0f} s "
            f"({len(self.ops) / self.config.seconds:.0f}/s) by {self.config.processes} "
            f"processes x {self.config.tasks} tasks, {self.events} change events",
            "calls: " + ", ".join(f"{name} {n}" for name, n in sorted(calls.items())),
            "outcomes: " + ", ".join(f"{name} {n}" for name, n in sorted(outcomes.items())),
            "faults: " + ", ".join(f"{name} {self.faults[name]}" for name in FAULTS
                                  if name in self.config.faults)
            + f"; {self.lost_replies} replies lost; {self.port_waits} restarts found the port "
            "held",
            "unknown outcomes after: " + ", ".join(
                f"{name} {self.unknown_by_fault[name]}" for name in (*FAULTS, "none")
                if self.unknown_by_fault[name]),
        ]
        for checker, found in self.problems.items():
            verdict = "ok" if not found else f"FAILED ({len(found)})"
            lines.append(f"{checker}: {verdict}")
            lines += [f"  {problem}" for problem in found[:10]]
        return "\n".join(lines)


class Fleet:
    """The client and watcher processes."""

    def __init__(self, config: Config, url: str) -> None:
        self.config, self.url = config, url
        self.clients: dict[str, subprocess.Popen[bytes]] = {}
        self.watchers: dict[str, subprocess.Popen[bytes]] = {}
        self.started = 0

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        with (self.config.workdir / f"{args[3]}.log").open("ab") as log:
            return subprocess.Popen([sys.executable, "-m", "tests.faults.workload", *args],
                                    cwd=REPO, stdout=log, stderr=log)

    def start_client(self) -> None:
        name = f"p{self.started}"
        self.started += 1
        out = self.config.workdir / f"{name}.jsonl"
        self.clients[name] = self._spawn(
            "client", self.url, NAMESPACE, name, str(out), str(self.config.seed * 1000 +
                                                               self.started),
            "--tasks", str(self.config.tasks), *(["--patch", self.config.patch]
                                                 if self.config.patch else []))

    def start_watcher(self, index: int) -> None:
        name = f"w{index}"
        out = self.config.workdir / f"{name}.jsonl"
        self.watchers[name] = self._spawn("watcher", self.url, NAMESPACE, name, str(out),
                                          *(["0", "--patch", self.config.patch]
                                            if self.config.patch else []))

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Until every process started so far has connected (each touches a
        ``.ready`` file): on a loaded machine starting Python takes seconds,
        which must not eat into the run's time."""
        wanted = [f"{name}-t{i}.ready" for name in self.clients
                  for i in range(self.config.tasks)] + [f"{name}.ready" for name in self.watchers]
        deadline = time.monotonic() + timeout
        while not all((self.config.workdir / name).exists() for name in wanted):
            if time.monotonic() > deadline:
                missing = [n for n in wanted if not (self.config.workdir / n).exists()]
                raise TimeoutError(f"not connected within {timeout} s: {missing}")
            time.sleep(0.05)

    def stop(self) -> None:
        for name in (*self.clients, *self.watchers):
            (self.config.workdir / f"{name}.stop").touch()
        deadline = time.monotonic() + 30
        for proc in (*self.clients.values(), *self.watchers.values()):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Nemesis:
    def __init__(self, config: Config, server: EmbeddedServer, fleet: Fleet,
                 proxy: ThreadedProxy) -> None:
        self.config, self.server, self.fleet, self.proxy = config, server, fleet, proxy
        self.rng = random.Random(config.seed)
        self.log: list[tuple[int, str]] = []
        self.kills: list[dict[str, Any]] = []
        self.port_waits = 0

    def _client(self) -> redis.Redis:
        state = self.server.state()
        assert state is not None
        return redis.Redis(port=state.port, password=state.password, socket_timeout=5)

    def inject(self, fault: str) -> None:
        self.log.append((time.monotonic_ns(), fault))
        state = self.server.state()
        assert state is not None
        if fault == "client-kill":
            with self._client() as client:
                client.client_kill_filter(_type="normal", skipme=True)
        elif fault == "pause":
            os.kill(state.pid, signal.SIGSTOP)
            time.sleep(self.rng.choice(PAUSES))
            os.kill(state.pid, signal.SIGCONT)
        elif fault == "server-kill":
            at = time.monotonic_ns()
            self.server.kill()
            self._restart()
            self.kills.append({"at": at, **self._read_back()})
        elif fault == "process-kill":
            name = self.rng.choice(sorted(self.fleet.clients))
            proc = self.fleet.clients.pop(name)
            proc.kill()
            proc.wait()
            self.fleet.start_client()
        elif fault == "lost-reply":
            self.proxy.lose_for(LOSING_SECONDS)

    def _restart(self) -> None:
        """Start the server again on its port; while something still holds
        the port, note what (ss) and try again, for up to a minute."""
        deadline = time.monotonic() + 60
        while True:
            if not _bindable(self.server.port):
                self._note_port_holders()
            try:
                self.server.start()
                return
            except ServerStartError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def _note_port_holders(self) -> None:
        port = self.server.port
        try:
            held = subprocess.run(["ss", "-tanp", f"( sport = :{port} )"],
                                  capture_output=True, text=True, check=False).stdout
        except FileNotFoundError:
            held = "(no ss on this machine)"
        with (self.config.workdir / "restarts.log").open("a") as log:
            log.write(f"{time.monotonic_ns()} port {port} held:\n{held}\n")
        self.port_waits += 1

    def _read_back(self) -> dict[str, Any]:
        """The feed's (key, revision) pairs and the thread event ids, as the
        restarted server has them."""
        with self._client() as client:
            pairs = []
            for _, fields in client.xrange(K.feed(NAMESPACE)):
                f = {k.decode(): v.decode() for k, v in fields.items()}
                kind = "vector" if f["kind"] == "vector" else "value"
                pairs.append(((kind, f"{f['scope']}:{f['sid']}", f["key"]), int(f["rev"])))
            threads = [json.loads(body[b"e"])["id"] for thread in THREADS
                       for _, body in client.xrange(K.thread_events(NAMESPACE, thread))]
        return {"feed": pairs, "threads": threads}

    def run(self, until: float) -> None:
        order: list[str] = []
        while True:
            wait = self.config.interval * (0.5 + self.rng.random())
            if time.monotonic() + wait >= until:
                time.sleep(max(0.0, until - time.monotonic()))
                return
            time.sleep(wait)
            if not self.config.faults:
                continue
            if not order:
                order = list(self.config.faults)
                self.rng.shuffle(order)
            self.inject(order.pop())


def _bindable(port: int | None) -> bool:
    """Whether redis-server could listen on ``port`` now (it uses SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port or 0))
        except OSError:
            return False
        return True


def _event(e: redismem.MemoryChangeEvent) -> dict[str, Any]:
    def text(x: Any) -> str:
        return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    value = None if e.value_omitted or e.action == "delete" or e.kind == "vector" else \
        text(e.value)
    delta = None if e.delta_omitted or e.action not in ("incr", "append", "merge") else \
        text(e.delta)
    return {"seq": e.sequence, "scope": e.scope, "sid": e.scope_id, "key": e.key,
            "kind": e.kind, "action": e.action, "rev": e.revision, "by": e.principal,
            "value": value, "delta": delta}


@dataclass
class FinalReads:
    events: list[dict[str, Any]]  # the whole feed, by pages
    paged: dict[int, list[dict[str, Any]]]  # pages from random cursors to the end
    watched: dict[int, list[dict[str, Any]]]  # watch from a random cursor to the last event
    threads: dict[str, list[str]]  # each thread's event ids, in order


async def final_reads(url: str, rng: random.Random) -> FinalReads:
    """The whole feed, reads resumed from random cursors (by page and by
    watch), and the thread events."""
    async with await redismem.connect(url, namespace=NAMESPACE, principal="checker") as mem:
        async def page_from(cursor: int) -> list[dict[str, Any]]:
            out, after = [], cursor
            while True:
                page = await mem.changes(after=after, limit=1000)
                out += [_event(e) for e in page.items]
                if not page.items:
                    return out
                after = page.next_cursor

        events = await page_from(0)
        last = events[-1]["seq"] if events else 0
        paged = {cursor: await page_from(cursor)
                 for cursor in sorted({rng.randrange(last + 1) for _ in range(4)} | {last})}
        cursor = rng.randrange(last) if last else 0
        watched: list[dict[str, Any]] = []
        if cursor < last:
            async for event in mem.watch("*", after=cursor, interval=0.05):
                watched.append(_event(event))
                if event.sequence >= last:
                    break
        threads = {}
        for thread in THREADS:
            stream = await mem.client.xrange(K.thread_events(NAMESPACE, thread))
            threads[thread] = [json.loads(body[b"e"])["id"] for _, body in stream]
    return FinalReads(events, paged, {cursor: watched}, threads)


def _watcher_logs(config: Config, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    logs = {}
    for name in names:
        path = config.workdir / f"{name}.jsonl"
        lines = [json.loads(t) for t in path.read_text().splitlines() if t.endswith("}")]
        logs[name] = [line for line in lines if "seq" in line]
    return logs


def _unknown_by_fault(ops: list[Op], log: list[tuple[int, str]]) -> Counter[str]:
    """Each unknown outcome by its fault: a call never completed was cut by
    its process's kill; one given up, by the last fault before that."""
    out: Counter[str] = Counter()
    for op in ops:
        if op.outcome != UNKNOWN:
            continue
        if op.gave_up is None:
            out["process-kill"] += 1
            continue
        before = [fault for at, fault in log if at <= op.gave_up]
        out[before[-1] if before else "none"] += 1
    return out


def run(config: Config) -> Report:
    started = time.monotonic()
    shutil.rmtree(config.workdir, ignore_errors=True)
    config.workdir.mkdir(parents=True)
    server = EmbeddedServer(config.workdir / "data", appendfsync="always", port=free_port())
    state = server.start()
    proxy = ThreadedProxy(state.port)
    direct = f":{state.port}/"
    url = (state.url.replace(direct, f":{proxy.port}/")
           + f"?socket_timeout={SOCKET_TIMEOUT}&socket_connect_timeout={SOCKET_TIMEOUT}")
    fleet = Fleet(config, url)
    nemesis = Nemesis(config, server, fleet, proxy)
    try:
        for _ in range(config.processes):
            fleet.start_client()
        for index in range(config.watchers):
            fleet.start_watcher(index)
        fleet.wait_ready()
        nemesis.run(time.monotonic() + config.seconds)
        fleet.stop()
        rng = random.Random(config.seed)
        with installed(config.patch):
            final = asyncio.run(final_reads(state.url, rng))
    finally:
        fleet.stop()
        proxy.close()
        server.stop()
    ops = load(sorted(config.workdir.glob("p*-t*.jsonl")))
    events = final.events
    problems = {
        "linearizable": checks.linearizable_keys(ops),
        "feed": checks.feed(ops, events),
        "watchers": checks.watchers(_watcher_logs(config, sorted(fleet.watchers)), events),
        "resumed": checks.resumed(final.paged, events) + checks.resumed(final.watched, events),
        "durable": checks.durable(ops, nemesis.kills),
        "threads": checks.threads(ops, final.threads),
    }
    faults = Counter(fault for _, fault in nemesis.log)
    return Report(config, ops, faults, _unknown_by_fault(ops, nemesis.log), len(events),
                  problems, time.monotonic() - started, proxy.proxy.lost, nemesis.port_waits)

