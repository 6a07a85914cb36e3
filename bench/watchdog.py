#!/usr/bin/env python3
"""A hung node under the watchdog (WatchdogSec=2): ten hangs per player.

Usage (from the repository root, after `cargo build --release` and
`cargo build --release --example notify_supervisor`, and `cd e2e && npm ci`):

    python3 bench/watchdog.py                  # about 30 minutes
    python3 bench/watchdog.py --runs 3         # fewer hangs
    python3 bench/watchdog.py --players dash,shaka
    python3 bench/watchdog.py --from-output bench/watchdog_output.txt

Runs `e2e/tests/watchdog.test.mjs` with `WATCHDOG_RUNS` set: an MC, nodes a, b, c each
under the notify supervisor (`examples/notify_supervisor.rs`, what systemd does for a
`Type=notify` unit with `WatchdogSec=2`, `Restart=always`, `RestartSec=0`), a player
with its default settings (hls.js, hls.js in low-latency mode, dash.js, Shaka) playing
node a, and a hung (SIGSTOP) at a moment drawn uniformly over the 2-s segment cycle.
Prints per player the worst and median stall, and the median and worst times from the
hang to the kill, to the restart and to a serving the meeting again; writes
`bench/watchdog_results.json` (every hang's figures) and the raw output beside it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PLAYERS = {"hls": "hls.js", "hls-ll": "hls.js low latency", "dash": "dash.js", "shaka": "Shaka"}


def summarise(text: str) -> dict[str, list[dict]]:
    """Every hang's figures printed by the test (`watchdog-run {json}`), by player."""
    runs: dict[str, list[dict]] = {}
    for line in text.splitlines():
        at = line.find("watchdog-run {")
        if at >= 0:
            found = line[at + len("watchdog-run "):]
            try:
                run = json.loads(found)
            except json.JSONDecodeError:
                # The test runner escapes backslashes in what a test prints.
                run = json.loads(found.replace("\\\\", "\\"))
            runs.setdefault(run["player"], []).append(run)
    return runs


def print_table(runs: dict[str, list[dict]]) -> None:
    """The table of docs/measured.md."""
    print(f"{'player':<20} {'hangs':>5} {'worst stall ms':>15} {'median stall ms':>16} "
          f"{'kill ms (median/worst)':>23} {'restart ms':>12} {'serving ms':>12} {'fatal':>6}")
    for player, rows in runs.items():
        stall = [max(r["stall_ms"], r["frozen_ms"]) for r in rows]

        def pair(key: str) -> str:
            values = [r[key] for r in rows]
            return f"{statistics.median(values):.0f}/{max(values)}"

        print(f"{PLAYERS.get(player, player):<20} {len(rows):>5} {max(stall):>15} {statistics.median(stall):>16.0f} "
              f"{pair('hang_to_kill_ms'):>23} {pair('hang_to_restart_ms'):>12} {pair('hang_to_serving_ms'):>12} "
              f"{sum(r['fatal_errors'] for r in rows):>6}")


def write_results(runs: dict[str, list[dict]], command: str, exit_code: int, per_player: int) -> None:
    """`bench/watchdog_results.json`: every hang's figures, by player."""
    out = os.path.join(HERE, "watchdog_results.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"command": command, "watchdog_sec": 2, "runs_per_player": per_player, "results": runs,
                   "test_exit_code": exit_code}, f, indent=1)
    print(f"wrote {out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--players", default=",".join(PLAYERS),
                        help=f"comma-separated, of {', '.join(PLAYERS)}")
    parser.add_argument("--from-output", metavar="FILE", help="summarise an earlier run's output instead of running")
    args = parser.parse_args()
    if args.from_output:
        with open(args.from_output, encoding="utf-8") as f:
            output = f.read()
        runs = summarise(output)
        print_table(runs)
        write_results(runs, f"WATCHDOG_RUNS={args.runs} (from {args.from_output})",
                      1 if "\nnot ok " in output else 0, args.runs)
        return 0
    players = [p for p in args.players.split(",") if p]
    unknown = [p for p in players if p not in PLAYERS]
    if unknown:
        parser.error(f"unknown players {unknown}")
    # The test names start with the player's name; "hls.js defaults" is not a prefix of
    # "hls.js low latency defaults".
    pattern = "|".join(f"^{PLAYERS[p]} defaults:" for p in players).replace(".", "\\.")
    # A stalling hang's requests are printed too (WATCHDOG_TRACE), to see what it waited on.
    env = dict(os.environ, WATCHDOG_RUNS=str(args.runs), WATCHDOG_TRACE="1")
    command = ["node", "--test", "--test-name-pattern", pattern, "tests/watchdog.test.mjs"]
    done = subprocess.run(command, cwd=os.path.join(ROOT, "e2e"), env=env,
                          capture_output=True, text=True, timeout=7200, check=False)
    output = done.stdout + done.stderr
    with open(os.path.join(HERE, "watchdog_output.txt"), "w", encoding="utf-8") as f:
        f.write(output)
    runs = summarise(output)
    print_table(runs)
    write_results(runs, f"WATCHDOG_RUNS={args.runs} " + " ".join(command), done.returncode, args.runs)
    if done.returncode != 0:
        failed = [line for line in output.splitlines() if "watchdog-failure" in line or line.startswith("not ok")]
        print("\n".join(failed), file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
