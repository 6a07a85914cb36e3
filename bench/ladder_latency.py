#!/usr/bin/env python3
"""The latency the ladder encoder adds: how much later a node lists a rung's segment
than the source's segment of the same MSN (both carry the same PROGRAM-DATE-TIME, so
this is what a viewer of the rung waits more), and how late after the end of its media
time each is listed.

Starts `brdyun demo` (release build), polls node-a's media playlists of the source and
of every rung every 20 ms for SECONDS, and prints p50 / p90 / max per rung.

    cargo build --release && python3 bench/ladder_latency.py [--seconds 60] [--port 18980]
"""

import argparse
import datetime
import os
import signal
import subprocess
import sys
import time
import urllib.request

RUNGS = {"source": "/meeting/mono.m3u8", "240p": "/meeting/240p/mono.m3u8", "144p": "/meeting/144p/mono.m3u8"}


def segments(text):
    """(msn, pdt_ms, duration_ms) of every segment of a media playlist."""
    msn, pdt, out = 0, None, []
    for line in text.splitlines():
        if line.startswith("#EXT-X-MEDIA-SEQUENCE:"):
            msn = int(line.split(":", 1)[1])
        elif line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            value = line.split(":", 1)[1].replace("Z", "+00:00")
            pdt = datetime.datetime.fromisoformat(value).timestamp() * 1000
        elif line.startswith("#EXTINF:"):
            duration = float(line.split(":", 1)[1].rstrip(",")) * 1000
        elif line and not line.startswith("#"):
            out.append((msn, pdt, duration))
            msn += 1
    return out


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--port", type=int, default=18980)
    args = parser.parse_args()
    binary = os.path.join(os.path.dirname(__file__), "..", "target", "release", "brdyun")
    demo = subprocess.Popen([binary, "demo", "--port", str(args.port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{args.port}"
        seen = {rung: {} for rung in RUNGS}  # rung -> msn -> (listed_ms, end_ms)
        time.sleep(8)  # the demo starts, the encoder cuts its first segments
        deadline = time.time() + args.seconds
        while time.time() < deadline:
            for rung, path in RUNGS.items():
                try:
                    text = urllib.request.urlopen(base + path, timeout=2).read().decode()
                except Exception:
                    continue
                now = time.time() * 1000
                for msn, pdt, duration in segments(text):
                    seen[rung].setdefault(msn, (now, pdt + duration))
            time.sleep(0.02)
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        demo.wait(timeout=10)
    source = seen["source"]
    first = min(source) if source else 0
    print(f"node-a, {args.seconds} s (the first MSN seen is left out: it was listed before polling)")
    for rung in RUNGS:
        listed = {m: v for m, v in seen[rung].items() if m > first and m in source}
        late = [listed[m][0] - listed[m][1] for m in listed]
        print(f"{rung:>7}: listed after its media end  p50 {percentile(late, 0.5):6.0f} ms"
              f"  p90 {percentile(late, 0.9):6.0f} ms  max {max(late, default=float('nan')):6.0f} ms  ({len(late)} segments)")
        if rung != "source":
            lag = [listed[m][0] - source[m][0] for m in listed]
            print(f"{'':>7}  after the source's segment    p50 {percentile(lag, 0.5):6.0f} ms"
                  f"  p90 {percentile(lag, 0.9):6.0f} ms  max {max(lag, default=float('nan')):6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
