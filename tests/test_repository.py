"""The repository itself: what a commit may carry. A landing is refused
whole when it is too big, so no tracked file may be over 1 MB, and Redis
data, generated benchmark data and logs are never tracked."""

from __future__ import annotations

import fnmatch
import subprocess

from .helpers import REPO

LIMIT = 1_000_000
NEVER = ("*.rdb", "*.aof", "*/appendonlydir/*", "appendonlydir/*", "*.npy", "*.npz",
         "*.parquet", "*.log", "*.whl", "dump.rdb", "nodes.conf")


def tracked() -> list[str]:
    """The files git tracks (with what is staged), else every file of the
    tree but git's own and caches (an unpacked sdist)."""
    done = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached"],
                          capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return [name for name in done.stdout.splitlines() if (REPO / name).is_file()]
    skip = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
    return [str(path.relative_to(REPO)) for path in REPO.rglob("*")
            if path.is_file() and not skip & set(path.relative_to(REPO).parts)]


def test_no_tracked_file_is_over_one_megabyte() -> None:
    files = tracked()
    assert "README.md" in files and "pyproject.toml" in files
    big = {name: (REPO / name).stat().st_size for name in files
           if (REPO / name).stat().st_size > LIMIT}
    assert big == {}, f"files over {LIMIT} bytes: {big}"


def test_no_redis_data_benchmark_data_or_log_is_tracked() -> None:
    found = [name for name in tracked() if any(fnmatch.fnmatch(name, p) for p in NEVER)]
    assert found == []


def test_gitignore_covers_what_must_never_be_tracked() -> None:
    ignored = subprocess.run(
        ["git", "-C", str(REPO), "check-ignore", "--no-index", "dump.rdb", "x/appendonly.aof",
         "appendonlydir/a.aof", "vectors.npy", "bench.npz", "data.parquet", "redis.log"],
        capture_output=True, text=True, check=False)
    assert len(ignored.stdout.splitlines()) == 7, ignored.stdout
