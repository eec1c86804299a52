"""Several OS processes writing one namespace: no lost update, no feed gap."""

from __future__ import annotations

import subprocess
import sys

import redismem
from redismem import keys as K

WORKER = """
import asyncio, sys
import redismem

async def main(url, ns, tasks, each):
    async with await redismem.connect(url, namespace=ns) as mem:
        scope = mem.global_scope()
        async def work():
            for _ in range(each):
                await scope.update("counter", lambda v: (v or 0) + 1, attempts=10_000)
        await asyncio.gather(*(work() for _ in range(tasks)))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


async def test_four_processes_increment_one_key(rmem: redismem.Memory, redis_url: str) -> None:
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, redis_url, rmem.namespace, "4",
                                 "50"]) for _ in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    assert await rmem.global_scope().get("counter") == redismem.MemoryValue(800, 800, True)
    entries = await rmem.client.xrange(K.feed(rmem.namespace))
    assert [entry_id for entry_id, _ in entries] == [f"{n}-0".encode() for n in range(1, 801)]
    assert [int(fields[b"rev"]) for _, fields in entries] == list(range(1, 801))
    assert [int(fields[b"value"]) for _, fields in entries] == list(range(1, 801))
