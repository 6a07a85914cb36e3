#!/usr/bin/env python3
"""The meeting API on etcd vs the JSON file: latency and creates per second (Python 3
stdlib; Debian's etcd-server).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/mc_store.py            # about a minute
    python3 bench/mc_store.py --quick    # fewer operations

For each store — the embedded `meetings.json` of a lone MC, and a 3-member etcd
cluster on loopback shared by an MC pair — one MC takes, over keep-alive HTTP on
127.0.0.1: a sequence of creates, then a lock of each meeting (p50/p99 of each), then
as many creates as 4 clients can make in 5 s (creates/s). With etcd the second MC of
the pair runs and watches every change. Writes `bench/mc_store_results.json`.
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)
TOKEN = "bench-admin-token-0123456789"


def start_etcd(procs, workdir, size=3):
    """A `size`-member etcd cluster on loopback; returns its client URLs."""
    ports = [(harness.free_port(), harness.free_port()) for _ in range(size)]
    initial = ",".join(f"e{i}=http://127.0.0.1:{peer}" for i, (_, peer) in enumerate(ports))
    urls = []
    for i, (client, peer) in enumerate(ports):
        url = f"http://127.0.0.1:{client}"
        urls.append(url)
        procs.start(["etcd", f"--name=e{i}", f"--data-dir={workdir}/e{i}",
                     f"--listen-client-urls={url}", f"--advertise-client-urls={url}",
                     f"--listen-peer-urls=http://127.0.0.1:{peer}",
                     f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                     f"--initial-cluster={initial}", "--initial-cluster-state=new"],
                    os.path.join(workdir, f"etcd{i}.log"))

    def ready():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", int(urls[0].rsplit(":", 1)[1]), timeout=2)
            conn.request("POST", "/v3/kv/put", body=json.dumps({"key": "cmVhZHk=", "value": "MQ=="}))
            return conn.getresponse().status == 200
        except OSError:
            return False

    harness.wait_until("etcd to take a write", ready, 30)
    return urls


def mc_config(name, data_dir, etcd):
    text = (f'[mc]\nname = "{name}"\nhttp = "127.0.0.1:0"\ndata_dir = "{data_dir}"\nadmin_token = "{TOKEN}"\n'
            'node_token = "bench-node-token-0123456789"\n')
    if etcd:
        text += "etcd = [" + ", ".join(f'"{u}"' for u in etcd) + "]\n"
    return text


class Client:
    """Keep-alive HTTP to one MC."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def post(self, path, body=None):
        data = json.dumps(body) if body is not None else ""
        started = time.perf_counter()
        self.conn.request("POST", path, body=data,
                          headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        response = self.conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def measure(port, count, prefix):
    client = Client(port)
    creates, locks = [], []
    for i in range(count):
        status, took = client.post("/api/meetings", {"id": f"{prefix}{i}"})
        if status != 201:
            raise BenchError(f"create answered {status}")
        creates.append(took)
    for i in range(count):
        status, took = client.post(f"/api/meetings/{prefix}{i}/lock")
        if status != 200:
            raise BenchError(f"lock answered {status}")
        locks.append(took)
    made = [0] * 4
    stop = time.monotonic() + 5

    def creator(k):
        c = Client(port)
        n = 0
        while time.monotonic() < stop:
            status, _ = c.post("/api/meetings", {"id": f"{prefix}t{k}x{n}"})
            if status != 201:
                raise BenchError(f"create answered {status}")
            n += 1
        made[k] = n

    threads = [threading.Thread(target=creator, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ms = lambda v: round(v * 1000, 2)  # noqa: E731
    return {
        "create_ms": {"p50": ms(statistics.median(creates)), "p99": ms(percentile(creates, 99))},
        "lock_ms": {"p50": ms(statistics.median(locks)), "p99": ms(percentile(locks, 99))},
        "creates_per_s": round(sum(made) / 5, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    count = 50 if args.quick else 300
    binary = os.path.join(REPO, "target", "release", "brdyun")
    if not os.path.exists(binary):
        raise BenchError("build first: cargo build --release")
    workdir = tempfile.mkdtemp(prefix="brdyun-mc-store-bench-")
    procs = harness.Processes()
    results = {"operations": count}
    try:
        _, port = harness.start_role(procs, binary, workdir, "mc-file",
                                     mc_config("mc-file", f"{workdir}/file", None), role="mc")
        results["json_file"] = measure(port, count, "f")
        etcd = start_etcd(procs, workdir)
        _, port = harness.start_role(procs, binary, workdir, "mc1",
                                     mc_config("mc1", f"{workdir}/mc1", etcd), role="mc")
        harness.start_role(procs, binary, workdir, "mc2",
                           mc_config("mc2", f"{workdir}/mc2", etcd), role="mc")
        results["etcd_3_members"] = measure(port, count, "e")
    finally:
        procs.stop_all()
    print(f"{'store':<16}{'create p50/p99 ms':>20}{'lock p50/p99 ms':>20}{'creates/s':>12}")
    for name in ("json_file", "etcd_3_members"):
        r = results[name]
        print(f"{name:<16}{r['create_ms']['p50']:>10}/{r['create_ms']['p99']:<9}"
              f"{r['lock_ms']['p50']:>10}/{r['lock_ms']['p99']:<9}{r['creates_per_s']:>12}")
    with open(os.path.join(HERE, "mc_store_results.json"), "w", encoding="utf-8") as out:
        json.dump(results, out, indent=2)
        out.write("\n")


if __name__ == "__main__":
    main()
