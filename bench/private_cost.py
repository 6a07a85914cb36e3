#!/usr/bin/env python3
"""Instructions a node spends per playlist request of a public and of a private meeting,
counted by callgrind (the connection task `serve_accepted`, inclusive).

    python3 bench/private_cost.py --binary A [--binary B] [--requests 4000]

For each build: an MC (not under valgrind) hosts `open` (public) and `board` (private),
both fed by the built-in source; a node of the build runs under `valgrind
--tool=callgrind`. Once both meetings play, the counters are zeroed, exactly
`--requests` GETs of `/open/mono.m3u8` are sent over 4 keep-alive connections and the
counters dumped; then the same for the private meeting's media playlist with a
viewer's session (the node checks the session and writes it after every URI). Prints
the instructions per request of each. Wall-clock rounds of `bench/private.py` move by
±10 % on a small machine; these counts move by about a hundred.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import request_cost  # noqa: E402
from private import start_meetings, uris  # noqa: E402


def measure(binary, requests):
    """(public, private) instructions per request of `binary`'s node."""
    work = tempfile.mkdtemp(prefix="brdyun-private-cost-")
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps)
    wrapper = os.path.join(work, "node.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind "
                f"--callgrind-out-file={dumps}/out.%p {os.path.abspath(binary)} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    procs = harness.Processes()
    try:
        node, port, master = start_meetings(procs, binary, work, node_binary=wrapper,
                                            wait_s=180)
        variant = uris(master)[0]
        result = []
        for path in ("/open/mono.m3u8", f"/board/{variant}"):
            request_cost.load("127.0.0.1", port, path, 400)
            subprocess.run(["callgrind_control", "-z", str(node.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            request_cost.load("127.0.0.1", port, path, requests)
            before = set(glob.glob(os.path.join(dumps, "out.*")))
            subprocess.run(["callgrind_control", "-d", str(node.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while not set(glob.glob(os.path.join(dumps, "out.*"))) - before:
                if time.monotonic() > deadline:
                    raise SystemExit("no callgrind dump")
                time.sleep(0.2)
            time.sleep(1)
            dump = max(set(glob.glob(os.path.join(dumps, "out.*"))) - before,
                       key=os.path.getmtime)
            result.append(round(request_cost.inclusive(dump, "serve_accepted") / requests))
        return tuple(result)
    finally:
        procs.stop_all()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", action="append", required=True)
    parser.add_argument("--requests", type=int, default=4000)
    args = parser.parse_args()
    results = {}
    for binary in args.binary:
        public, private = measure(binary, args.requests)
        results[binary] = {"public": public, "private": private}
        print(f"{binary}: public playlist {public}, private playlist {private} "
              f"instructions per request")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
