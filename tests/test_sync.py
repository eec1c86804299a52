"""The synchronous facade (``redismem.sync``): the same API without
``await``, tested by running the README's first program through it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import redismem
import redismem.sync

from .helpers import REPO


def readme_program() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## A first program"):]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found
    return found.group(1)


def as_sync(program: str) -> str:
    """The README's program with the sync facade: no async, no await."""
    out = program.replace("async with await redismem.connect()", "with redismem.sync.connect()")
    out = out.replace("async def main()", "def main()").replace("asyncio.run(main())", "main()")
    out = out.replace("import redismem\n", "import redismem\nimport redismem.sync\n")
    out = out.replace("await ", "")
    assert "await" not in out and "async " not in out, out
    return out


def test_the_readme_program_runs_without_await(redis_url: str, tmp_path: Path) -> None:
    script = tmp_path / "first_sync.py"
    script.write_text(as_sync(readme_program()))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env={**os.environ, "REDISMEM_URL": redis_url}, cwd=tmp_path,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "MemoryValue(value=['pack passports', 'visa', 'check visa'], revision=" in (
        done.stdout)


def test_every_kind_of_call_works_without_await(redis_url: str, ns: str) -> None:
    with redismem.sync.connect(redis_url, namespace=ns, principal="tester") as mem:
        notes = mem.session("s-1")
        written = notes.set("notes", ["a"], ttl_seconds=60)
        assert notes.get("notes") == written == redismem.MemoryValue(["a"], 1, True)
        with pytest.raises(redismem.ConflictError):
            notes.set("notes", ["b"], expected_revision=0)
        assert notes.update("notes", lambda v: [*v, "b"]).value == ["a", "b"]
        assert notes.incr("hits").value == 1
        assert notes.keys().keys == ["hits", "notes"]
        with notes.turn() as turn:
            assert turn.token == 4  # its acquire is the feed's event 4
            notes.append("log", "in the turn")
        # a turn's token goes with this connection's later writes: once the
        # turn lapsed and another worker took it, they are refused
        lapsing = notes.acquire_turn(ttl_seconds=0.2)
        with redismem.sync.connect(redis_url, namespace=ns, principal="other") as other:
            taken = other.session("s-1").acquire_turn(wait_seconds=30)
            assert taken.token == lapsing.token + 2  # after the expire event
            with pytest.raises(redismem.StaleTurnError):
                notes.set("notes", "stale")
            taken.release()
        assert lapsing.release() is False
        with redismem.session_scope("s-1"):
            assert mem.default().get("hits").value == 1  # this thread's session scope
        events = []
        for event in mem.watch("*", after=0):
            events.append(event.key)
            if len(events) == 5:
                break
        assert events[:2] == ["notes", "notes"]
        seen: list[int] = []
        workers = [threading.Thread(target=lambda: seen.append(notes.incr("hits").revision))
                   for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert sorted(seen) == [2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="closed"):
        notes.get("notes")


def test_the_store_without_await(redis_url: str, ns: str) -> None:
    with redismem.sync.RedisMemoryStore(redis_url, namespace=ns) as store:
        store.put_state("t1", "step", {"n": 1})
        assert store.get_state("t1", "step") == {"n": 1}
