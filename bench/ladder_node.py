#!/usr/bin/env python3
"""What an ABR ladder costs a delivery node, per rung: playlist and segment
requests per second against nginx serving copies of the same files in the same run, and
the node's memory per rung per minute of window.

For each of two meetings — the source alone, and the demo's ladder (the source 640x360
plus 240p and 144p, encoded by the MC with ffmpeg) — it starts an MC with the built-in
meeting and one node that pulls it, waits until every rendition's window is full, reads
the node's RSS, then runs `wrk -t2 -c16` on the source's and a rung's media playlist and
segment, and on nginx serving byte-identical copies. Ratios are brdyun/nginx of the same
run: if serving does not get dearer with more rungs, the ratio does not drop.

    cargo build --release && python3 bench/ladder_node.py [--seconds 5] [--window 60]

Needs ffmpeg, nginx and wrk (Debian packages). Loopback only; every process it starts
is stopped at the end, error or not.
"""

import argparse
import json
import os
import sys
import tempfile
import time

import harness
import parse

DEMO_LADDER = """[mc.ladder]
threads = 1
rungs = [
  { name = "source" },
  { name = "240p", height = 240, video_kbps = 250 },
  { name = "144p", height = 144, video_kbps = 100, profile = "baseline" },
]
"""


def start_mc(procs, binary, workdir, ladder, meeting_lines="", mc_lines=""):
    """An MC with the meeting `m` fed by the built-in source (`meeting_lines` after its
    `[[meeting]]`, `mc_lines` in `[mc]`); returns its HTTP port."""
    text = (
        f'[mc]\ntrust_loopback = true\nhttp = "127.0.0.1:0"\ndata_dir = "{workdir}/data"\n'
        + mc_lines
        + (DEMO_LADDER if ladder else "")
        + '[[meeting]]\nid = "m"\nstart = true\ninputs = ["builtin://meeting"]\n'
        + meeting_lines
    )
    return harness.start_role(procs, binary, workdir, "mc", text, role="mc")[1]


def text(port, path):
    status, body = harness.http_get(port, path)
    if status != 200:
        raise harness.BenchError(f"GET {path}: {status}")
    return body


def newest_segment(port, prefix):
    playlist = parse.parse_media_playlist(text(port, f"{prefix}mono.m3u8").decode())
    return f"{prefix}{playlist.segments[-2].uri}"


def measure(procs, binary, root, ladder, seconds, window_s):
    name = "ladder" if ladder else "source"
    mc_port = start_mc(procs, binary, os.path.join(root, f"mc-{name}"), ladder)
    extra = f'[mc]\nurl = "http://127.0.0.1:{mc_port}"\npoll_interval = 0.5\n'
    node = harness.Node(procs, binary, os.path.join(root, f"node-{name}"), f"node-{name}",
                        [], window_s, None, extra)
    renditions = ["/m/", "/m/240p/", "/m/144p/"] if ladder else ["/m/"]
    want = window_s // 2

    def full():
        for prefix in renditions:
            status, body = harness.http_get(node.port, f"{prefix}mono.m3u8")
            if status != 200 or len(parse.parse_media_playlist(body.decode()).segments) < want:
                return None
        return True

    harness.wait_until(f"{want} segments in every rendition", full, window_s * 2 + 60, 1.0)
    samples = []
    for _ in range(3):
        time.sleep(0.5)
        samples.append(node.rss_kib())
    rss = sorted(samples)[1]
    nginx = harness.Nginx(procs, os.path.join(root, f"nginx-{name}"))
    rows = []
    targets = [("/m/", "source")] + ([("/m/240p/", "240p")] if ladder else [])
    for prefix, label in targets:
        segment = newest_segment(node.port, prefix)
        files = [("playlist", f"{prefix}mono.m3u8", "p.m3u8"), ("segment", segment, "s.ts")]
        for kind, path, copy in files:
            rows.append({"meeting": name, "rendition": label, "file": kind,
                         **harness.served_alike(nginx, node.port, path, f"{label}-{copy}", seconds)})
    return {"meeting": name, "rungs": len(renditions), "rss_kib": rss, "rows": rows}


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--binary", default="target/release/brdyun")
    args.add_argument("--seconds", type=int, default=5, help="each wrk run")
    args.add_argument("--window", type=int, default=60, help="the node's window, seconds")
    args.add_argument("--out", default="bench/ladder_results.json")
    opts = args.parse_args()
    harness.ensure_tools(need_apt=True)
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-ladder-") as root:
            results = []
            for ladder in (False, True):
                results.append(measure(procs, opts.binary, root, ladder, opts.seconds, opts.window))
                procs.stop_all()
    finally:
        procs.stop_all()
    print("| meeting | rendition | file | brdyun req/s | nginx req/s | brdyun/nginx |")
    print("|---|---|---|---|---|---|")
    for result in results:
        for r in result["rows"]:
            print(f"| {r['meeting']} | {r['rendition']} | {r['file']} | {r['brdyun_rps']:.0f} "
                  f"| {r['nginx_rps']:.0f} | {r['ratio']:.2f} |")
    alone, ladder = results
    extra_kib = ladder["rss_kib"] - alone["rss_kib"]
    per_rung = extra_kib / (ladder["rungs"] - 1) / (opts.window / 60)
    print(f"\nnode RSS: source alone {alone['rss_kib']} KiB, ladder of {ladder['rungs']} "
          f"{ladder['rss_kib']} KiB: {per_rung:.0f} KiB per rung per minute of window")
    with open(opts.out, "w", encoding="utf-8") as out:
        json.dump({"window_s": opts.window, "results": results,
                   "kib_per_rung_per_window_minute": per_rung}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
