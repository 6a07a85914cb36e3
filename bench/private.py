#!/usr/bin/env python3
"""Private meetings: what authorization costs a node (Python 3 stdlib, wrk).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/private.py            # about 2 minutes
    python3 bench/private.py --quick    # 3-s runs

An MC (on loopback) hosts two meetings fed by the built-in source: `open`, public, and
`board`, private; one node pulls both. A viewer token for `board` comes from the MC's
token API; its session from the node's master playlist. `wrk` then loads, in the same
run, the media playlist and a segment of each meeting: the private ones with the
session (the node verifies it on every request, and writes it into every URI of the
playlist). Prints req/s and CPU µs per request of the node, the ratio private/public,
and writes `bench/private_results.json`. The verification alone is measured by
`cargo run --release -p ott --example session_cost`.
"""

import argparse
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)


def get(port, path):
    """GET on 127.0.0.1:port: (status, body)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return None, b""


def uris(playlist):
    return [l for l in playlist.decode().splitlines() if l and not l.startswith("#")]


def start_meetings(procs, binary, workdir, node_binary=None, wait_s=60):
    """An MC hosting `open` (public) and `board` (private), both fed by the built-in
    source, and one node pulling them, run by `node_binary` (a wrapper, e.g. under
    valgrind) or `binary`: (node, port, board's master playlist for a viewer's token)
    once both meetings play."""
    mc_port = harness.free_port()
    harness.start_role(procs, binary, workdir, "mc", f"""[mc]
trust_loopback = true
http = "127.0.0.1:{mc_port}"
data_dir = "{workdir}/mc"
[defaults]
segment_duration = 2
[[meeting]]
id = "open"
start = true
inputs = ["builtin://meeting"]
[[meeting]]
id = "board"
start = true
private = true
inputs = ["builtin://meeting"]
""", role="mc")
    node, port = harness.start_role(procs, node_binary or binary, workdir, "node", f"""[node]
name = "n"
trust_loopback = true
http = "127.0.0.1:0"
data_dir = "{workdir}/node"
[mc]
url = "http://127.0.0.1:{mc_port}"
poll_interval = 0.5
""")
    request = urllib.request.Request(
        f"http://127.0.0.1:{mc_port}/api/meetings/board/viewer-tokens",
        data=json.dumps({"viewer": "bench", "ttl_seconds": 3600}).encode(),
        headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=5) as r:
        token = json.loads(r.read())["token"]

    def ready():
        status, master = get(port, f"/board/index.m3u8?access_token={token}")
        open_status, open_media = get(port, "/open/mono.m3u8")
        if status != 200 or open_status != 200 or open_media.count(b"#EXTINF") < 3:
            return None
        return master

    master = harness.wait_until("both meetings on the node", ready, wait_s)
    return node, port, master


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seconds = 3 if args.quick else 10
    binary = os.path.join(REPO, "target", "release", "brdyun")
    workdir = tempfile.mkdtemp(prefix="brdyun-private-bench-")
    procs = harness.Processes()
    results = {"seconds": seconds, "runs": []}
    try:
        node, port, master = start_meetings(procs, binary, workdir)
        variant = uris(master)[0]
        _, media = get(port, f"/board/{variant}")
        private_segment = uris(media)[-2]
        _, open_media = get(port, "/open/mono.m3u8")
        open_segment = uris(open_media)[-2]
        cases = (
            ("playlist", "/open/mono.m3u8", f"/board/{variant}"),
            ("segment", f"/open/{open_segment}", f"/board/{private_segment}"),
        )
        print(f"private vs public on one node, wrk -t2 -c16 -d{seconds}s, same run")
        print(f"   {'what':<9} {'meeting':<8} {'req/s':>9} {'p99 ms':>8} {'CPU us/req':>10} {'errors':>6}")
        for what, public, private in cases:
            record = {"what": what}
            for who, path in (("public", public), ("private", private)):
                status, _ = get(port, path)
                if status != 200:
                    raise BenchError(f"{path} answers {status}")
                before = harness.process_cpu_s(node.pid)
                argv, result = harness.run_wrk(port, path, 16, seconds)
                cpu = harness.process_cpu_s(node.pid) - before
                record[who] = {"command": " ".join(argv), **result.__dict__, "errors": result.errors,
                               "cpu_us_per_request": cpu * 1e6 / result.requests if result.requests else None}
                print(f"   {what:<9} {who:<8} {result.requests_per_s:>9.0f} {result.latency_p99_s * 1e3:>8.2f} "
                      f"{record[who]['cpu_us_per_request'] or 0:>10.1f} {result.errors:>6}")
            ratio = record["private"]["requests_per_s"] / record["public"]["requests_per_s"]
            record["ratio"] = ratio
            print(f"   {what:<9} ratio    {ratio:>8.2f}x req/s")
            results["runs"].append(record)
    finally:
        procs.stop_all()
    out = os.path.join(HERE, "private_results.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        sys.exit(1)
