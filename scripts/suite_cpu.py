#!/usr/bin/env python3
"""Where a command's CPU went, by kind of process: `make test`'s Chromium, live stacks, pip...

    sudo scripts/suite_cpu.py -- make test

Runs the command with the kernel's process accounting on (acct(2), root only), which writes a
record with each process's CPU time as it exits, however short it lived, and samples the
command lines of the processes alive every 0.2 s to name them (a record holds only a 16-letter
name). Then it prints the CPU per kind: Chromium by process type, the processes forked by the
suite's zygote (tests/support/zygote.py), ``python -m <module>``, ``manage.py <command>``, the
rest by name. Everything on the machine is counted while it runs, not only the command's own.
The sampler itself costs a few per cent of a core.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

RECORD = 64  # struct acct_v3
CHROMIUM_THREADS = ("chromium", "ThreadPool", "HangWatcher", "Perfetto", "Chrome_", "Compositor", "VizCompositor")


def _comp(value: int) -> int:
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent, in ticks of 1/100 s."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_records(path: str) -> list[dict]:
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for offset in range(0, len(data) - RECORD + 1, RECORD):
        raw = data[offset:offset + RECORD]
        if raw[1] != 3:
            raise SystemExit(f"{path}: not version 3 accounting records")
        pid, ppid = struct.unpack_from("<II", raw, 16)
        utime, stime = struct.unpack_from("<HH", raw, 32)
        out.append({"pid": pid, "ppid": ppid, "comm": raw[48:64].split(b"\0")[0].decode(errors="replace"),
                    "cpu": (_comp(utime) + _comp(stime)) / 100})
    return out


def sample_command_lines(names: dict[int, str], stop: threading.Event) -> None:
    while not stop.is_set():
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in names:
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        names[int(entry)] = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    pass
        stop.wait(0.2)


def kind(record: dict, command: str) -> str:
    if "chromium" in command or record["comm"].startswith(CHROMIUM_THREADS):
        match = re.search(r"--type=(\S+)", command)
        return f"chromium {match.group(1) if match else 'browser'}"
    if "tests.support.zygote" in command:
        return "forked by the suite's zygote (live stacks)"
    if match := re.search(r"manage\.py (\S+)", command):
        return f"manage.py {match.group(1)}"
    if match := re.search(r"python\S* (?:-\S+ )*-m (\S+)", command):
        return f"python -m {match.group(1)}"
    if "exec(eval(sys.stdin.readline()))" in command:
        return "pytest-xdist worker"
    return record["comm"] or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    libc = ctypes.CDLL(None, use_errno=True)
    fd, path = tempfile.mkstemp(prefix="suite-cpu-", suffix=".acct")
    os.close(fd)
    if libc.acct(path.encode()) != 0:
        raise SystemExit(f"acct(2) failed: {os.strerror(ctypes.get_errno())} (needs root)")
    names: dict[int, str] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_command_lines, args=(names, stop), daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        code = subprocess.call(command)
    finally:
        libc.acct(None)
        stop.set()
        sampler.join()
    wall = time.monotonic() - started
    records = read_records(path)
    os.unlink(path)
    total: dict[str, float] = collections.Counter()
    count: dict[str, int] = collections.Counter()
    for record in records:
        name = kind(record, names.get(record["pid"], ""))
        total[name] += record["cpu"]
        count[name] += 1
    print(f"{sum(total.values()):.0f} s of CPU in {len(records)} processes over {wall:.0f} s; the command exited {code}")
    for name, seconds in sorted(total.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{seconds:9.1f} s {count[name]:6d}  {name}")
    sys.exit(code)


if __name__ == "__main__":
    main()
