"""scripts/examples: the reference documents' examples run as scripts against
the embedded default (no REDISMEM_URL: the first starts the embedded server
in a scratch directory, the others attach to it)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redismem.server import EmbeddedServer

from .helpers import REPO

EXAMPLES = REPO / "scripts" / "examples"
EXPECTED = {
    "sessions.py": ["memory revision 3 notes ['pack passports', 'book airport transfer', "
                    "'check visa rules']", "{'deleted': True}", "'actor_turns': 3"],
    "memory_lab_vectors.py": ["{'matches': [{'key': 'blue', 'score': 1.0, 'metadata': "
                              "{'colour': 'blue'}, 'revision': 1}]}",
                              "filtered to red: [('red', 0.0)]",
                              "zero vector refused: invalid_vector"],
    "memory_lab_listener.py": ["{'accepted': True", "delivered in ",
                               "{'events': [{'key': 'memory-lab.signal', 'action': 'set'"],
    "multi_turn_thread.py": ["(following up on: 'What are generators?')", ": 4 events",
                             "checkpoints: ['done', 'done']"],
    "compaction.py": ["Removed 1500 events, kept 500", "20 traces kept, newest message 1999"],
    "long_term_memory.py": ["preferences: ['User prefers dark theme and Python examples']",
                            "0.99: python generators yield values lazily",
                            "text search: ['python generators yield values lazily']"],
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("examples")
    yield where
    EmbeddedServer(where / "data").stop()


def test_every_example_has_a_test() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_on_the_embedded_default(name: str, scratch: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"}
    env["REDISMEM_DATA_DIR"] = str(scratch / "data")
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for line in EXPECTED[name]:
        assert line in done.stdout, (line, done.stdout)
    assert (scratch / "data" / "server.json").exists()  # the embedded server ran
