#!/usr/bin/env python3
"""Steered failover under players' default settings, ten runs of each failure.

Usage (from the repository root, after `cargo build --release` and `cd e2e && npm ci`):

    python3 bench/steering.py            # about an hour
    python3 bench/steering.py --runs 3   # fewer runs
    python3 bench/steering.py --players dash   # dash.js and Shaka only
    python3 bench/steering.py --players ll     # hls.js in low-latency mode only

Runs the end-to-end suite's steering tests (`e2e/tests/steering.test.mjs`: an MC, nodes
a, b, c, hls.js with no tuned setting in Chromium playing node a's master playlist)
with `STEERING_RUNS` set, so node a is hung (SIGSTOP), killed (kill -9), has its
input paused and is drained that many times under hls.js, and hung and killed under
dash.js and Shaka playing its MPD. Prints, per failure, the longest stall of every run, the
worst, the buffer the player held and the fatal errors, and writes
`bench/steering_results.json`.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROW = re.compile(
    r"steering (?P<label>[^:#\\]+?)(?: \\?#\d+)?: longest stall (?P<stall>\d+) ms, video clock frozen at most "
    r"(?P<frozen>\d+) ms.*?(?:buffer (?P<at>at|not at) a segment's end at the failure, .*?)?steered off a after (?P<steered>[\d-]+) ms, buffer (?P<buffer>[\d.]+) s at the "
    r"failure, fatal errors (?P<fatal>\d+)"
)


def summarise(text: str) -> dict[str, list[dict]]:
    """Every run's row printed by the tests, by failure."""
    rows: dict[str, list[dict]] = {}
    for line in text.splitlines():
        m = ROW.search(line)
        if m:
            rows.setdefault(m["label"].strip(), []).append({
                "stall_ms": int(m["stall"]), "frozen_ms": int(m["frozen"]),
                "steered_ms": None if m["steered"] == "-" else int(m["steered"]),
                "buffer_s": float(m["buffer"]), "fatal_errors": int(m["fatal"]),
                **({"buffer_at_segment_end": m["at"] == "at"} if m["at"] else {}),
                # A fragment or part request the hang held: hls.js's timeout, not the mesh.
                "held_by_hang": "held by the hang" in line,
            })
    return rows


def print_table(rows: dict[str, list[dict]]) -> None:
    """The table of docs/measured.md: per failure, worst and median stall."""
    print(f"{'failure':<18} {'runs':>4} {'worst stall ms':>15} {'median ms':>10} {'steered ms (median)':>20} {'fatal':>6}"
          f" {'at a segment end (worst stall ms)':>34}")
    for label, runs in rows.items():
        stalls = [r["stall_ms"] for r in runs]
        steered = [r["steered_ms"] for r in runs if r["steered_ms"] is not None]
        # Low-latency runs: how many failures found the buffer at a segment's end, and
        # their worst stall (the hls.js pathway-switch loop, docs/timeline.md).
        at_end = [r["stall_ms"] for r in runs if r.get("buffer_at_segment_end")]
        ends = f"{len(at_end)} ({max(at_end)})" if at_end else "-"
        print(f"{label:<18} {len(runs):>4} {max(stalls):>15} {statistics.median(stalls):>10.0f} "
              f"{(statistics.median(steered) if steered else float('nan')):>20.0f} {sum(r['fatal_errors'] for r in runs):>6}"
              f" {ends:>34}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--players", choices=("all", "hls", "dash", "ll"), default="all",
                        help="hls: hls.js only; dash: dash.js and Shaka only; ll: hls.js low-latency only")
    parser.add_argument("--from-output", metavar="FILE",
                        help="summarise the output of an earlier run instead of running")
    args = parser.parse_args()
    if args.from_output:
        with open(args.from_output, encoding="utf-8") as f:
            print_table(summarise(f.read()))
        return 0
    env = dict(os.environ, STEERING_RUNS=str(args.runs))
    hls = "(hls.js defaults: (a hung node|kill -9|a node drained))"
    dash = "((dash.js|Shaka) defaults: a hung)"
    ll = "hls.js defaults, low latency"
    pattern = {"all": f"{hls}|{dash}|{ll}", "hls": hls, "dash": dash, "ll": ll}[args.players]
    command = ["node", "--test", "--test-name-pattern", pattern, "tests/steering.test.mjs"]
    done = subprocess.run(command, cwd=os.path.join(ROOT, "e2e"), env=env,
                          capture_output=True, text=True, timeout=5400, check=False)
    suffix = "" if args.players == "all" else f"_{args.players}"
    raw = os.path.join(HERE, f"steering{suffix}_output.txt")
    with open(raw, "w", encoding="utf-8") as f:
        f.write(done.stdout + done.stderr)
    rows = summarise(done.stdout + done.stderr)
    print_table(rows)
    out = os.path.join(HERE, f"steering{suffix}_results.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"command": " ".join(command), "runs_per_failure": args.runs, "results": rows,
                   "test_exit_code": done.returncode}, f, indent=1)
    print(f"wrote {out}")
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
