"""The first connection: a server that refuses it is tried again, said once
(one line on the command line's stderr), within a documented bound
(``connect_timeout=``, ``REDISMEM_CONNECT_TIMEOUT``, ``--connect-timeout``).
A refused login is final: tests/test_cli.py."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import pytest

import redismem
from redismem.client import connecting

from .helpers import BareRedis
from .test_cli import run_script


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


def test_the_command_line_says_once_that_it_retries_and_stops_at_the_bound() -> None:
    port = _closed_port()
    url = f"redis://someone:not-to-be-printed@127.0.0.1:{port}/0"
    done = run_script("--connect-timeout", "1", "get", "k", url=url)
    assert done.returncode == 5 and done.stdout == ""  # 5: no server answered
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(f"retrying 127.0.0.1:{port} for up to 1 s (Error 111")
    assert lines[1].startswith(f"Error: UnavailableError: the server at 127.0.0.1:{port} did "
                               "not answer within 1 s")
    assert "REDISMEM_CONNECT_TIMEOUT or --connect-timeout" in lines[1]
    once = run_script("get", "k", url=url, env={"REDISMEM_CONNECT_TIMEOUT": "0"})
    assert once.returncode == 5 and once.stderr.count("\n") == 1
    assert "did not answer within 0 s" in once.stderr
    for output in (done.stderr, once.stderr):
        assert "not-to-be-printed" not in output
    bad = run_script("get", "k", url=url, env={"REDISMEM_CONNECT_TIMEOUT": "soon"})
    assert bad.returncode == 1 and "REDISMEM_CONNECT_TIMEOUT must be a number of seconds " \
                                   "from 0, got 'soon'" in bad.stderr
    usage = run_script("--connect-timeout", "-1", "get", "k", url=url)
    assert usage.returncode == 2 and "--connect-timeout" in usage.stderr


class _Seen(logging.Handler):
    """Sets an asyncio event when the retry is said."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.loop, self.event, self.messages = loop, asyncio.Event(), []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.loop.call_soon_threadsafe(self.event.set)


async def test_connect_waits_for_a_server_that_comes_up(tmp_path: Path) -> None:
    server = BareRedis(tmp_path, "--save", "")
    seen = _Seen(asyncio.get_running_loop())
    connecting.addHandler(seen)
    try:
        task = asyncio.create_task(redismem.connect(server.url, namespace="late",
                                                    connect_timeout=120))
        await asyncio.wait_for(seen.event.wait(), 60)  # it was refused, and said so
        assert not task.done()
        await asyncio.to_thread(server.start)
        async with await asyncio.wait_for(task, 120) as mem:
            assert (await mem.global_scope().set("k", 1)).revision == 1
        assert len(seen.messages) == 1
        assert seen.messages[0].startswith(f"retrying 127.0.0.1:{server.port} for up to 120 s")
    finally:
        connecting.removeHandler(seen)
        server.stop()


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "3", True])
async def test_a_bad_connect_timeout_is_refused(bad: object) -> None:
    with pytest.raises(redismem.InvalidArgumentError, match="connect_timeout must be"):
        await redismem.connect("redis://127.0.0.1:1/0", connect_timeout=bad)  # type: ignore[arg-type]
