"""Server CPU per plain run, this checkout against another build, measured in pairs.

On a shared VM the speed of a core swings by a third from one minute to the next, so two
builds benchmarked one after the other differ by more than most changes do. Here both run at
once, each as one `make run` server (SQLite, runs in the process) pinned to a core of its own,
and the client measures them in turn, in short phases (``--runs`` runs, ``--concurrency`` at a
time), always from the core of the server that is resting. Each phase's server CPU per run comes
from ``/proc``; the script prints both builds' medians and the median of the phase-by-phase
ratios, which is the figure to read. ``--swap`` gives each build the other core, for a second
pass.

    .venv/bin/python benchmarks/paired_cpu.py --base-rev HEAD~3 [--phases 12] [--runs 300]

``--base-rev`` checks the revision out in a temporary git worktree (removed at the end);
``--base DIR`` uses a checkout you have (``--base .`` is this one). ``--base-config-extra YAML``
appends config to the base server's file only, to weigh a feature by switching it off there:

    .venv/bin/python benchmarks/paired_cpu.py --base . --base-config-extra "loop_detection: {enabled: false}"
 Both run on this checkout's virtualenv, so compare
builds with the same requirements.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_support import INSTANT_CONFIG, instant_server_env, process_cpu_seconds, start_make_run_stack  # noqa: E402
from benchmarks.run_latency import one_run  # noqa: E402


def start_server(checkout: Path, cpu: int, extra_config: str = ""):
    """One server of ``checkout`` as `make run` starts it, on ``cpu`` only."""
    home = Path(tempfile.mkdtemp(prefix="deerflow-paired-"))
    return start_make_run_stack(home, config_text=INSTANT_CONFIG + extra_config, extra_env={**instant_server_env(), "CPU_PINNING": "false"},
                                processes="1", checkout=checkout, cpu=cpu)


async def measure(args: argparse.Namespace, base: Path) -> dict:
    cpus = {"base": 1, "this": 0} if args.swap else {"base": 0, "this": 1}
    extra = args.base_config_extra.replace("\\n", "\n").rstrip("\n") + "\n" if args.base_config_extra else ""
    servers = {"base": start_server(base, cpus["base"], extra), "this": start_server(ROOT, cpus["this"])}
    clients: dict[str, httpx.AsyncClient] = {}
    per_run: dict[str, list[float]] = {"base": [], "this": []}
    try:
        for name, server in servers.items():
            token = server.create_user_token("bench")
            clients[name] = httpx.AsyncClient(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=120)
            for _ in range(30):  # imports, the first graph build, SQLite's caches
                await one_run(clients[name])
        for phase in range(args.phases):
            for name in ("base", "this") if phase % 2 == 0 else ("this", "base"):
                resting = "this" if name == "base" else "base"
                os.sched_setaffinity(0, {cpus[resting]})
                gate = asyncio.Semaphore(args.concurrency)

                async def gated(client: httpx.AsyncClient = clients[name]) -> dict:
                    async with gate:
                        return await one_run(client)

                pids = servers[name].server_pids  # type: ignore[attr-defined]
                before = process_cpu_seconds(pids)
                results = await asyncio.gather(*(gated() for _ in range(args.runs)))
                errors = [r for r in results if "error" in r]
                if errors:
                    raise RuntimeError(f"{name}: {len(errors)} runs failed, e.g. {errors[0]}")
                per_run[name].append((process_cpu_seconds(pids) - before) * 1000 / args.runs)
    finally:
        for client in clients.values():
            await client.aclose()
        for server in servers.values():
            server.stop()
    ratios = [this / base for base, this in zip(per_run["base"], per_run["this"], strict=True)]
    return {
        "phases": args.phases, "runs_per_phase": args.runs, "concurrency": args.concurrency, "cpus": cpus,
        "base_cpu_ms_per_run_median": round(statistics.median(per_run["base"]), 2),
        "this_cpu_ms_per_run_median": round(statistics.median(per_run["this"]), 2),
        "ratio_this_to_base_median": round(statistics.median(ratios), 3),
        "ratio_each_phase": [round(r, 3) for r in ratios],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--base-rev", help="a git revision of this repository to compare against")
    where.add_argument("--base", type=Path, help="a checkout to compare against")
    parser.add_argument("--base-config-extra", default="", help="YAML appended to the base server's config.yaml only")
    parser.add_argument("--phases", type=int, default=12)
    parser.add_argument("--runs", type=int, default=300, help="runs per phase")
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--swap", action="store_true", help="this checkout on CPU 0 and the base on CPU 1 (default the other way)")
    args = parser.parse_args()
    if min(args.phases, args.runs, args.concurrency) < 1:
        parser.error("--phases, --runs and --concurrency must be at least 1")
    if len(os.sched_getaffinity(0)) < 2:
        parser.error("needs two CPUs: one for each build")
    if args.base is not None and not (args.base / "manage.py").is_file():
        parser.error(f"--base {args.base}: not a checkout of this project (no manage.py there)")
    worktree = None
    if args.base_rev:
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.base_rev}^{{commit}}"], cwd=ROOT,
                               capture_output=True)
        if known.returncode != 0:
            parser.error(f"--base-rev {args.base_rev}: no such commit in this repository")
        worktree = Path(tempfile.mkdtemp(prefix="deerflow-base-")) / "checkout"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.base_rev], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    try:
        print(json.dumps(asyncio.run(measure(args, worktree or args.base.resolve())), indent=2))
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
            shutil.rmtree(worktree.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
