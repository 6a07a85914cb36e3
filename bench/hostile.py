#!/usr/bin/env python3
"""How many attacking connections a node and an MC hold, and what a viewer sees
meanwhile (docs/security.md).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/hostile.py                 # about 90 s
    python3 bench/hostile.py --seconds 20 --addresses 8

An MC with a started meeting (the built-in source) and a node that delivers it. For
each target (the node, then the MC) the bench measures a client's latency for
`--seconds` without an attack, then for `--seconds` while attackers on `--addresses`
loopback addresses (127.0.1.1 …, one process each, at most `--budget` connections
each) open connections as fast as they can and hold each with a request head that
never ends (slowloris), reopening what the target closes. The
client is the node's viewer (`/m/mono.m3u8`) or a node's sync on the MC (`GET
/api/nodes/sync` with the node token). Prints, per target: the connections the target
holds open during the attack (its `brdyun_http_connections_open`), the attackers'
attempts, what the target refused by each cap, and the client's p50 /
p99 / max latency and failures, before and during the attack. Every loop is bounded
in time; every process is stopped by the PID the harness recorded.
"""

import argparse
import json
import multiprocessing
import os
import resource
import socket
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

REPO = os.path.dirname(HERE)
NODE_TOKEN = "node-token-of-the-hostile-bench"
ADMIN_TOKEN = "admin-token-of-the-hostile-bench"


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def measure(port, path, headers, seconds, interval_s=0.05):
    """A client's latencies (ms) and failures over `seconds`, one request per interval."""
    latencies, failures = [], 0
    end = time.monotonic() + seconds
    head = f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    while time.monotonic() < end:
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(head.encode())
                data = b""
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            ok = data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.0 200")
        except OSError:
            ok = False
        if ok:
            latencies.append((time.monotonic() - started) * 1000)
        else:
            failures += 1
        time.sleep(interval_s)
    return latencies, failures


def attack_from(address, port, seconds, budget, out):
    """One attacker (a process of its own, with its own descriptors): from `address`,
    opens connections to `port` as fast as it can for `seconds`, each holding a request
    head that never ends, at most `budget` at once; reports (attempts, refused at
    connect) on `out` (the target's own counters say what it refused)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held, attempts, refused, opened = [], 0, 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        opened += 1
        if opened % 200 == 0 or len(held) >= budget:
            kept = []
            for sock in held:
                if harness.still_open(sock):
                    kept.append(sock)
                else:
                    sock.close()
            held = kept
            if len(held) >= budget:
                time.sleep(0.05)
                continue
        attempts += 1
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((address, 0))
            sock.settimeout(2)
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /m/mono.m3u8 HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            refused += 1
            time.sleep(0.01)
            continue
        time.sleep(0.001)
        if harness.still_open(sock):
            held.append(sock)
        else:
            sock.close()
            refused += 1
            time.sleep(0.01)
    out.put((attempts, refused))
    for sock in held:
        sock.close()


def connection_metrics(port):
    """What the target says of its connections: open now, and refused so far by each
    cap (`brdyun_http_connections_open`, `brdyun_http_connections_refused_total`)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
    except OSError:
        return None
    found = {}
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("brdyun_http_connections_open "):
            found["open"] = int(float(line.split()[1]))
        elif line.startswith("brdyun_http_connections_refused_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            found[f"refused_{reason}"] = int(float(line.split()[-1]))
    return found


def run_target(name, port, path, headers, metrics_port, args):
    before = measure(port, path, headers, args.seconds)
    out = multiprocessing.Queue()
    attackers = [
        multiprocessing.Process(
            target=attack_from,
            args=(f"127.0.1.{i + 1}", port, args.seconds, args.budget, out))
        for i in range(args.addresses)
    ]
    for attacker in attackers:
        attacker.start()
    ramp = min(3, args.seconds / 4)
    time.sleep(ramp)
    during = measure(port, path, headers, args.seconds - ramp - 1)
    held = connection_metrics(metrics_port)
    counts = [out.get(timeout=60) for _ in attackers]
    for attacker in attackers:
        attacker.join()
    attempts = sum(a for a, _ in counts)

    def summary(result):
        lat, fail = result
        return {"p50_ms": round(percentile(lat, 0.50), 2), "p99_ms": round(percentile(lat, 0.99), 2),
                "max_ms": round(max(lat), 2) if lat else None, "ok": len(lat), "failed": fail}

    return {"target": name, "attack_addresses": args.addresses,
            "target_connections": held,
            "attempts": attempts,
            "client_before": summary(before), "client_during": summary(during)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "release", "brdyun"))
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--addresses", type=int, default=8)
    parser.add_argument("--budget", type=int, default=5000,
                        help="most connections one attacker holds at once")
    parser.add_argument("--output", default=os.path.join(HERE, "hostile_results.json"))
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-hostile-") as work:
            mc_text = "\n".join([
                "[mc]", 'http = "127.0.0.1:0"', f'data_dir = "{work}/mc-data"',
                f'admin_token = "{ADMIN_TOKEN}"', f'node_token = "{NODE_TOKEN}"',
                "[defaults]", "segment_duration = 1",
                "[[meeting]]", 'id = "m"', "start = true", 'inputs = ["builtin://meeting"]', ""])
            _, mc_port = harness.start_role(procs, args.binary, f"{work}/mc", "mc", mc_text, role="mc")
            node_text = "\n".join([
                "[node]", 'name = "n"', 'http = "127.0.0.1:0"', f'data_dir = "{work}/node-data"',
                f'admin_token = "{ADMIN_TOKEN}"',
                "[mc]", f'url = "http://127.0.0.1:{mc_port}"', f'token = "{NODE_TOKEN}"',
                "poll_interval = 0.5", "[mc.stream]", "segment_duration = 1", ""])
            _, node_port = harness.start_role(procs, args.binary, f"{work}/node", "node", node_text)
            harness.wait_until("the node to deliver m",
                               lambda: harness.http_get(node_port, "/m/mono.m3u8")[0] == 200, 40)
            results = [
                run_target("node", node_port, "/m/mono.m3u8", [], node_port, args),
                run_target("mc", mc_port, "/api/nodes/sync?node=bench&viewers=m:1",
                           [("Authorization", f"Bearer {NODE_TOKEN}")], mc_port, args),
            ]
    finally:
        procs.stop_all()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    report = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "fd_hard_limit": hard, "results": results}
    print(json.dumps(report, indent=2))
    with open(args.output, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
