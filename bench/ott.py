#!/usr/bin/env python3
"""OTT redundancy benchmarks for brdyun (Python 3 stdlib + wrk + nginx).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/ott.py            # about 3 minutes
    python3 bench/ott.py --quick    # 3 s wrk runs, one round, fewer sessions

What is measured:

1. Master playlist with backups, per request. An origin node ingests the built-in
   meeting; nodes a, b, c pull it and form one OTT group (one mesh domain on loopback).
   Node a's master playlist for a browser User-Agent carries its own variant and two
   backups, each with a freshly signed pass (HMAC-SHA256) chosen per viewer by
   rendezvous hashing over the mesh snapshot. nginx serves a static copy of that
   playlist (same size). `wrk -t2 -c16|-c128 -d10s -H 'User-Agent: Mozilla/5.0 …'` on
   both; req/s, p99, and CPU µs per request (the server's process and its children,
   from /proc), ratio brdyun/nginx; three rounds per connection count, the two
   servers alternating who goes first, and the median ratio of the rounds.
2. Spread (OTT-CAP-1): 5 member nodes (N = 5); for 20,000 distinct viewer sessions
   (`X-Brdyun-Member`) of node a's master playlist, the first backup listed is where
   that viewer goes when a fails. The share each of the 4 survivors receives, against
   1/(N−1) = 25 %. Then the same with N = 3 (nodes a, b, c only).

Every process runs in its own process group and is stopped in a `finally`.
"""

import argparse
import collections
import http.client
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import parse  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36"
SECRET = "bench domain secret, loopback only"


def start_node(procs, binary, workdir, name, text):
    """Starts `brdyun node` with config text; returns (proc, http port)."""
    return harness.start_role(procs, binary, workdir, name, text)


def start_group(procs, binary, workdir, count, extra=""):
    """An origin and `count` OTT member nodes (`extra`: more TOML for each member's
    config); returns (origin port, [(name, proc, port)])."""
    _, origin = start_node(procs, binary, workdir, "origin", (
        f'[node]\nname = "origin"\nhttp = "127.0.0.1:0"\ndata_dir = "{workdir}/origin"\n'
        '[[stream]]\nname = "meeting"\ninputs = ["builtin://meeting"]\n'))
    gossip = [harness.free_port(harness.socket.SOCK_DGRAM) for _ in range(count)]
    members = []
    for i in range(count):
        name = "abcdefgh"[i]
        seeds = ", ".join(f'"127.0.0.1:{p}"' for j, p in enumerate(gossip) if j != i)
        proc, port = start_node(procs, binary, workdir, name, (
            f'[node]\nname = "{name}"\nhttp = "127.0.0.1:0"\ndata_dir = "{workdir}/{name}"\n'
            f'[[stream]]\nname = "meeting"\ninputs = ["http://127.0.0.1:{origin}/meeting/mpegts"]\n'
            'ott_backup = true\n'
            f'[ott]\ndomain_secret = "{SECRET}"\ngossip = "127.0.0.1:{gossip[i]}"\nseeds = [{seeds}]\n{extra}'))
        members.append((name, proc, port))
    return origin, members


def master(port, member=None, conn=None):
    """(status, text) of /meeting/index.m3u8 for a browser, as viewer `member`."""
    headers = {"User-Agent": BROWSER}
    if member:
        headers["X-Brdyun-Member"] = member
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/meeting/index.m3u8", headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        if own:
            conn.close()


def backups_of(text):
    """The backup URLs of a master playlist, in order."""
    return [line for line in text.splitlines() if line.startswith("http")]


def wait_offering(members, want):
    for name, _, port in members:
        harness.wait_until(
            f"node {name} to offer {want} backups",
            lambda port=port: (lambda s: s[0] == 200 and len(backups_of(s[1])) == want)(master(port)),
            60)


def wrk(port, path, connections, seconds):
    argv = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "10s",
            "-H", f"User-Agent: {BROWSER}", f"http://127.0.0.1:{port}{path}"]
    import subprocess
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    if done.returncode != 0:
        raise BenchError(f"wrk failed: {done.stderr[-300:]}")
    return argv, parse.parse_wrk(done.stdout)


def bench_master(procs, binary, workdir, args):
    _, members = start_group(procs, binary, workdir, 3)
    wait_offering(members, 2)
    name, proc, port = members[0]
    status, text = master(port)
    nginx = harness.Nginx(procs, os.path.join(workdir, "nginx"))
    path = nginx.put("index.m3u8", text.encode())
    servers = (("brdyun", proc.pid, port, "/meeting/index.m3u8"),
               ("nginx", nginx.proc.pid, nginx.port, path))
    runs = []
    for connections in (16, 128):
        record = {"connections": connections, "rounds": []}
        for round_number in range(args.rounds):
            # Alternate who goes first, so a drift of the machine over the round
            # (frequency, a neighbour) falls on both servers alike.
            order = servers if round_number % 2 == 0 else servers[::-1]
            measured = {}
            for who, pid, p, url in order:
                before = harness.process_cpu_s(pid)
                argv, result = wrk(p, url, connections, args.seconds)
                cpu = harness.process_cpu_s(pid) - before
                measured[who] = {"command": " ".join(argv), **result.__dict__, "errors": result.errors,
                                 "cpu_us_per_request": cpu * 1e6 / result.requests if result.requests else None}
            measured["ratio"] = measured["brdyun"]["requests_per_s"] / measured["nginx"]["requests_per_s"]
            record["rounds"].append(measured)
        ratios = sorted(r["ratio"] for r in record["rounds"])
        record["ratio_median"] = ratios[len(ratios) // 2]
        record["ratio_range"] = [ratios[0], ratios[-1]]
        runs.append(record)
    after = backups_of(master(port)[1])
    print(f"\n1. master playlist with 2 backups and passes: {len(text)} bytes (nginx: static copy), "
          f"{args.rounds} alternating rounds of {args.seconds} s per server")
    print(f"   {'conns':>5} {'round':>5} {'server':>7} {'req/s':>9} {'p99 ms':>8} {'CPU us/req':>10} {'errors':>6}")
    for r in runs:
        for number, measured in enumerate(r["rounds"], 1):
            for who in ("brdyun", "nginx"):
                x = measured[who]
                print(f"   {r['connections']:>5} {number:>5} {who:>7} {x['requests_per_s']:>9.0f} "
                      f"{x['latency_p99_s']*1e3:>8.2f} {x['cpu_us_per_request'] or 0:>10.1f} {x['errors']:>6}")
            b, n = measured["brdyun"], measured["nginx"]
            print(f"   {r['connections']:>5} {number:>5}   ratio {measured['ratio']:>8.2f}x req/s, "
                  f"{(b['cpu_us_per_request'] or 0)/(n['cpu_us_per_request'] or 1):.2f}x CPU/req")
        low, high = r["ratio_range"]
        print(f"   {r['connections']:>5}  median ratio {r['ratio_median']:.2f}x req/s (rounds {low:.2f}-{high:.2f}x)")
    print(f"   still two backups after the runs: {len(after) == 2}")
    for _, p, _ in members:
        procs.stop(p)
    return {"bytes": len(text), "runs": runs}


def spread(members, sessions):
    """Share of node a's viewers whose first backup is each survivor."""
    _, _, port = members[0]
    counts = collections.Counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    for i in range(sessions):
        status, text = master(port, f"viewer-{i}", conn)
        urls = backups_of(text)
        if status != 200 or not urls:
            raise BenchError(f"viewer {i}: {status}, no backup")
        counts[urls[0].split("/")[2]] += 1
    conn.close()
    return {addr: n / sessions for addr, n in sorted(counts.items())}


def bench_spread(procs, binary, workdir, args):
    results = {}
    for n in (5, 3):
        _, members = start_group(procs, binary, os.path.join(workdir, f"spread{n}"), n)
        wait_offering(members, 2)
        started = time.monotonic()
        shares = spread(members, args.sessions)
        took = time.monotonic() - started
        ideal = 1 / (n - 1)
        worst = max(abs(s - ideal) for s in shares.values())
        print(f"\n2. spread, N = {n}: {args.sessions} viewers of node a ({took:.1f} s); "
              f"ideal share 1/(N-1) = {ideal:.3f}")
        for addr, share in shares.items():
            print(f"   {addr}: {share:.4f}")
        print(f"   largest deviation from ideal: {worst:.4f} ({worst/ideal*100:.1f} % of ideal)")
        results[n] = {"shares": shares, "ideal": ideal, "largest_deviation": worst}
        for _, p, _ in members:
            procs.stop(p)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "release", "brdyun"))
    parser.add_argument("--out", default=os.path.join(HERE, "ott_results.json"))
    parser.add_argument("--rounds", type=int, default=None,
                        help="alternating brdyun/nginx rounds per connection count (default 3, 1 with --quick)")
    args = parser.parse_args(argv)
    args.seconds = 3 if args.quick else 10
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    args.sessions = 4000 if args.quick else 20000
    harness.ensure_tools(need_apt=False)
    procs = harness.Processes()
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-ott-bench-") as workdir:
            results["master"] = bench_master(procs, args.binary, workdir, args)
            results["spread"] = bench_spread(procs, args.binary, workdir, args)
    finally:
        procs.stop_all()
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
