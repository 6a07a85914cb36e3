#!/usr/bin/env python3
"""Log lines a node writes about an input that keeps failing.

Starts an HTTP origin on loopback and a node (`--binary`) pulling one stream from it,
for `--seconds`, at RUST_LOG=info, and counts the node's log lines: all of them, the
WARN and ERROR ones, and those that name the input. The origin either answers every
pull 503 (`--mode down`, what a node sees of an MC whose meeting is not live) or
flaps (`--mode flap`): a pull gets MPEG-TS (assets/demo-meeting.ts) for `--up`
seconds and is then cut, the next one gets 503, and so on.

    python3 bench/flapping_input.py --binary target/release/brdyun --mode flap

Prints one JSON object: attempts (pulls the origin saw), lines, warn_lines,
input_lines, and the same per minute.
"""

import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIP = os.path.join(ROOT, "assets", "demo-meeting.ts")


class Origin:
    """The origin: counts pulls, answers them per the mode."""

    def __init__(self, mode, up_seconds):
        self.mode = mode
        self.up = up_seconds
        self.attempts = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.clip = open(CLIP, "rb").read()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.addr = self.sock.getsockname()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            with self.lock:
                n = self.attempts
                self.attempts += 1
            threading.Thread(target=self.answer, args=(conn, n), daemon=True).start()

    def answer(self, conn, n):
        try:
            conn.settimeout(2)
            conn.recv(4096)
            if self.mode == "down" or n % 2 == 1:
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\n"
                         b"Connection: close\r\n\r\n")
            # About real time: the clip is ~8 s long.
            chunk = 188 * 70
            pace = chunk / (len(self.clip) / 8.0)
            end = time.monotonic() + self.up
            at = 0
            while time.monotonic() < end and not self.stop.is_set():
                conn.sendall(self.clip[at:at + chunk])
                at = (at + chunk) % (len(self.clip) - chunk)
                time.sleep(pace)
        except OSError:
            pass
        finally:
            conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/release/brdyun"))
    parser.add_argument("--mode", choices=["flap", "down"], default="flap")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--up", type=float, default=3)
    parser.add_argument("--keep-log", help="copy the node's log here")
    args = parser.parse_args()

    origin = Origin(args.mode, args.up)
    url = "http://%s:%d/m/mpegts" % origin.addr
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "node.toml")
        with open(config, "w") as f:
            f.write('[node]\nname = "flap"\nhttp = "127.0.0.1:0"\n'
                    'data_dir = "%s"\ntrust_loopback = true\n'
                    '[[stream]]\nname = "m"\ninputs = ["%s"]\n'
                    % (os.path.join(work, "data"), url))
        log_path = os.path.join(work, "node.log")
        with open(log_path, "w") as log:
            node = subprocess.Popen(
                [args.binary, "node", "--config", config],
                stdout=subprocess.DEVNULL, stderr=log,
                env=dict(os.environ, RUST_LOG="info", NO_COLOR="1"))
            try:
                time.sleep(args.seconds)
            finally:
                node.terminate()
                node.wait(timeout=10)
        origin.stop.set()
        text = open(log_path, errors="replace").read()
        if args.keep_log:
            with open(args.keep_log, "w") as kept:
                kept.write(text)
        lines = text.splitlines()
    warn = [l for l in lines if " WARN " in l or " ERROR " in l
            or '"level":"WARN"' in l or '"level":"ERROR"' in l]
    about = [l for l in lines if url in l]
    per_minute = 60.0 / args.seconds
    print(json.dumps({
        "binary": args.binary,
        "mode": args.mode,
        "seconds": args.seconds,
        "attempts": origin.attempts,
        "lines": len(lines),
        "warn_lines": len(warn),
        "input_lines": len(about),
        "input_lines_per_minute": round(len(about) * per_minute, 1),
        "warn_lines_per_minute": round(len(warn) * per_minute, 1),
    }))


if __name__ == "__main__":
    main()
