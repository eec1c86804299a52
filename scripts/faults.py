"""The long fault run: client processes doing a mixed workload while a
nemesis drops connections and replies, pauses and kills the server and
kills clients; then every checker (tests/faults/checks.py) over the whole
history.

    python scripts/faults.py --minutes 10 --processes 4

Prints the call and fault counts, calls per second, unknown outcomes per
fault kind and each checker's verdict; exits 1 when a checker fails,
keeping the run's directory (histories, watcher logs, server data).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.faults.run import FAULTS, Config, run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=4, help="client processes")
    parser.add_argument("--tasks", type=int, default=2, help="sequential clients per process")
    parser.add_argument("--watchers", type=int, default=2)
    parser.add_argument("--interval", type=float, default=3.0,
                        help="mean seconds between faults")
    parser.add_argument("--faults", default=",".join(FAULTS),
                        help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--seed", type=int, default=None, help="default: the clock")
    parser.add_argument("--workdir", type=Path, default=REPO / "faults-run")
    parser.add_argument("--keep", action="store_true", help="keep the run's directory")
    args = parser.parse_args()
    faults = tuple(f for f in args.faults.split(",") if f)
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    seed = args.seed if args.seed is not None else time.time_ns() % 1_000_000_007
    config = Config(seed=seed, seconds=args.minutes * 60, processes=args.processes,
                    tasks=args.tasks, watchers=args.watchers, faults=faults,
                    interval=args.interval, workdir=args.workdir)
    print(f"fault run: seed {seed}, {args.minutes:g} min, {args.processes} processes x "
          f"{args.tasks} tasks, faults every ~{args.interval:g} s: {', '.join(faults)}",
          flush=True)
    report = run(config)
    print(report.summary())
    print(f"wall time {report.seconds:.0f} s (checks included)")
    if not report.ok:
        print(f"FAILED: history kept in {args.workdir}; replay with --seed {seed}")
        return 1
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
