"""A bounded, seeded fault run in the test suite, and the same harness on
deliberately broken libraries (which it must catch). The long run is
``python scripts/faults.py``.

Replay a failed run with ``REDISMEM_FAULT_SEED=<seed> python3 -m pytest -q
tests/faults`` (the nemesis' schedule and every client's choices follow
the seed; the interleaving, being real, does not)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .run import FAULTS, Config, run

SEED = int(os.environ.get("REDISMEM_FAULT_SEED", "20261130"))


@pytest.mark.faults
@pytest.mark.timeout(150)
def test_every_guarantee_holds_while_connections_clients_and_the_server_fail(
        tmp_path: Path) -> None:
    report = run(Config(seed=SEED, seconds=20, interval=0.8, workdir=tmp_path / "run"))
    print(report.summary())
    assert report.ok, (f"REDISMEM_FAULT_SEED={SEED}; history kept in {tmp_path / 'run'}\n"
                       + report.summary())
    assert all(report.faults[fault] >= 2 for fault in FAULTS), report.summary()
    assert report.events > 1000 and len(report.ops) > 5000, report.summary()


@pytest.mark.faults
@pytest.mark.parametrize(("patch", "faults", "checkers"), [
    ("cas", (), ("linearizable",)),
    ("feed", (), ("feed",)),
    ("retry", ("lost-reply",), ("linearizable", "feed")),
])
def test_the_checkers_catch_a_broken_library(patch: str, faults: tuple[str, ...],
                                             checkers: tuple[str, ...], tmp_path: Path) -> None:
    """A compare-and-set that does not compare, a write that appends no
    change event, writes that ignore their request id (so a call sent again
    after its reply was lost applies twice): each loaded into a throwaway
    server, each caught."""
    report = run(Config(seed=SEED, seconds=5, faults=faults, interval=0.6, patch=patch,
                        workdir=tmp_path / "run"))
    for checker in checkers:
        assert report.problems[checker], report.summary()
