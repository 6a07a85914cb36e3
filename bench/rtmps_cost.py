#!/usr/bin/env python3
"""What TLS costs an RTMP publisher: a node's CPU for one publisher over RTMP, then
over RTMPS, same clip.

Usage (from the repository root):

    cargo build --release
    python3 bench/rtmps_cost.py                 # about 80 s
    python3 bench/rtmps_cost.py --seconds 60

Makes the ~3.2 Mbit/s 720p H.264 + AAC clip (harness.make_clip) and a self-signed
certificate (openssl), starts one node (release build) with an RTMP and an RTMPS
listener and two publish streams, then for each protocol runs ffmpeg publishing the
looped clip with `-c copy` (no encoding in the publisher) and reads the node's CPU
(user + system, /proc) over `--seconds` after a 5 s warm-up, with the bytes its
listener received in that time (/metrics). Prints CPU as a share of one core and per
received megabyte.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

REPO = os.path.dirname(HERE)
WARM_UP_S = 5


def metric(port, name):
    """The value of an unlabelled sample of the node's /metrics (0 when absent)."""
    status, body = harness.http_get(port, "/metrics")
    if status != 200:
        raise harness.BenchError(f"/metrics answered {status}")
    for line in body.decode("utf-8", errors="replace").splitlines():
        sample, _, value = line.rpartition(" ")
        if sample == name:
            return float(value)
    return 0.0


def listening_addresses(log_path):
    """The node's listening line as a dict (http=…, rtmp=…, rtmps=…)."""
    with open(log_path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if line.startswith("listening "):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
    raise harness.BenchError("no listening line")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "target/release/brdyun"))
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-rtmps-cost-") as work:
            clip = os.path.join(work, "clip.mp4")
            harness.make_clip(clip)
            cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                 "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost"],
                capture_output=True, timeout=60, check=True,
            )  # fmt: skip
            extra = "".join(
                f'[[stream]]\nname = "{name}"\ninputs = ["publish://?key=K"]\n' for name in "ab"
            )
            config = harness.node_config("rtmps-cost", os.path.join(work, "data"), [], 30, 2)
            config = config.replace(
                "[defaults]",
                f'rtmp = "127.0.0.1:0"\nrtmps = "127.0.0.1:0"\nrtmps_cert = "{cert}"\n'
                f'rtmps_key = "{key}"\n[defaults]',
            ) + extra
            node_proc, port = harness.start_role(procs, args.binary, work, "node", config)
            addresses = listening_addresses(os.path.join(work, "node.log"))
            rtmps_port = addresses["rtmps"].rsplit(":", 1)[1]
            urls = {
                "rtmp": f"rtmp://{addresses['rtmp']}/live/a?key=K",
                "rtmps": f"rtmps://localhost:{rtmps_port}/live/b?key=K",
            }
            print(f"node {args.binary}, one publisher of {clip} (3.2 Mbit/s, -c copy), "
                  f"{args.seconds} s after {WARM_UP_S} s")
            print(f"{'protocol':<9} {'Mbit/s in':>10} {'CPU % core':>11} {'CPU ms/MB':>10}")
            for protocol, url in urls.items():
                publisher = procs.start(
                    ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
                     "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "flv", url],
                    os.path.join(work, f"ffmpeg-{protocol}.log"),
                )  # fmt: skip
                time.sleep(WARM_UP_S)
                bytes_before = metric(port, f"brdyun_{protocol}_bytes_total")
                cpu_before = harness.process_cpu_s(node_proc.pid)
                time.sleep(args.seconds)
                spent = harness.process_cpu_s(node_proc.pid) - cpu_before
                received = metric(port, f"brdyun_{protocol}_bytes_total") - bytes_before
                procs.stop(publisher)
                if received <= 0:
                    raise harness.BenchError(f"nothing received over {protocol}")
                mbit_s = received * 8 / args.seconds / 1e6
                print(f"{protocol:<9} {mbit_s:>10.2f} {spent / args.seconds * 100:>11.2f} "
                      f"{spent * 1e3 / (received / 1e6):>10.2f}")
    finally:
        procs.stop_all()


if __name__ == "__main__":
    try:
        main()
    except harness.BenchError as error:
        print(f"rtmps_cost: {error}", file=sys.stderr)
        sys.exit(1)
