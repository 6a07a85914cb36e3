#!/usr/bin/env python3
"""The HTTP stack's floor under the master playlist benchmark.

Usage (from the repository root):

    cargo build --release && cargo build -p server --release --example hyper_floor
    python3 bench/http_floor.py            # about a minute
    python3 bench/http_floor.py --seconds 10
    python3 bench/http_floor.py --spin 3000,5000   # and the axum floor spinning 3 and 5 µs
    python3 bench/http_floor.py --against /tmp/brdyun-before   # and another build, A/B
    python3 bench/http_floor.py --against-config '[shedding]\npriority_lane = "off"'

Serves one master playlist four ways, measured in the same run with the same wrk
command (`wrk -t2 -c16|-c128`, a browser User-Agent): brdyun node a making it per viewer
(two backups with passes, as `bench/ott.py`), `hyper_floor` (hyper's HTTP/1.1 on tokio
answering every request with the same bytes: no routing, shedding or per-viewer work),
`hyper_floor` on the node's serving threads with an axum router (`FLOOR_SERVER=1`)
and nginx serving a static copy. Prints req/s and CPU µs per request split into user
and system time (from /proc, the server and its children) and involuntary context
switches per request (preemptions), so the cost of the stack brdyun is built on is told
from the cost of what brdyun does on it. `--spin` adds the axum floor spending that many
more ns of CPU on every answer: how system time follows user time when the server shares
the cores with wrk. `--against` adds a second group of the same three nodes run by
another brdyun binary (an earlier build), measured in the same rounds: an A/B of a
change to the request path. `--against-config` adds TOML to that group's node configs
(with the same binary unless `--against` names another): an A/B of a setting.
"""

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import ott  # noqa: E402

REPO = os.path.dirname(HERE)


def preemptions(root_pid):
    """Involuntary context switches of a process's threads and its direct children's."""
    total = 0
    for pid in harness.process_family(root_pid):
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/status", encoding="utf-8") as f:
                    total += sum(int(line.split()[1]) for line in f
                                 if line.startswith("nonvoluntary_ctxt_switches"))
            except OSError:
                continue
    return total


def answers(port):
    """Whether a server answers `GET /` on 127.0.0.1:port with 200."""
    try:
        return harness.http_get(port, "/")[0] == 200
    except OSError:
        return False


def measure(pid, port, path, connections, seconds):
    """One wrk run: req/s and user/system CPU µs per request of `pid`."""
    before, switched = harness.process_cpu_split(pid), preemptions(pid)
    _, result = ott.wrk(port, path, connections, seconds)
    after, switched = harness.process_cpu_split(pid), preemptions(pid) - switched
    n = max(result.requests, 1)
    return {"requests_per_s": result.requests_per_s, "errors": result.errors,
            "user_us": (after[0] - before[0]) * 1e6 / n, "system_us": (after[1] - before[1]) * 1e6 / n,
            "preemptions": switched / n}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "release", "brdyun"))
    parser.add_argument("--floor", default=os.path.join(REPO, "target", "release", "examples", "hyper_floor"))
    parser.add_argument("--spin", default="", help="comma-separated ns of extra CPU per answer for more axum floors")
    parser.add_argument("--against", default=None, help="another brdyun binary, measured as a second group")
    parser.add_argument("--against-config", default=None,
                        help="TOML added to the second group's node configs (\\n for newlines)")
    args = parser.parse_args()
    harness.ensure_tools(need_apt=False)
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-http-floor-") as workdir:
            _, members = ott.start_group(procs, args.binary, workdir, 3)
            ott.wait_offering(members, 2)
            _, node, node_port = members[0]
            _, text = ott.master(node_port)
            others = []
            if args.against or args.against_config:
                other_dir = os.path.join(workdir, "against")
                os.makedirs(other_dir)
                extra = (args.against_config or "").replace("\\n", "\n") + "\n"
                _, other_members = ott.start_group(procs, args.against or args.binary, other_dir, 3, extra)
                ott.wait_offering(other_members, 2)
                _, other, other_port = other_members[0]
                others.append(("brdyun (--against)", other.pid, other_port, "/meeting/index.m3u8"))
            body = os.path.join(workdir, "index.m3u8")
            with open(body, "w", encoding="utf-8") as f:
                f.write(text)
            spins = [int(ns) for ns in args.spin.split(",") if ns.strip()]
            floors = []
            for env in ({}, {"FLOOR_SERVER": "1"}, *({"FLOOR_SERVER": "1", "FLOOR_SPIN_NS": str(ns)} for ns in spins)):
                port = harness.free_port()
                proc = procs.start([args.floor, f"127.0.0.1:{port}", body],
                                   os.path.join(workdir, "floor.log"), env=dict(os.environ, **env))
                harness.wait_until("hyper_floor to listen", lambda port=port: answers(port), 10)
                floors.append((proc, port))
            nginx = harness.Nginx(procs, os.path.join(workdir, "nginx"))
            nginx_path = nginx.put("index.m3u8", text.encode())
            servers = (("brdyun (per viewer)", node.pid, node_port, "/meeting/index.m3u8"),
                       *others,
                       ("hyper floor", floors[0][0].pid, floors[0][1], "/"),
                       ("node threads + axum", floors[1][0].pid, floors[1][1], "/"),
                       *((f"axum + {ns / 1000:g} us spin", floor[0].pid, floor[1], "/")
                         for ns, floor in zip(spins, floors[2:])),
                       ("nginx (static)", nginx.proc.pid, nginx.port, nginx_path))
            print(f"master playlist, {len(text)} bytes; wrk -t2, {args.seconds} s per run")
            print(f"{'conns':>5} {'server':<22} {'req/s':>9} {'user us':>8} {'sys us':>7} {'preempt':>8} {'vs nginx':>9}")
            for connections in (16, 128):
                rows = [(who, measure(pid, port, path, connections, args.seconds))
                        for who, pid, port, path in servers]
                peer = rows[-1][1]["requests_per_s"] or 1
                for who, r in rows:
                    print(f"{connections:>5} {who:<22} {r['requests_per_s']:>9.0f} {r['user_us']:>8.1f} "
                          f"{r['system_us']:>7.1f} {r['preemptions']:>8.3f} {r['requests_per_s'] / peer:>8.2f}x")
    finally:
        procs.stop_all()


if __name__ == "__main__":
    main()
