#!/usr/bin/env python3
"""What an added audio language costs a delivery node: playlist and segment requests
per second against nginx serving copies of the same files in the same run, and the
node's memory per added language per minute of window.

For each of two meetings — the built-in meeting with one audio, and the same meeting
with its second audio stream as Spanish (`[[meeting.language]]` eng, spa) — it starts
an MC and one node that pulls it, waits until every rendition's window is full, reads
the node's RSS, then runs `wrk -t2 -c16` on the master, the video's media playlist and
segment, and (with two languages) Spanish's, and on nginx serving byte-identical
copies. Ratios are brdyun/nginx of the same run.

    cargo build --release && python3 bench/languages_node.py [--seconds 5] [--window 60]

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
import ladder_node
import parse

LANGUAGES = '[[meeting.language]]\ncode = "eng"\n[[meeting.language]]\ncode = "spa"\nname = "Español"\n'


def measure(procs, binary, root, languages, seconds, window_s):
    name = "two languages" if languages else "one audio"
    tag = "two" if languages else "one"
    mc_port = ladder_node.start_mc(procs, binary, os.path.join(root, f"mc-{tag}"), False,
                                   LANGUAGES if languages else "")
    extra = f'[mc]\nurl = "http://127.0.0.1:{mc_port}"\npoll_interval = 0.5\n'
    node = harness.Node(procs, binary, os.path.join(root, f"node-{tag}"), f"node-{tag}",
                        [], window_s, None, extra)
    renditions = ["/m/", "/m/audio-spa/"] if languages else ["/m/"]
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
    nginx = harness.Nginx(procs, os.path.join(root, f"nginx-{tag}"))
    files = [("master", "/m/index.m3u8", "index.m3u8")]
    for prefix in renditions:
        label = "spa" if "audio" in prefix else "video"
        files.append((f"{label} playlist", f"{prefix}mono.m3u8", f"{label}.m3u8"))
        files.append((f"{label} segment", ladder_node.newest_segment(node.port, prefix),
                      f"{label}.ts"))
    rows = []
    for kind, path, copy in files:
        rows.append({"meeting": name, "file": kind,
                     **harness.served_alike(nginx, node.port, path, copy, seconds)})
    return {"meeting": name, "languages": len(renditions), "rss_kib": rss, "rows": rows}


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--binary", default="target/release/brdyun")
    args.add_argument("--seconds", type=int, default=5, help="each wrk run")
    args.add_argument("--window", type=int, default=60, help="the node's window, seconds")
    args.add_argument("--out", default="bench/languages_results.json")
    opts = args.parse_args()
    harness.ensure_tools(need_apt=True)
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-languages-") as root:
            results = []
            for languages in (False, True):
                results.append(measure(procs, opts.binary, root, languages, opts.seconds,
                                       opts.window))
                procs.stop_all()
    finally:
        procs.stop_all()
    print("| meeting | file | brdyun req/s | nginx req/s | brdyun/nginx |")
    print("|---|---|---|---|---|")
    for result in results:
        for r in result["rows"]:
            print(f"| {r['meeting']} | {r['file']} | {r['brdyun_rps']:.0f} "
                  f"| {r['nginx_rps']:.0f} | {r['ratio']:.2f} |")
    one, two = results
    per_language = (two["rss_kib"] - one["rss_kib"]) / (opts.window / 60)
    print(f"\nnode RSS: one audio {one['rss_kib']} KiB, two languages {two['rss_kib']} KiB: "
          f"{per_language:.0f} KiB per added language per minute of window")
    with open(opts.out, "w", encoding="utf-8") as out:
        json.dump({"window_s": opts.window, "results": results,
                   "kib_per_language_per_window_minute": per_language}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
