#!/usr/bin/env python3
"""Live caption benchmarks for brdyun (Python 3 stdlib + wrk + nginx).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/captions.py            # about 3 minutes
    python3 bench/captions.py --quick    # fewer cues, 3 s wrk runs

What is measured, on an MC (`brdyun mc`, the built-in meeting, 1-s segments) and one
node pulling the meeting from it:

1. Caption latency, API: a cue is posted to the MC's caption API; the time until the
   node's live subtitle playlist lists a segment whose WebVTT holds it (polled every
   20 ms), p50 and p99 over N cues. The floor is the segment being cut (a cue is placed
   in the open segment) plus the relay.
2. Caption latency, CEA-608: the built-in clip's captions appear in its video at known
   moments of every 9.6-s loop; from the date (PROGRAM-DATE-TIME) of the frame that
   carries the caption to the moment the node's `sub-cc1.m3u8` lists a WebVTT holding
   it, p50 and p99 (the 608 bytes' arrival is that frame's date: the source is paced in
   real time).
3. Cost per caption rendition: `wrk -t2 -c16|-c128` on the node's `sub-en.m3u8`
   against nginx serving a static copy of it, same run; req/s, p99 and the ratio.

Every process runs in its own process group and is stopped in a `finally`.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import ott  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as res:
            return res.status, res.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def post_cue(mc_port, text):
    body = json.dumps({"language": "en", "name": "English",
                       "cues": [{"text": text, "duration_ms": 1500}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{mc_port}/api/meetings/meeting/captions",
                                 data=body, method="POST",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as res:
        return json.loads(res.read())["cues"][0]


def start(procs, binary, workdir):
    """The MC (built-in meeting, 1-s segments) and one node; returns (mc port, node port)."""
    mc = harness.free_port()
    path = os.path.join(workdir, "mc.toml")
    with open(path, "w", encoding="utf-8") as out:
        out.write(f'[mc]\ntrust_loopback = true\nhttp = "127.0.0.1:{mc}"\ndata_dir = "{workdir}/mc"\n'
                  '[defaults]\nsegment_duration = 1\n'
                  '[[meeting]]\nid = "meeting"\nstart = true\nladder = false\n'
                  'inputs = ["builtin://meeting"]\n')
    log = os.path.join(workdir, "mc.log")
    procs.start([binary, "mc", "--config", path], log,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")})
    harness.wait_until("the mc", lambda: _ok(mc, "/meeting/mono.m3u8"), 30)
    _, node = ott.start_node(procs, binary, workdir, "node", (
        f'[node]\nname = "node"\ntrust_loopback = true\nhttp = "127.0.0.1:0"\ndata_dir = "{workdir}/node"\n'
        f'[mc]\nurl = "http://127.0.0.1:{mc}"\npoll_interval = 0.2\n'
        '[mc.stream]\nsegment_duration = 1\n'))
    harness.wait_until("the node", lambda: _ok(node, "/meeting/mono.m3u8"), 30)
    return mc, node


def _ok(port, path):
    try:
        return get(port, path)[0] == 200 or None
    except OSError:
        return None


def vtt_holding(port, track, text, seen):
    """Whether a WebVTT listed in the track's live playlist holds `text` (each file read
    once: `seen` keeps what was read)."""
    status, playlist = get(port, f"/meeting/sub-{track}.m3u8")
    if status != 200:
        return False
    for line in playlist.splitlines():
        if line.endswith(".vtt") and line not in seen:
            seen[line] = get(port, f"/meeting/{line}")[1]
    return any(text in body for body in seen.values())


def percentiles(samples):
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"n": len(ordered), "p50_ms": statistics.median(ordered), "p99_ms": p99,
            "max_ms": ordered[-1]}


def bench_api_latency(mc, node, cues):
    samples = []
    for i in range(cues):
        text = f"latency cue {i} {time.time_ns()}"
        sent = time.monotonic()
        post_cue(mc, text)
        seen = {}
        harness.wait_until("the cue on the node", lambda: vtt_holding(node, "en", text, seen) or None,
                           20, 0.02)
        samples.append((time.monotonic() - sent) * 1000)
        time.sleep(0.3)
    result = percentiles(samples)
    print(f"\n1. caption API -> node's subtitle playlist ({cues} cues, 1-s segments): "
          f"p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms, max {result['max_ms']:.0f} ms")
    return result


def bench_608_latency(node, captions):
    """The clip's 608 captions: from the date of the frame carrying one to the node
    listing it. The caption's date is read back from the WebVTT (segment date + cue time)."""
    samples = []
    # What the playlist lists before polling begins was cut earlier: not measured.
    seen_text = {line for line in get(node, "/meeting/sub-cc1.m3u8")[1].splitlines()}
    deadline = time.monotonic() + captions * 6 + 30
    while len(samples) < captions and time.monotonic() < deadline:
        status, playlist = get(node, "/meeting/sub-cc1.m3u8")
        lines = playlist.splitlines()
        for i, line in enumerate(lines):
            if not line.endswith(".vtt") or line in seen_text:
                continue
            seen_text.add(line)
            date = next((lines[j].split(":", 1)[1] for j in range(i - 1, -1, -1)
                         if lines[j].startswith("#EXT-X-PROGRAM-DATE-TIME:")), None)
            body = get(node, f"/meeting/{line}")[1]
            for cue_line in body.splitlines():
                if "-->" in cue_line and not cue_line.startswith("00:00:00.000"):
                    # a cue starting inside this segment: a caption that appeared here
                    start = cue_line.split(" --> ")[0]
                    h, m, s = start.split(":")
                    offset = (int(h) * 3600 + int(m) * 60 + float(s)) * 1000
                    when = _parse_date(date) + offset
                    samples.append(time.time() * 1000 - when)
        time.sleep(0.02)
    if not samples:
        raise BenchError("no 608 caption seen on the node")
    result = percentiles(samples)
    print(f"\n2. CEA-608 in the video -> node's subtitle playlist ({result['n']} captions): "
          f"p50 {result['p50_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms")
    return result


def _parse_date(text):
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def bench_cost(procs, node, node_pid, workdir, seconds):
    _, text = get(node, "/meeting/sub-en.m3u8")
    nginx = harness.Nginx(procs, os.path.join(workdir, "nginx"))
    path = nginx.put("sub-en.m3u8", text.encode())
    runs = []
    for connections in (16, 128):
        record = {"connections": connections}
        for who, pid, port, url in (("brdyun", node_pid, node, "/meeting/sub-en.m3u8"),
                                    ("nginx", nginx.proc.pid, nginx.port, path)):
            argv, result = ott.wrk(port, url, connections, seconds)
            record[who] = {"command": " ".join(argv), **result.__dict__}
        runs.append(record)
    print(f"\n3. subtitle playlist sub-en.m3u8 ({len(text)} bytes) vs nginx serving a static copy")
    for r in runs:
        b, n = r["brdyun"], r["nginx"]
        print(f"   c{r['connections']:<4} brdyun {b['requests_per_s']:>9.0f} req/s p99 {b['latency_p99_s']*1e3:.2f} ms"
              f" | nginx {n['requests_per_s']:>9.0f} req/s p99 {n['latency_p99_s']*1e3:.2f} ms"
              f" | ratio {b['requests_per_s']/n['requests_per_s']:.2f}x")
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "release", "brdyun"))
    parser.add_argument("--out", default=os.path.join(HERE, "captions_results.json"))
    args = parser.parse_args(argv)
    cues = 10 if args.quick else 40
    seconds = 3 if args.quick else 10
    harness.ensure_tools(need_apt=False)
    procs = harness.Processes()
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-captions-bench-") as workdir:
            mc, node = start(procs, args.binary, workdir)
            node_pid = procs._procs[-1][0].pid  # noqa: SLF001 - the node, started last
            results["api_latency"] = bench_api_latency(mc, node, cues)
            results["cea608_latency"] = bench_608_latency(node, 6 if args.quick else 20)
            results["playlist_cost"] = bench_cost(procs, node, node_pid, workdir, seconds)
    finally:
        procs.stop_all()
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
