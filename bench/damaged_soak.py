#!/usr/bin/env python3
"""Memory of a node fed damaged MPEG-TS on many streams for a long time.

Usage (after `cargo build --release`):
    python3 bench/damaged_soak.py [--streams 40] [--minutes 30] [--sample 30]

One `brdyun node` with N UDP streams (1-s segments, a 60-s window). Each stream gets a
10-s 320x180 clip (ffmpeg-made) with one kind of damage, looped in real time: bit flips
at 10, 100 and 1000 per million bits, wrong continuity counters, packets flagged with
transport_error_indicator, lost packets, packets cut short, lying audio PES lengths, an
endless video PES, no PSI, random bytes (each loop also jumps the timestamps back).
Every `--sample` seconds the node's RSS is read from /proc and printed with the time; at
the end, the growth after the windows filled (from minute 2 on) is fitted by least
squares and printed in MB/min. The node must keep its PID throughout. Everything runs
on 127.0.0.1 and is stopped in a `finally`.
"""

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PACKET = 188
VIDEO_PID = 0x100
AUDIO_PID = 0x101


def make_clip(path):
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x180:rate=25",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10",
         "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-bf", "0",
         "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", path],
        check=True,
    )  # fmt: skip
    with open(path, "rb") as clip:
        return clip.read()


def pid_of(packet):
    return (packet[1] & 0x1F) << 8 | packet[2]


def payload_offset(packet):
    return min(5 + packet[4], PACKET) if packet[3] & 0x20 else 4


def damage(clip, kind, rng):
    """The clip with one kind of damage (see the module docs)."""
    packets = [bytearray(clip[i : i + PACKET]) for i in range(0, len(clip) - PACKET + 1, PACKET)]
    if kind.startswith("flips"):
        data = bytearray(clip)
        per_million = int(kind[5:])
        for _ in range(len(data) * 8 * per_million // 1_000_000):
            bit = rng.randrange(len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data)
    if kind == "garbage":
        return bytes(b if b != 0x47 else 0x48 for b in rng.randbytes(len(clip)))
    out = []
    video = 0
    audio_starts = 0
    endless = False
    for index, packet in enumerate(packets):
        pid = pid_of(packet)
        if pid == VIDEO_PID:
            video += 1
        if kind == "cc" and pid == VIDEO_PID and video % 150 == 0:
            packet[3] = (packet[3] & 0xF0) | ((packet[3] + 5) & 0x0F)
        elif kind == "tei" and pid == VIDEO_PID and video % 150 == 0:
            packet[1] |= 0x80
        elif kind == "loss" and index % 301 == 300:
            continue
        elif kind == "partial" and index % 400 == 399:
            packet = packet[: rng.randrange(1, PACKET)]
        elif kind == "nopsi" and pid in (0, 0x1000):
            continue
        elif kind == "lies" and pid == AUDIO_PID and packet[1] & 0x40:
            audio_starts += 1
            at = payload_offset(packet)
            if audio_starts % 4 == 0 and at + 6 <= PACKET:
                packet[at + 4 : at + 6] = rng.randrange(0x10000).to_bytes(2, "big")
        elif kind == "endless" and pid == VIDEO_PID and packet[1] & 0x40:
            if endless:
                packet[1] &= ~0x40 & 0xFF
            endless = endless or index > len(packets) // 2
        out.append(bytes(packet))
    return b"".join(out)


KINDS = ["flips10", "flips100", "flips1000", "cc", "tei", "loss", "partial", "lies", "endless", "nopsi", "garbage"]


def feed(streams, stop, loop_seconds=10.0):
    """Sends every stream's bytes in real time, looped, as 1316-byte datagrams."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    chunks = [[data[i : i + 1316] for i in range(0, len(data), 1316)] for _, data in streams]
    start = time.monotonic()
    sent = [0] * len(streams)
    while not stop.is_set():
        now = time.monotonic() - start
        for s, (port, _) in enumerate(streams):
            pieces = chunks[s]
            due = int(now / loop_seconds * len(pieces))
            while sent[s] < due:
                sock.sendto(pieces[sent[s] % len(pieces)], ("127.0.0.1", port))
                sent[s] += 1
        time.sleep(0.005)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise harness.BenchError("no VmRSS")


def slope(points):
    """Least-squares slope of (minutes, MB) points, MB/min."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--sample", type=float, default=30, help="seconds between RSS samples")
    parser.add_argument("--binary", default="target/release/brdyun")
    args = parser.parse_args()
    procs = harness.Processes()
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as work:
        try:
            clip = make_clip(os.path.join(work, "clip.ts"))
            rng = random.Random(23)
            streams = []
            config = (
                f'[node]\nname = "soak"\nhttp = "127.0.0.1:0"\ndata_dir = "{work}/data"\n\n'
                "[defaults]\nsegment_duration = 1\nwindow = 60\nsource_timeout = 2\n"
            )
            for i in range(args.streams):
                kind = KINDS[i % len(KINDS)]
                port = harness.free_port(socket.SOCK_DGRAM)
                streams.append((port, damage(clip, kind, rng)))
                config += f'\n[[stream]]\nname = "{kind}-{i}"\ninputs = ["udp://127.0.0.1:{port}"]\n'
            config_path = os.path.join(work, "soak.toml")
            with open(config_path, "w") as out:
                out.write(config)
            log = os.path.join(work, "node.log")
            node = procs.start([args.binary, "node", "--config", config_path], log)
            time.sleep(1.0)
            feeder = threading.Thread(target=feed, args=(streams, stop), daemon=True)
            feeder.start()
            print(f"{args.streams} damaged streams, kinds {', '.join(KINDS)}; node pid {node.pid}")
            print("minute  rss_mb")
            points = []
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < args.minutes * 60:
                if node.poll() is not None:
                    raise harness.BenchError(f"the node exited with {node.returncode}")
                minute = elapsed / 60
                mb = rss_mb(node.pid)
                points.append((minute, mb))
                print(f"{minute:6.1f}  {mb:7.1f}", flush=True)
                time.sleep(args.sample)
            settled = [p for p in points if p[0] >= 2.0]
            if len(settled) >= 2:
                print(f"growth after minute 2: {slope(settled):+.3f} MB/min "
                      f"(min {min(y for _, y in settled):.1f} MB, max {max(y for _, y in settled):.1f} MB)")
            print(f"node pid {node.pid} alive throughout")
        finally:
            stop.set()
            procs.stop_all()


if __name__ == "__main__":
    main()
