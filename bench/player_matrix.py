#!/usr/bin/env python3
"""The player matrix: every player × every failure of the serving node, once each.

Usage (from the repository root, after `cargo build --release` and `cd e2e && npm ci`):

    python3 bench/player_matrix.py                       # every cell, about 20 minutes
    python3 bench/player_matrix.py --cells 'video.js:SIGSTOP,dash.js:drain'

Runs `e2e/tests/player_matrix.test.mjs` with `PLAYER_MATRIX=full` (or the cells named):
an MC with the built-in meeting and nodes a, b, c, each on a host name of its own
(`node-a.localhost`, ...), and hls.js, video.js (VHS), Shaka (HLS and DASH) and dash.js
with their default settings in headless Chromium playing node a while a is killed
(kill -9), hung (SIGSTOP), has its input paused and is drained; then Shaka with the
settings a site should set, hung; and (`e2e/tests/player_rung.test.mjs`, full only) hls.js
on the demo ladder with a picked rung, killed, with and without the pick put back. Writes `bench/player_matrix_results.json` (one object
per cell) and prints the table of docs/ott-redundancy.md#player-matrix. The test's own
verdict per cell (its bound) is printed by node's test runner above the table.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "player_matrix_results.json")


def table(cells: list[dict]) -> str:
    """The Markdown table of the docs: one row per cell."""
    lines = [
        "| player | failure | longest stall ms | clock frozen ms | first backup segment ms | recovered | fatal errors | bound ms |",
        "|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for c in cells:
        player = c["player"] + (" (site settings)" if c.get("config") else "")
        recovered = "yes" if c["onBackupAtEnd"] and c["playingAtEnd"] else f"no (watched {c['watchedMs'] / 1000:.0f} s)"
        backup = c["firstBackupSegmentMs"] if c["firstBackupSegmentMs"] is not None else "-"
        lines.append(
            f"| {player} | {c['failure']} | {c['longestStallMs']} | {c['maxFrozenMs']} | {backup} | {recovered} "
            f"| {len(c['fatalErrors'])} | {c.get('boundMs', '-')} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="full", help="'full' or player:failure,... (default full)")
    parser.add_argument("--out", default=RESULTS, help=f"the JSON file (default {RESULTS})")
    args = parser.parse_args()
    env = dict(os.environ, PLAYER_MATRIX=args.cells, PLAYER_MATRIX_JSON=os.path.abspath(args.out))
    files = ["tests/player_matrix.test.mjs"] + (["tests/player_rung.test.mjs"] if args.cells == "full" else [])
    run = subprocess.run(
        ["node", "--test", "--test-concurrency=1", *files],
        cwd=os.path.join(ROOT, "e2e"),
        env=env,
        check=False,
    )
    if not os.path.exists(args.out):
        print("the matrix wrote no results", file=sys.stderr)
        return 1
    with open(args.out, encoding="utf-8") as f:
        cells = json.load(f)
    print(table(cells))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
