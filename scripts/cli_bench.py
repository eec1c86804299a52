"""``python scripts/bench.py cli``: the wall time of the ``redismem`` command,
started as a user starts it (the installed console script, a new process
each time), beside the interpreter doing nothing and ``redis-cli``.

Median and slowest of ``n`` runs each, in milliseconds. Targets: help,
version and usage errors ≤ 80 ms; a command that talks to Redis ≤ 150 ms
plus its work (a get of one key is little work).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any


def _wall_ms(command: list[str], n: int, env: dict[str, str]) -> list[float]:
    spans = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, env=env, check=False)
        spans.append((time.perf_counter() - start) * 1000)
    return spans


def bench(url: str, n: int) -> list[dict[str, Any]]:
    exe = shutil.which("redismem")
    if exe is None:
        raise SystemExit("the redismem console script is not installed (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"}
    cases: list[tuple[str, list[str], str]] = [
        ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"], ""),
        ("redismem --help", [exe, "--help"], "≤ 80"),
        ("redismem --version", [exe, "--version"], "≤ 80"),
        ("redismem nosuch (a usage error)", [exe, "nosuch"], "≤ 80"),
        ("redismem set k '{bad' (a usage error)", [exe, "set", "k", "{bad"], "≤ 80"),
        ("redismem vectors search --help", [exe, "vectors", "search", "--help"], "≤ 80"),
        ("redismem get k (one HMGET)", [exe, "get", "k", "--url", url], "≤ 150"),
    ]
    cli = shutil.which("redis-cli")
    if cli:
        cases.insert(1, ("redis-cli -u URL PING", [cli, "-u", url, "PING"], ""))
    rows = []
    for name, command, target in cases:
        _wall_ms(command, 2, env)  # warm the file cache
        spans = _wall_ms(command, n, env)
        rows.append({"command": name, "p50_ms": statistics.median(spans),
                     "max_ms": max(spans), "target_ms": target})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| command | p50 | slowest | target |", "|---|---:|---:|---:|"]
    lines += [f"| {r['command']} | {r['p50_ms']:.0f} ms | {r['max_ms']:.0f} ms | "
              f"{r['target_ms'] and r['target_ms'] + ' ms'} |" for r in rows]
    return "\n".join(lines)
