#!/usr/bin/env python3
"""Instructions a node spends per request, counted by callgrind: an A/B of builds.

    python3 bench/request_cost.py --binary A --binary B [--requests 20000] [--path /api/node]

Starts each build's node (no streams: nothing runs beside the requests) under
`valgrind --tool=callgrind`, zeroes the counters once it listens and has answered a
warm-up, sends exactly `--requests` GETs of `--path` over 4 keep-alive HTTP/1.1
connections, dumps the counters, and prints the instructions per request (every thread
of the process, the requests' whole path: accept, hyper, the node's layers, the
answer). Run each build twice or more: the count moves by a few dozen instructions
between runs.
"""

import argparse
import http.client
import json
import os
import re
import subprocess
import tempfile
import threading
import time


def start(binary, work):
    config = os.path.join(work, "node.toml")
    with open(config, "w") as f:
        f.write('[node]\nname = "cost"\nhttp = "127.0.0.1:0"\n'
                'data_dir = "%s"\ntrust_loopback = true\n' % os.path.join(work, "data"))
    out = os.path.join(work, "callgrind.out")
    node = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
         binary, "node", "--config", config],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, RUST_LOG="warn"))
    deadline = time.monotonic() + 120
    for line in node.stdout:
        if line.startswith("listening "):
            addr = re.search(r"http=(\S+)", line).group(1)
            host, port = addr.rsplit(":", 1)
            threading.Thread(target=lambda: [None for _ in node.stdout], daemon=True).start()
            return node, host, int(port), out
        if time.monotonic() > deadline:
            break
    node.kill()
    raise SystemExit("the node did not start")


def load(host, port, path, requests, connections=4):
    def run(count):
        conn = http.client.HTTPConnection(host, port, timeout=60)
        for _ in range(count):
            conn.request("GET", path, headers={"User-Agent": "Mozilla/5.0 bench"})
            answer = conn.getresponse()
            answer.read()
            if answer.status >= 500:
                raise SystemExit("answer %d" % answer.status)
        conn.close()
    threads = [threading.Thread(target=run, args=(requests // connections,))
               for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(binary, requests, path):
    with tempfile.TemporaryDirectory() as work:
        node, host, port, out = start(binary, work)
        try:
            load(host, port, path, 400)  # warm-up: connections, allocator, caches
            time.sleep(1)
            subprocess.run(["callgrind_control", "-z", str(node.pid)], check=True,
                           stdout=subprocess.DEVNULL)
            load(host, port, path, requests)
            subprocess.run(["callgrind_control", "-d", str(node.pid)], check=True,
                           stdout=subprocess.DEVNULL)
            time.sleep(1)
            dumps = [n for n in os.listdir(work) if n.startswith("callgrind.out.")]
            if not dumps:
                raise SystemExit("no callgrind dump")
            latest = max(dumps, key=lambda n: os.path.getmtime(os.path.join(work, n)))
            with open(os.path.join(work, latest)) as f:
                ir = next(int(l.split()[1]) for l in f if l.startswith(("totals:", "summary:")))
        finally:
            node.terminate()
            node.wait(timeout=60)
    return ir / requests


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", action="append", required=True)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--path", default="/api/node")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = {b: [] for b in args.binary}
    for _ in range(args.rounds):
        for binary in args.binary:
            results[binary].append(round(measure(binary, args.requests, args.path)))
    print(json.dumps({"path": args.path, "requests": args.requests,
                      "instructions_per_request": results}))


if __name__ == "__main__":
    main()
