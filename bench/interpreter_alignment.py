#!/usr/bin/env python3
"""How well an interpreter's own feed is placed on a meeting's timeline over a long
run: the placement's error (where the feed is put minus where its arrival says it
belongs), as the MC measures it every 2 s, sampled from its status API.

It starts an MC whose meeting `m` plays the built-in meeting as its floor and takes
Spanish from an interpreter (`interpreter = true`), then ffmpeg publishes an 880 Hz
tone, audio only, in real time to `rtmp://…/live/m@audio-spa` with Spanish's interpreter key
for `--minutes`. Every 10 s it reads `languages[1].interpreter` of `/api/streams/m`.

    cargo build --release && python3 bench/interpreter_alignment.py [--minutes 10]

Needs ffmpeg. Loopback only; every process it starts is stopped at the end.
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

import harness

ADMIN = "bench-admin-token-of-this-run"

MC = """[mc]
http = "127.0.0.1:0"
rtmp = "127.0.0.1:0"
admin_token = "{admin}"
data_dir = "{data}"
[defaults]
segment_duration = 1
[[meeting]]
id = "m"
start = true
ladder = false
inputs = ["builtin://meeting"]
[[meeting.language]]
code = "eng"
[[meeting.language]]
code = "spa"
name = "Español"
interpreter = true
"""


def start_mc(procs, binary, workdir):
    """The MC; returns its HTTP and RTMP ports."""
    def ports(line):
        match = re.match(r"^listening http=\S+:(\d+) .*rtmp=\S+:(\d+)", line)
        return (int(match.group(1)), int(match.group(2))) if match else None

    text = MC.format(admin=ADMIN, data=os.path.join(workdir, "data"))
    return harness.start_role(procs, binary, workdir, "mc", text, role="mc", read=ports)[1]


def admin_json(port, path):
    status, body = harness.http_get(port, path, headers={"Authorization": f"Bearer {ADMIN}"})
    if status != 200:
        raise harness.BenchError(f"GET {path}: {status}")
    return json.loads(body)


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--binary", default="target/release/brdyun")
    args.add_argument("--minutes", type=float, default=10.0)
    args.add_argument("--out", default="bench/interpreter_results.json")
    opts = args.parse_args()
    harness.ensure_tools(need_apt=True)
    procs = harness.Processes()
    samples = []
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-interpreter-") as root:
            http, rtmp = start_mc(procs, opts.binary, os.path.join(root, "mc"))
            key = admin_json(http, "/api/meetings/m")["interpreter_keys"]["spa"]
            seconds = int(opts.minutes * 60)
            procs.start(
                ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-re",
                 "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000",
                 "-c:a", "aac", "-b:a", "64k", "-t", str(seconds + 30),
                 "-f", "flv", f"rtmp://127.0.0.1:{rtmp}/live/m@audio-spa?key={key}"],
                os.path.join(root, "interpreter.log"))

            def publishing():
                feed = admin_json(http, "/api/streams/m")["languages"][1]["interpreter"]
                return feed if feed["frames"] > 0 else None

            harness.wait_until("the interpreter placed", publishing, 60, 0.5)
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                time.sleep(10)
                feed = admin_json(http, "/api/streams/m")["languages"][1]["interpreter"]
                feed["at_s"] = round(time.monotonic() - started)
                samples.append(feed)
    finally:
        procs.stop_all()
    errors = [abs(s["error_ms"]) for s in samples]
    last = samples[-1]
    summary = {
        "minutes": opts.minutes,
        "samples": len(samples),
        "max_abs_sampled_error_ms": max(errors),
        "median_abs_sampled_error_ms": sorted(errors)[len(errors) // 2],
        "max_error_ms": last["max_error_ms"],
        "corrections": last["corrections"],
        "anchors": last["anchors"],
        "frames": last["frames"],
    }
    print(json.dumps(summary, indent=2))
    with open(opts.out, "w", encoding="utf-8") as out:
        json.dump({"summary": summary, "samples": samples}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
