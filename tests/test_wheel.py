"""The Lua files ship inside the wheel: build it, install it into a directory
of its own and load the library from the installed copy (in a venv or not)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .helpers import REPO

CHECK = """
import asyncio, sys
import redismem
from redismem import library

async def main(url, target):
    here = library.lua_dir()
    assert str(here).startswith(target), here
    assert redismem.__file__.startswith(target), redismem.__file__
    async with await redismem.connect(url, namespace="wheel") as mem:
        result = await library.ensure_library(mem.client, force=True)
        print(result.action, result.version, mem.capabilities.library_version)
        await mem.global_scope().set("k", 1)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def test_wheel_ships_and_loads_lua(tmp_path: Path, redis_url: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path / "dist"), str(REPO)], check=True, timeout=300)
    [wheel] = (tmp_path / "dist").glob("redismem-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    lua_files = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "lua").rglob("*.lua"))
    assert sorted(n.removeprefix("redismem/") for n in names if n.endswith(".lua")) == lua_files
    assert "redismem/py.typed" in names
    # installed into a directory of its own, run by this same interpreter: its
    # dependencies come from this environment (a venv or not), with no network
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", CHECK, redis_url, str(target)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                          env=env)
    assert done.returncode == 0, done.stderr
    action, version, in_use = done.stdout.split()
    assert action == "replaced" and version == in_use
