#!/usr/bin/env python3
"""SRT ingest on the MC, measured against MPEG-TS over UDP in the same run.

Usage (from the repository root):

    cargo build --release
    python3 bench/srt.py                         # about 6 minutes: all three parts
    python3 bench/srt.py --only latency          # latency | cpu | capacity

- **latency**: one ffmpeg sends the same MPEG-TS (a 3 Mbit/s 720p clip, looped, `-c
  copy`) to two meetings of one MC at once, through its tee muxer: over UDP to one, over
  SRT (120 ms latency) to the other. The MC's playlists are polled every 20 ms; a
  segment (matched across the meetings by its media packets' hash) is listed on the
  SRT meeting some ms after the UDP one: that is what SRT adds. Also printed: how long
  after its media ended (by the UDP meeting's dates) each is listed.
- **cpu**: N publishers at 6 Mbit/s to N meetings over SRT, then N over UDP, each for
  SECONDS: the MC's CPU (user + system, /proc) per publisher, above the idle MC's.
- **capacity**: the MC on one core (`taskset -c 1`, the publishers on core 0), SRT
  publishers at 3 Mbit/s added in steps (4, 8, 12, ... up to --max); a step holds when
  for STEP seconds every meeting's newest segment stays under 3 s old, no TS continuity
  error reaches the demuxer (a hole SRT did not fill), every publisher has its link and
  the MC's core is under 90 % busy. Prints the largest step that held, with the packets
  SRT gave up on.

Writes `bench/srt_results.json` beside this file.
"""

import argparse
import datetime
import hashlib
import http.client
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import parse  # noqa: E402

REPO = os.path.dirname(HERE)
ADMIN = "admin-token-of-the-srt-bench"
NODE_TOKEN = "node-token-of-the-srt-bench"
# An MC's meeting files are for its nodes: the bench reads them as a node does.
AS_NODE = {"Authorization": f"Bearer {NODE_TOKEN}"}
LATENCY_US = 120_000


def make_clip(path, kbps, seconds=20):
    """A 720p25 H.264 (CBR `kbps`, a keyframe a second) + AAC MP4 clip: an MP4 loops
    sample-exact with `-stream_loop -1` (see harness.make_clip)."""
    argv = [
        "ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
        "-t", str(seconds),
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
        "-b:v", f"{kbps}k", "-minrate", f"{kbps}k", "-maxrate", f"{kbps}k", "-bufsize", f"{kbps // 2}k",
        "-x264-params", "nal-hrd=cbr:force-cfr=1",
        "-g", "25", "-keyint_min", "25", "-sc_threshold", "0",
        "-c:a", "aac", "-b:a", "128k", "-f", "mp4", path,
    ]  # fmt: skip
    done = harness.subprocess.run(argv, capture_output=True, timeout=300, check=False)
    if done.returncode != 0:
        raise harness.BenchError(f"ffmpeg could not make the clip: {done.stderr.decode(errors='replace')[-800:]}")


def mc_config(data_dir, srt_port, meetings, udp_ports=None):
    """An MC with SRT on srt_port and a started meeting (no ladder) per id; a meeting
    in udp_ports also takes MPEG-TS over UDP on its port."""
    udp_ports = udp_ports or {}
    lines = [
        "[mc]", 'http = "127.0.0.1:0"', f'srt = "127.0.0.1:{srt_port}"',
        f'data_dir = "{data_dir}"', f'admin_token = "{ADMIN}"',
        f'node_token = "{NODE_TOKEN}"', "trust_loopback = true",
        "[defaults]", "segment_duration = 1",
    ]  # fmt: skip
    for meeting in meetings:
        lines += ["[[meeting]]", f'id = "{meeting}"', "start = true", "ladder = false"]
        if meeting in udp_ports:
            lines.append(f'inputs = ["udp://127.0.0.1:{udp_ports[meeting]}"]')
    return "\n".join(lines) + "\n"


def request(port, path, headers=None):
    """GET with headers -> (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def stream_key(port, meeting):
    status, body = request(port, f"/api/meetings/{meeting}", {"Authorization": f"Bearer {ADMIN}"})
    if status != 200:
        raise harness.BenchError(f"meeting {meeting}: HTTP {status}")
    return json.loads(body)["stream_key"]


def srt_url(srt_port, meeting, key):
    return (f"srt://127.0.0.1:{srt_port}?streamid={meeting}?key={key}"
            f"&latency={LATENCY_US}&pkt_size=1316")


def publish(procs, clip, url, log, cpu=None):
    """ffmpeg looping the clip in real time as MPEG-TS to url (SRT or UDP)."""
    head = ["taskset", "-c", str(cpu)] if cpu is not None else []
    argv = head + ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
                   "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts", url]
    return procs.start(argv, log)


def pdt_ms(text):
    """Unix ms of a PROGRAM-DATE-TIME, or None."""
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def summary(values):
    """parse.summarize with the 90th percentile."""
    out = parse.summarize(values)
    if values:
        out["p90"] = parse.percentile(values, 0.9)
    return out


def media_hash(segment):
    """The hash of a segment's packets but the timeline marker's and captions' (their
    dates are each meeting's own)."""
    digest = hashlib.sha256()
    for at in range(0, len(segment) - 187, 188):
        pid = ((segment[at + 1] & 0x1F) << 8) | segment[at + 2]
        if pid not in (0x1FF0, 0x1FF1):
            digest.update(segment[at:at + 188])
    return digest.hexdigest()


def metrics(port):
    status, body = request(port, "/metrics")
    return body.decode() if status == 200 else ""


def metric_sum(text, name):
    """The sum of every sample of `name` in Prometheus text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def cc_errors(text):
    """The MC's TS continuity errors over every input: the holes dropped packets left."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("brdyun_input_damage_total{") and 'kind="cc_errors"' in line)


def run_latency(procs, binary, work, clip, seconds):
    srt_port, udp_port = harness.free_port(harness.socket.SOCK_DGRAM), harness.free_port(harness.socket.SOCK_DGRAM)
    config = mc_config(os.path.join(work, "mc-lat"), srt_port, ["over_udp", "over_srt"], {"over_udp": udp_port})
    proc, port = harness.start_role(procs, binary, work, "mc-lat", config, role="mc")
    key = stream_key(port, "over_srt")
    tee = f"[f=mpegts:onfail=ignore]udp://127.0.0.1:{udp_port}?pkt_size=1316|[f=mpegts:onfail=ignore]{srt_url(srt_port, 'over_srt', key)}"
    feeder = procs.start(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-stream_loop", "-1",
                          "-i", clip, "-map", "0", "-c", "copy", "-f", "tee", tee],
                         os.path.join(work, "feeder-lat.log"))
    listed = {"over_udp": {}, "over_srt": {}}  # meeting -> media hash -> (listed ms, pdt ms, duration ms)
    known = {"over_udp": set(), "over_srt": set()}
    deadline = time.time() + seconds
    while time.time() < deadline:
        if feeder.poll() is not None:
            raise harness.BenchError("the feeder ended")
        for meeting in listed:
            status, body = request(port, f"/{meeting}/mono.m3u8", AS_NODE)
            now = time.time() * 1000
            if status != 200:
                continue
            playlist = parse.parse_media_playlist(body.decode())
            for seg in playlist.segments:
                if seg.uri in known[meeting]:
                    continue
                known[meeting].add(seg.uri)
                got, data = request(port, f"/{meeting}/{seg.uri}", AS_NODE)
                if got == 200 and pdt_ms(seg.program_date_time) is not None:
                    listed[meeting][media_hash(data)] = (now, pdt_ms(seg.program_date_time), seg.duration_s * 1000)
        time.sleep(0.02)
    procs.stop(feeder)
    procs.stop(proc)
    # The first segment each meeting lists was there before polling began.
    common = [h for h in listed["over_udp"] if h in listed["over_srt"]]
    common.sort(key=lambda h: listed["over_udp"][h][1])
    common = common[1:]
    added = [listed["over_srt"][h][0] - listed["over_udp"][h][0] for h in common]
    udp_after_end = [listed["over_udp"][h][0] - (listed["over_udp"][h][1] + listed["over_udp"][h][2]) for h in common]
    srt_after_end = [listed["over_srt"][h][0] - (listed["over_udp"][h][1] + listed["over_udp"][h][2]) for h in common]
    result = {
        "segments_matched": len(common),
        "srt_minus_udp_ms": summary(added),
        "udp_listed_after_media_end_ms": summary(udp_after_end),
        "srt_listed_after_media_end_ms": summary(srt_after_end),
    }
    print(f"latency: {len(common)} segments listed on both meetings; SRT (latency 120 ms) after UDP: "
          f"p50 {result['srt_minus_udp_ms']['p50']:.0f} ms, p90 {result['srt_minus_udp_ms']['p90']:.0f} ms, "
          f"max {result['srt_minus_udp_ms']['max']:.0f} ms; listed after the media's end: UDP p50 "
          f"{result['udp_listed_after_media_end_ms']['p50']:.0f} ms, SRT p50 {result['srt_listed_after_media_end_ms']['p50']:.0f} ms")
    return result


def cpu_of(pid, seconds):
    before = harness.process_cpu_s(pid)
    time.sleep(seconds)
    return (harness.process_cpu_s(pid) - before) / seconds


def run_cpu(procs, binary, work, clip, count, seconds):
    srt_port = harness.free_port(harness.socket.SOCK_DGRAM)
    udp_ports = {f"u{i}": harness.free_port(harness.socket.SOCK_DGRAM) for i in range(count)}
    srt_meetings = [f"s{i}" for i in range(count)]
    config = mc_config(os.path.join(work, "mc-cpu"), srt_port, srt_meetings + list(udp_ports), udp_ports)
    proc, port = harness.start_role(procs, binary, work, "mc-cpu", config, role="mc")
    time.sleep(3)
    idle = cpu_of(proc.pid, seconds)
    figures = {"idle_cores": idle}
    for kind in ("srt", "udp"):
        feeders = []
        for i in range(count):
            if kind == "srt":
                url = srt_url(srt_port, f"s{i}", stream_key(port, f"s{i}"))
            else:
                url = f"udp://127.0.0.1:{udp_ports[f'u{i}']}?pkt_size=1316"
            feeders.append(publish(procs, clip, url, os.path.join(work, f"cpu-{kind}-{i}.log")))
        time.sleep(5)  # connected, cutting
        busy = cpu_of(proc.pid, seconds)
        for feeder in feeders:
            if feeder.poll() is not None:
                raise harness.BenchError(f"a {kind} feeder ended")
            procs.stop(feeder)
        figures[kind] = {"cores": busy, "per_publisher_percent_of_a_core": (busy - idle) * 100 / count}
        time.sleep(3)
    procs.stop(proc)
    ratio = figures["srt"]["per_publisher_percent_of_a_core"] / max(figures["udp"]["per_publisher_percent_of_a_core"], 1e-9)
    figures["srt_over_udp"] = ratio
    print(f"cpu: {count} publishers at 6 Mbit/s for {seconds} s each: MC per SRT publisher "
          f"{figures['srt']['per_publisher_percent_of_a_core']:.2f} % of a core, per UDP feed "
          f"{figures['udp']['per_publisher_percent_of_a_core']:.2f} % ({ratio:.2f}x); idle MC {idle * 100:.2f} %")
    return figures


def run_capacity(procs, binary, work, clip, step, most, seconds):
    srt_port = harness.free_port(harness.socket.SOCK_DGRAM)
    meetings = [f"c{i}" for i in range(most)]
    config = mc_config(os.path.join(work, "mc-cap"), srt_port, meetings)
    path = os.path.join(work, "mc-cap.toml")
    with open(path, "w", encoding="utf-8") as out:
        out.write(config)
    log = os.path.join(work, "mc-cap.log")
    proc = procs.start(["taskset", "-c", "1", binary, "mc", "--config", path], log,
                       env={**os.environ, "RUST_LOG": "warn"})

    def listening():
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("listening http="):
                    return parse.parse_listening(line)[1]
        return None

    port = harness.wait_until("the MC to listen", listening, 30, 0.05)
    keys = {m: stream_key(port, m) for m in meetings}
    steps, held = [], 0
    running = 0
    while running < most:
        for i in range(running, min(running + step, most)):
            publish(procs, clip, srt_url(srt_port, f"c{i}", keys[f"c{i}"]), os.path.join(work, f"cap-{i}.log"), cpu=0)
        running = min(running + step, most)
        time.sleep(6)  # connected, cutting
        text = metrics(port)
        dropped_before = metric_sum(text, "brdyun_srt_link_packets_dropped_total")
        holes_before = cc_errors(text)
        cpu_before = harness.process_cpu_s(proc.pid)
        worst_age, started = 0.0, time.time()
        while time.time() - started < seconds:
            now = time.time() * 1000
            for meeting in meetings[:running]:
                status, body = request(port, f"/{meeting}/mono.m3u8", AS_NODE)
                segs = parse.parse_media_playlist(body.decode()).segments if status == 200 else []
                if not segs or pdt_ms(segs[-1].program_date_time) is None:
                    worst_age = float("inf")
                    continue
                last = segs[-1]
                worst_age = max(worst_age, now - (pdt_ms(last.program_date_time) + last.duration_s * 1000))
            time.sleep(0.5)
        busy = (harness.process_cpu_s(proc.pid) - cpu_before) / (time.time() - started)
        text = metrics(port)
        dropped = metric_sum(text, "brdyun_srt_link_packets_dropped_total") - dropped_before
        holes = cc_errors(text) - holes_before
        links = sum(1 for line in text.splitlines() if line.startswith("brdyun_srt_link_packets_received_total{"))
        ok = worst_age < 3000 and holes == 0 and busy < 0.9 and links == running
        steps.append({"publishers": running, "links": links, "core_busy": busy, "worst_segment_age_ms": worst_age,
                      "packets_dropped": dropped, "ts_continuity_errors": holes, "held": ok})
        print(f"capacity: {running:3d} SRT publishers at 3 Mbit/s: {links} links, MC core {busy * 100:5.1f} % busy, "
              f"newest segment at most {worst_age:.0f} ms old, {dropped:.0f} packets dropped "
              f"({holes:.0f} TS continuity errors): {'held' if ok else 'NOT held'}")
        if not ok:
            break
        held = running
    procs.stop_all()
    return {"steps": steps, "most_held": held, "step_seconds": seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=os.path.join(REPO, "target/release/brdyun"))
    parser.add_argument("--only", choices=["latency", "cpu", "capacity"])
    parser.add_argument("--seconds", type=int, default=40, help="latency run and each cpu part")
    parser.add_argument("--publishers", type=int, default=4, help="cpu: publishers of each kind")
    parser.add_argument("--step", type=int, default=4, help="capacity: publishers added per step")
    parser.add_argument("--max", type=int, default=40, help="capacity: the most publishers tried")
    parser.add_argument("--step-seconds", type=int, default=15)
    args = parser.parse_args()
    out_path = os.path.join(HERE, "srt_results.json")
    results = {}
    if os.path.exists(out_path):
        with open(out_path, encoding="utf-8") as f:
            results = json.load(f)
    procs = harness.Processes()
    try:
        with tempfile.TemporaryDirectory(prefix="brdyun-srt-bench-") as work:
            clip3, clip6 = os.path.join(work, "clip3.mp4"), os.path.join(work, "clip6.mp4")
            if args.only in (None, "latency", "capacity"):
                make_clip(clip3, 3000)
            if args.only in (None, "cpu"):
                make_clip(clip6, 6000)
            stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            if args.only in (None, "latency"):
                results["latency"] = {"at": stamp, **run_latency(procs, args.binary, work, clip3, args.seconds)}
                procs.stop_all()
            if args.only in (None, "cpu"):
                results["cpu"] = {"at": stamp, "publishers": args.publishers, "seconds": args.seconds,
                                  **run_cpu(procs, args.binary, work, clip6, args.publishers, args.seconds)}
                procs.stop_all()
            if args.only in (None, "capacity"):
                results["capacity"] = {"at": stamp, **run_capacity(procs, args.binary, work, clip3, args.step,
                                                                   args.max, args.step_seconds)}
    finally:
        procs.stop_all()
    results["machine"] = {"cpus": os.cpu_count(), "load_average_after": os.getloadavg()}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    try:
        main()
    except harness.BenchError as error:
        print(f"srt: {error}", file=sys.stderr)
        sys.exit(1)
