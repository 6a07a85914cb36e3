#!/usr/bin/env python3
"""What a probe costs a node, next to a viewer's playlist.

Usage (from the repository root):

    cargo build --release
    python3 bench/probe_cost.py               # about 30 s
    python3 bench/probe_cost.py --seconds 10 --connections 16

Starts one node (release build, a `builtin://meeting` stream: no ffmpeg needed), waits
for its playlist, then runs the same wrk command (`wrk -t2 -cN`, keep-alive) against
`/healthz`, `/readyz` and `/m/mono.m3u8` in turn, and prints for each the requests a
second and the node's CPU µs per request (user + system, from /proc). The probes are
never shed up to 500 a second; this says what that exemption costs at most.
"""

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

REPO = os.path.dirname(HERE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "target/release/brdyun"))
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-probe-cost-") as work:
            node = harness.Node(procs, args.binary, work, "probe-cost",
                                [("m", ["builtin://meeting"])], window_s=30, segment_s=1)
            node.wait_segments("m", 2, 60)
            print(f"wrk -t2 -c{args.connections} -d{args.seconds}s, "
                  f"node {args.binary}")
            print(f"{'path':<16} {'req/s':>10} {'CPU us/req':>11} {'p99 ms':>8} {'non-2xx':>8}")
            for path in ["/healthz", "/readyz", "/m/mono.m3u8"]:
                before = harness.process_cpu_s(node.proc.pid)
                _, result = harness.run_wrk(node.port, path, args.connections, args.seconds)
                spent = harness.process_cpu_s(node.proc.pid) - before
                per_request = spent / max(result.requests, 1) * 1e6
                print(f"{path:<16} {result.requests_per_s:>10.0f} {per_request:>11.1f} "
                      f"{result.latency_p99_s * 1e3:>8.2f} {result.non_2xx:>8}")
    finally:
        procs.stop_all()


if __name__ == "__main__":
    try:
        main()
    except harness.BenchError as error:
        print(f"probe_cost: {error}", file=sys.stderr)
        sys.exit(1)
