#!/usr/bin/env python3
"""Interleaved A/B of two brdyun binaries on one delivery path (Python 3 stdlib only).

    python3 bench/ab.py OLD_BINARY NEW_BINARY [--runs 3] [--path /m/mono.m3u8] [--seconds 5]
        [--connections 16] [--old-config TOML] [--new-config TOML]

Each run starts a node of each binary in turn with the same `builtin://meeting` stream,
waits for its playlist, drives `wrk -t2` (16 connections unless told) at the path, and
reads the node's CPU time over the run (`--old-config`/`--new-config` append TOML to
each node's config, so one binary can be compared with itself under two
configurations). Alternating the binaries run by run puts both under the same machine
conditions, which a single bench/run.py per binary does not: on a shared VM, nginx
itself moves by 20 % between runs. Prints req/s and CPU µs per request per run and
the medians. Every process is stopped by the harness, error or not; only 127.0.0.1.
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def one_run(binary, path, seconds, connections, extra):
    procs = harness.Processes()
    try:
        tmp = tempfile.mkdtemp(prefix="brdyun-ab-")
        node = harness.Node(
            procs, binary, tmp, "ab", [("m", ["builtin://meeting"])], 60, 2, extra=extra
        )
        harness.wait_until(
            "the playlist",
            lambda: harness.http_get(node.port, "/m/mono.m3u8")[0] == 200 or None,
            30,
        )
        cpu_before = harness.process_cpu_s(node.proc.pid)
        _, result = harness.run_wrk(node.port, path, connections, seconds)
        cpu_after = harness.process_cpu_s(node.proc.pid)
        return result.requests_per_s, (cpu_after - cpu_before) * 1e6 / max(result.requests, 1)
    finally:
        procs.stop_all()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--path", default="/m/mono.m3u8")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--old-config", default="")
    parser.add_argument("--new-config", default="")
    args = parser.parse_args()
    extra = {"old": args.old_config.replace("\\n", "\n"), "new": args.new_config.replace("\\n", "\n")}
    figures = {"old": [], "new": []}
    for i in range(args.runs):
        for tag, binary in (("old", args.old), ("new", args.new)):
            rps, us = one_run(binary, args.path, args.seconds, args.connections, extra[tag])
            figures[tag].append((rps, us))
            print(f"run {i + 1} {tag}: {rps:,.0f} req/s, {us:.2f} CPU µs/request", flush=True)
    for tag in ("old", "new"):
        rps = statistics.median(f[0] for f in figures[tag])
        us = statistics.median(f[1] for f in figures[tag])
        print(f"median {tag}: {rps:,.0f} req/s, {us:.2f} CPU µs/request")


if __name__ == "__main__":
    main()
