"""What one hand-off to another thread costs on this machine: the CPU of a round trip from an
event loop (uvloop, as the runs loop) to an idle pool thread and back.

A run hands work to other threads about 13 times (database calls, checkpoint batches, hooks)
and wakes the serving thread for its stream's batches; on a VM a thread wake can cost far more
than on bare metal. Each round trip awaits ``run_in_executor`` on a no-op, then sleeps half a
millisecond so the pool thread is idle again, as between a run's hops; the sleeps' own CPU,
measured alone, is subtracted.

    .venv/bin/python benchmarks/thread_hop.py [--trips 2000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import resource

import uvloop


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _measure(trips: int) -> float:
    loop = asyncio.get_running_loop()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        await loop.run_in_executor(pool, int)  # the thread started outside the count
        start = _cpu()
        for _ in range(trips):
            await loop.run_in_executor(pool, int)
            await asyncio.sleep(0.0005)
        hops = _cpu() - start
    start = _cpu()
    for _ in range(trips):
        await asyncio.sleep(0.0005)
    sleeps = _cpu() - start
    return (hops - sleeps) / trips * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    figures = [round(uvloop.run(_measure(args.trips)), 1) for _ in range(args.repeats)]
    print(json.dumps({"cpu_us_per_round_trip": figures, "load": round(os.getloadavg()[0], 1)}))


if __name__ == "__main__":
    main()
