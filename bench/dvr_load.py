#!/usr/bin/env python3
"""How many 4 Mbit/s streams one node records while serving live.

Usage (after `cargo build --release`):  python3 bench/dvr_load.py [--streams 8,16,32] [--seconds 40]

For each stream count N: one `brdyun node` with N UDP MPEG-TS streams, each archived
(`dvr = { enabled = true }`), fed by N `ffmpeg -re -stream_loop -1 -c copy` processes
looping a 4 Mbit/s clip; while they run, wrk fetches one stream's live playlist and newest
segment over 16 connections. After the run, from each stream's status: segments cut,
segments recorded, segments the recorder dropped (its queue full: the disk fell behind),
and the node's CPU. A count passes when no segment was dropped and every stream kept a
fresh live window. Everything runs on 127.0.0.1 and is stopped in a `finally`.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def get_json(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
        return json.loads(answer.read())


def make_clip(path):
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10",
         "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-b:v", "3900k", "-maxrate", "4000k",
         "-bufsize", "4000k", "-x264-params", "nal-hrd=cbr", "-c:a", "aac", "-b:a", "96k", path],
        check=True,
    )  # fmt: skip


def run(n, seconds, binary, clip, work):
    procs = harness.Processes()
    try:
        ports = [harness.free_port(harness.socket.SOCK_DGRAM) for _ in range(n)]
        streams = "".join(
            f'[[stream]]\nname = "s{i}"\ninputs = ["udp://127.0.0.1:{p}"]\ndvr = {{ enabled = true, depth = "1h" }}\n'
            for i, p in enumerate(ports)
        )
        os.makedirs(work, exist_ok=True)
        config = os.path.join(work, "node.toml")
        with open(config, "w", encoding="utf-8") as out:
            out.write(f'[node]\ntrust_loopback = true\nhttp = "127.0.0.1:0"\ndata_dir = "{work}/data"\n{streams}')
        log = os.path.join(work, "node.out")
        node = procs.start([binary, "node", "--config", config], log, env={**os.environ, "RUST_LOG": "warn"})
        port = harness.wait_until("listening", lambda: _listening(log), 30, 0.1)
        for i, p in enumerate(ports):
            procs.start(
                ["ffmpeg", "-v", "error", "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy",
                 "-f", "mpegts", f"udp://127.0.0.1:{p}?pkt_size=1316"],
                os.path.join(work, f"feed{i}.log"),
            )  # fmt: skip
        time.sleep(8)  # windows fill
        cpu0, t0 = harness.process_cpu_s(node.pid), time.time()
        status = get_json(port, "/api/streams/s0")
        newest = status.get("last_msn")
        wrk = subprocess.run(
            ["wrk", "-t2", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}/s0/mono.m3u8"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        seg = subprocess.run(
            ["wrk", "-t1", "-c4", "-d5s", f"http://127.0.0.1:{port}/s0/seg-{newest}.ts"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        cpu = (harness.process_cpu_s(node.pid) - cpu0) / (time.time() - t0)
        rows = [get_json(port, f"/api/streams/s{i}") for i in range(n)]
        dropped = sum(r["dvr"]["counters"]["dropped"] for r in rows)
        recorded = sum(r["dvr"]["counters"]["recorded"] for r in rows)
        cut = sum(r["counters"]["segments"] for r in rows)
        stale = sum(1 for r in rows if (r.get("live_window_age_ms") or 10**9) > 6000)
        rps = next((line.split()[1] for line in wrk.stdout.splitlines() if line.startswith("Requests/sec")), "-")
        seg_rps = next((line.split()[1] for line in seg.stdout.splitlines() if line.startswith("Requests/sec")), "-")
        return {"streams": n, "segments_cut": cut, "recorded": recorded, "dropped": dropped,
                "stale_windows": stale, "node_cpu_cores": round(cpu, 2),
                "playlist_req_s_while_recording": rps, "segment_req_s_while_recording": seg_rps,
                "ok": dropped == 0 and stale == 0}  # fmt: skip
    finally:
        procs.stop_all()


def _listening(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("listening http="):
                return int(line.split()[1].rsplit(":", 1)[1])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="8,16,32")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "brdyun"))
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="brdyun-dvr-load-")
    try:
        clip = os.path.join(base, "clip4m.mp4")
        make_clip(clip)
        results = []
        for n in [int(x) for x in args.streams.split(",")]:
            result = run(n, args.seconds, args.binary, clip, os.path.join(base, f"n{n}"))
            print(json.dumps(result))
            sys.stdout.flush()
            results.append(result)
        best = max((r["streams"] for r in results if r["ok"]), default=0)
        print(f"most 4 Mbit/s streams recorded with no drop while serving live: {best} (of {args.streams})")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
