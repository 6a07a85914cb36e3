#!/usr/bin/env python3
"""Instructions a node spends per request, counted by callgrind: an A/B of builds.

    python3 bench/request_cost.py --binary A --binary B [--requests 20000] [--path /api/node]
    python3 bench/request_cost.py --binary A --binary B --stream s --path /s/index.m3u8 \
        --function serve_accepted

Starts each build's node (no streams: nothing runs beside the requests) under
`valgrind --tool=callgrind`, zeroes the counters once it listens and has answered a
warm-up, sends exactly `--requests` GETs of `--path` over 4 keep-alive HTTP/1.1
connections, dumps the counters, and prints the instructions per request (every thread
of the process, the requests' whole path: accept, hyper, the node's layers, the
answer). Run each build twice or more: the count moves by a few dozen instructions
between runs.

`--stream NAME` gives the node one stream fed by the built-in source (for playlist and
segment routes: the path is asked until it answers 200 before the warm-up). Its
pipeline then runs beside the requests, so count a function's inclusive instructions
instead of the process's (`--function serve_accepted`: the connection task, every
request's whole path on the node, read with `callgrind_annotate --inclusive=yes`).
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


def start(binary, work, stream=None):
    config = os.path.join(work, "node.toml")
    with open(config, "w") as f:
        f.write('[node]\nname = "cost"\nhttp = "127.0.0.1:0"\n'
                'data_dir = "%s"\ntrust_loopback = true\n' % os.path.join(work, "data"))
        if stream:
            f.write('\n[[stream]]\nname = "%s"\ninputs = ["builtin://%s"]\n' % (stream, stream))
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


def wait_ok(host, port, path, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(host, port, timeout=10)
            conn.request("GET", path)
            answer = conn.getresponse()
            answer.read()
            conn.close()
            if answer.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("%s never answered 200" % path)


def inclusive(dump, function):
    """The inclusive instructions of the first function whose name contains `function`."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                          check=True, capture_output=True, text=True).stdout
    for line in text.splitlines():
        if function in line:
            return int(line.split()[0].replace(",", ""))
    raise SystemExit("%s not in the profile" % function)


def measure(binary, requests, path, stream=None, function=None):
    with tempfile.TemporaryDirectory() as work:
        node, host, port, out = start(binary, work, stream)
        try:
            if stream:
                wait_ok(host, port, path)
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
            if function:
                ir = inclusive(os.path.join(work, latest), function)
            else:
                with open(os.path.join(work, latest)) as f:
                    ir = next(int(l.split()[1]) for l in f
                              if l.startswith(("totals:", "summary:")))
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
    parser.add_argument("--stream", help="a stream fed by the built-in source")
    parser.add_argument("--function", help="count this function's inclusive instructions")
    args = parser.parse_args()
    results = {b: [] for b in args.binary}
    for _ in range(args.rounds):
        for binary in args.binary:
            ir = measure(binary, args.requests, args.path, args.stream, args.function)
            results[binary].append(round(ir))
    print(json.dumps({"path": args.path, "requests": args.requests,
                      "function": args.function, "instructions_per_request": results}))


if __name__ == "__main__":
    main()
