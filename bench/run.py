#!/usr/bin/env python3
"""Benchmark harness for brdyun, "live ingest -> HLS" (Python 3 stdlib only).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/run.py            # full run, about 5 minutes, bound < 8 minutes
    python3 bench/run.py --quick    # smoke check: 3 s wrk runs, 6 streams, ~2 minutes
    python3 bench/run.py --self-test   # unit tests of the parsers (bench/test_parse.py)

Options: --binary PATH (default target/release/brdyun), --only delivery,latency,memory,
--out FILE (default bench/results.json), --keep-tmp (keep logs and configs).

It prints one table per benchmark, then a final Markdown table of figures and
brdyun/nginx ratios, and writes the same figures (plus the raw runs, commands and
environment) to bench/results.json. Every process it starts (brdyun, ffmpeg, nginx)
runs in its own process group and is stopped in a `finally`, error or not. Only
127.0.0.1 is used; ports are picked free at run time.

What is measured, and how:

1. Segment delivery. A 20 s 1280x720 testsrc2 clip, H.264 CBR 3000 kbit/s
   (x264 nal-hrd=cbr, GOP 2 s) + AAC 128 kbit/s = ~3.2 Mbit/s, is made with ffmpeg
   and looped in real time into a node over UDP
   (`ffmpeg -re -stream_loop -1 -i clip.mp4 -c copy -f mpegts udp://127.0.0.1:P?pkt_size=1316`;
   MP4 because a TS source loses its first IDR at each loop, see harness.make_clip)
   (through ffmpeg's tee muxer, which also sends a copy to this script, see 3b),
   so a 2 s segment is ~800 KB. The node's window is 600 s so the chosen segment
   stays available. One segment from the playlist is fetched, its exact bytes are
   saved in an nginx docroot, both answers are checked byte-identical (sha256), then
   `wrk -t2 -c16 -d10s --latency` and `-c128` hit brdyun's /m/seg-N.ts and nginx's
   /seg.ts. nginx is Debian's /usr/sbin/nginx with a minimal config:
   `worker_processes 2` (the machine has 2 cores; brdyun's tokio runtime also uses 2
   workers), sendfile on, tcp_nopush on, access_log off, keepalive_requests 1000000
   (so nginx, like hyper, never closes a wrk keep-alive connection). wrk runs on the
   same 2 cores as the server under test, for both servers alike.
   Figures: req/s, MiB/s (wrk's Transfer/sec, 1024-based, headers included), p99
   latency, and the brdyun/nginx ratio.
2. Playlist delivery. The same with /m/mono.m3u8; nginx serves a copy of its text
   taken just before the runs. brdyun's live playlist grows by one line pair per
   segment during the runs (window 600 s), so its size at both ends is reported.
3. Ingest-to-playlist latency. While the UDP feed runs (before the wrk runs), the
   media playlist is polled every 5 ms over one keep-alive connection, recording
   the time each new segment number is first seen.
   a) If /metrics exposes a segment-publish histogram (a `# TYPE ... histogram` whose
      name contains "publish", e.g. brdyun_segment_publish_seconds), the delta of that
      histogram over the polling window is reported (mean, p50, p99).
   b) Keyframe arrival -> playlist: ffmpeg's tee muxer sends the same TS to a second
      UDP port that this script reads, stamping each datagram with the kernel receive
      time (SO_TIMESTAMPNS) and noting the video keyframe starts (PUSI + random access
      indicator + video PES). A segment is complete when the keyframe opening the next
      one arrives, so delay = first appearance - arrival of the latest keyframe before
      it. This is end-to-end on one clock: demux, the wait for the rest of the cut
      point's data (e.g. audio the source interleaves late), segmenting, publishing,
      plus up to one poll period (reported). "ambiguous pairings" counts appearances
      not separated by exactly one keyframe (then the figure would be a guess).
   c) Regularity, which needs no second clock: (time between consecutive first
      appearances) - (EXTINF of the newer segment), and each appearance's offset from
      the media timeline (first appearance + the EXTINF sum); the spread of these is
      the jitter a player sees, and the feeder's own pacing (ffmpeg -re) is part of it.
4. Memory. Two nodes, each with `builtin://meeting` streams (a looped 450 kbit/s
   clip), window 60 s, 2 s segments: one with 1 stream, one with 21 streams, run side
   by side for 70 s (windows full), then VmRSS from /proc/PID/status:
   per stream = (RSS21 - RSS1) / 20. Then on the 1-stream node, 1000 TCP
   connections each send `GET /m/index.m3u8 HTTP/1.1` (keep-alive), read the whole
   answer and stay idle; (RSS after - RSS before) / 1000 = bytes per idle viewer
   connection (RLIMIT_NOFILE is raised first; how many stayed open is reported).

The load average and the number of running compiler processes (other work on the
same 2 cores skews every figure) are printed at the start and the end.

--quick shortens wrk runs to 3 s, latency polling to 15 s, memory to 6 streams
after 25 s (windows not yet full) and 200 idle connections: a smoke check only.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import parse  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)
STREAM = "m"


def mib(value):
    return value / (1024 * 1024)


def fmt(value, digits=1):
    """A number for a table cell; '-' when missing."""
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def print_table(title, header, rows):
    """Prints a plain aligned table to stdout."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print(f"\n== {title}")
    for index, row in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if index == 0:
            print("  ".join("-" * w for w in widths))
    sys.stdout.flush()


def wrk_pair(brdyun, brdyun_path, nginx, nginx_path, connections, seconds):
    """Runs wrk against brdyun then nginx with the same settings; returns the record,
    with each server's CPU time per request (its process and children, from /proc)."""
    record = {"connections": connections, "seconds": seconds}
    for who, server, path in (("brdyun", brdyun, brdyun_path), ("nginx", nginx, nginx_path)):
        cpu_before = harness.process_cpu_s(server.proc.pid)
        argv, result = harness.run_wrk(server.port, path, connections, seconds)
        cpu = harness.process_cpu_s(server.proc.pid) - cpu_before
        record[who] = {"command": " ".join(argv), **result.__dict__, "errors": result.errors,
                       "cpu_us_per_request": cpu * 1e6 / result.requests if result.requests else None}  # fmt: skip
    return record


def wrk_rows(label, runs):
    rows = []
    for run in runs:
        for who in ("brdyun", "nginx"):
            r = run[who]
            rows.append([
                label, who, run["connections"], fmt(r["requests_per_s"], 0), fmt(mib(r["bytes_per_s"])),
                fmt(r["latency_p50_s"] * 1e3, 2), fmt(r["latency_p99_s"] * 1e3, 2),
                fmt(r["latency_max_s"] * 1e3, 1), fmt(r.get("cpu_us_per_request"), 2), r["errors"],
            ])  # fmt: skip
    return rows


WRK_HEADER = ["target", "server", "conns", "req/s", "MiB/s", "p50 ms", "p99 ms", "max ms", "CPU us/req", "errors"]


def bench_delivery(node, nginx, args):
    """Benchmarks 1 and 2: segment and playlist delivery, brdyun vs nginx."""
    text, playlist = node.wait_segments(STREAM, 3, 60)
    # Among the newest segments (skipping the very first, which may start mid-GOP),
    # take the one closest to the nominal 800 KB (2 s at ~3.2 Mbit/s).
    candidates = playlist.segments[1:] or playlist.segments
    choice = None
    for segment in reversed(candidates[-4:]):
        status, body = harness.http_get(node.port, f"/{STREAM}/{segment.uri}")
        if status == 200 and (choice is None or abs(len(body) - 800_000) < abs(len(choice[1]) - 800_000)):
            choice = (segment, body)
    if choice is None:
        raise BenchError("no segment could be fetched from the node")
    segment, seg_bytes = choice
    seg_path = f"/{STREAM}/{segment.uri}"
    nginx_seg = nginx.put("seg.ts", seg_bytes)
    same = harness.sha256(harness.http_get(nginx.port, nginx_seg)[1]) == harness.sha256(seg_bytes)
    if not same:
        raise BenchError("nginx does not serve the segment's exact bytes")
    seg_runs = [
        wrk_pair(node, seg_path, nginx, nginx_seg, conns, args.wrk_seconds) for conns in (16, 128)
    ]
    status_after, body_after = harness.http_get(node.port, seg_path)
    still_same = status_after == 200 and harness.sha256(body_after) == harness.sha256(seg_bytes)
    print_table(
        f"1. segment delivery: msn {segment.msn}, {len(seg_bytes):,} bytes, EXTINF {segment.duration_s:.3f}s",
        WRK_HEADER,
        wrk_rows("segment", seg_runs),
    )
    if not still_same:
        print("  WARNING: the segment changed or vanished during the runs")

    status, pl_body = harness.http_get(node.port, f"/{STREAM}/mono.m3u8")
    if status != 200:
        raise BenchError(f"playlist answered {status}")
    nginx_pl = nginx.put("mono.m3u8", pl_body)
    pl_runs = [
        wrk_pair(node, f"/{STREAM}/mono.m3u8", nginx, nginx_pl, conns, args.wrk_seconds)
        for conns in (16, 128)
    ]
    pl_end = harness.http_get(node.port, f"/{STREAM}/mono.m3u8")[1]
    print_table(
        f"2. playlist delivery: {len(pl_body):,} bytes at start, {len(pl_end):,} bytes at end "
        f"(nginx: static copy of {len(pl_body):,} bytes)",
        WRK_HEADER,
        wrk_rows("playlist", pl_runs),
    )
    return {
        "segment": {
            "msn": segment.msn,
            "bytes": len(seg_bytes),
            "extinf_s": segment.duration_s,
            "sha256": harness.sha256(seg_bytes),
            "unchanged_after_runs": still_same,
            "runs": seg_runs,
        },
        "playlist": {
            "bytes_at_start": len(pl_body),
            "bytes_at_end": len(pl_end),
            "segments_at_start": len(parse.parse_media_playlist(pl_body.decode("utf-8", "replace")).segments),
            "runs": pl_runs,
        },
    }


def publish_histogram_name(metrics_text):
    """The segment-publish histogram's name if /metrics has one, else None."""
    names = parse.find_histograms(metrics_text)
    for name in names:
        if name == "brdyun_segment_publish_seconds":
            return name
    for name in names:
        if "publish" in name or ("segment" in name and "latency" in name):
            return name
    return None


def scrape_metrics(port):
    status, body = harness.http_get(port, "/metrics")
    return body.decode("utf-8", "replace") if status == 200 else ""


def bench_latency(node, clock, args):
    """Benchmark 3: ingest-to-playlist latency or, without a metric, publication regularity."""
    node.wait_segments(STREAM, 2, 60)
    metrics_before = scrape_metrics(node.port)
    poller = harness.Poller(node.port)
    first_seen, durations = {}, {}
    baseline = None
    polls, failures = 0, 0
    start = time.monotonic()
    deadline = start + args.latency_seconds
    try:
        while time.monotonic() < deadline:
            tick = time.monotonic()
            status, body = poller.get(f"/{STREAM}/mono.m3u8")
            seen_at = time.time()  # same clock as the keyframe arrival stamps
            polls += 1
            if status == 200:
                try:
                    playlist = parse.parse_media_playlist(body.decode("utf-8", "replace"))
                except (parse.ParseError, ValueError):
                    playlist = None
                    failures += 1
                if playlist is not None:
                    msns = {s.msn for s in playlist.segments}
                    if baseline is None:
                        baseline = msns  # already there before we looked: no timing
                    for seg in playlist.segments:
                        durations.setdefault(seg.msn, seg.duration_s)
                        if seg.msn not in baseline and seg.msn not in first_seen:
                            first_seen[seg.msn] = seen_at
            else:
                failures += 1
            time.sleep(max(0.0, 0.005 - (time.monotonic() - tick)))
    finally:
        poller.close()
    elapsed = time.monotonic() - start
    metrics_after = scrape_metrics(node.port)
    result = {
        "seconds": elapsed,
        "polls": polls,
        "poll_period_ms": elapsed / polls * 1e3 if polls else None,
        "failed_polls": failures,
        "new_segments": len(first_seen),
    }
    name = publish_histogram_name(metrics_after)
    if name:
        after = parse.parse_histogram(metrics_after, name, {"stream": STREAM})
        after = after or parse.parse_histogram(metrics_after, name)
        before = parse.parse_histogram(metrics_before, name, {"stream": STREAM}) or parse.parse_histogram(
            metrics_before, name
        )
        window = after.minus(before) if before else after
        result["metric"] = {
            "name": name,
            "count": window.count,
            "mean_s": window.mean(),
            "p50_s": window.quantile(0.5),
            "p99_s": window.quantile(0.99),
        }
    rows = parse.appearance_intervals(first_seen, durations)
    deviations = [(interval - extinf) * 1e3 for _, interval, extinf in rows]
    result["intervals"] = [{"msn": m, "interval_s": i, "extinf_s": e} for m, i, e in rows]
    result["deviation_ms"] = parse.summarize(deviations)
    delays, ambiguous = parse.publish_delays(first_seen, list(clock.keyframes))
    result["keyframes_received"] = len(clock.keyframes)
    result["publish_delays"] = [{"msn": m, "delay_s": d} for m, d in delays]
    result["publish_delay_ms"] = parse.summarize([d * 1e3 for _, d in delays])
    result["publish_delay_ambiguous_pairs"] = ambiguous
    offsets = parse.timeline_offsets(first_seen, durations) or []
    offset_ms = [o * 1e3 for _, o in offsets]
    result["timeline_offsets"] = [{"msn": m, "offset_s": o} for m, o in offsets]
    result["timeline_offset_ms"] = parse.summarize(offset_ms)
    result["timeline_offset_peak_to_peak_ms"] = max(offset_ms) - min(offset_ms) if offset_ms else None
    result["abs_deviation_ms"] = parse.summarize([abs(d) for d in deviations])
    table = [
        ["poll period (achieved)", fmt(result["poll_period_ms"], 2) + " ms"],
        ["new segments observed", len(first_seen)],
        ["failed polls", failures],
    ]
    if "metric" in result:
        m = result["metric"]
        table += [
            [f"{name} count", fmt(m["count"], 0)],
            [f"{name} mean", fmt(ms(m["mean_s"]), 2) + " ms"],
            [f"{name} p50 (bucket interp.)", fmt(ms(m["p50_s"]), 2) + " ms"],
            [f"{name} p99 (bucket interp.)", fmt(ms(m["p99_s"]), 2) + " ms"],
        ]
    else:
        table.append(["publish histogram in /metrics", "absent: polling figures below"])
    p = result["publish_delay_ms"]
    table += [
        ["video keyframes received by the tee copy", len(clock.keyframes)],
        ["keyframe arrival -> playlist: mean", fmt(p.get("mean"), 2) + " ms"],
        ["keyframe arrival -> playlist: p50", fmt(p.get("p50"), 2) + " ms"],
        ["keyframe arrival -> playlist: p99", fmt(p.get("p99"), 2) + " ms"],
        ["keyframe arrival -> playlist: max", fmt(p.get("max"), 2) + " ms"],
        ["ambiguous keyframe pairings", ambiguous],
    ]
    d, a = result["deviation_ms"], result["abs_deviation_ms"]
    table += [
        ["appearance interval - EXTINF: mean", fmt(d.get("mean"), 2) + " ms"],
        ["appearance interval - EXTINF: stdev", fmt(d.get("stdev"), 2) + " ms"],
        ["|appearance interval - EXTINF|: p99", fmt(a.get("p99"), 2) + " ms"],
        ["|appearance interval - EXTINF|: max", fmt(a.get("max"), 2) + " ms"],
        ["offset from media timeline: stdev", fmt(result["timeline_offset_ms"].get("stdev"), 2) + " ms"],
        ["offset from media timeline: peak-to-peak", fmt(result["timeline_offset_peak_to_peak_ms"], 2) + " ms"],
        ["offset from media timeline: last (drift)", fmt(offset_ms[-1] if offset_ms else None, 2) + " ms"],
    ]
    print_table(f"3. ingest-to-playlist ({elapsed:.0f}s of polling)", ["figure", "value"], table)
    return result


def ms(seconds):
    return None if seconds is None else seconds * 1e3


def open_idle_connections(port, count):
    """Opens `count` keep-alive connections, one full index.m3u8 exchange each."""
    socks, statuses = [], {}
    request = f"GET /{STREAM}/index.m3u8 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n".encode()
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        socks.append(sock)
        sock.sendall(request)
        status, _ = harness.read_http_response(sock)
        statuses[status] = statuses.get(status, 0) + 1
    return socks, statuses


def settle_rss(node, samples=5, gap_s=0.4):
    """The median of a few RSS readings, to damp allocator noise."""
    values = []
    for _ in range(samples):
        values.append(node.rss_kib())
        time.sleep(gap_s)
    return sorted(values)[len(values) // 2]


def bench_memory(procs, binary, tmp, args):
    """Benchmark 4: RSS per stream and per idle viewer connection."""
    many = args.streams
    one = harness.Node(procs, binary, os.path.join(tmp, "mem1"), "mem1", [(STREAM, ["builtin://meeting"])], 60, 2)
    streams = [(STREAM if i == 1 else f"s{i}", ["builtin://meeting"]) for i in range(1, many + 1)]
    big = harness.Node(procs, binary, os.path.join(tmp, f"mem{many}"), f"mem{many}", streams, 60, 2)
    time.sleep(args.memory_seconds)
    for node in (one, big):
        if node.proc.poll() is not None:
            raise BenchError(f"a memory node exited: {node.log_tail()}")
    rss1, rss_many = settle_rss(one), settle_rss(big)
    counts = []
    for stream, _ in streams:
        got = big.playlist(stream)
        counts.append(len(got[1].segments) if got else 0)
    procs.stop(big.proc)
    per_stream_kib = (rss_many - rss1) / (many - 1)

    before = settle_rss(one)
    socks, statuses = [], {}
    try:
        socks, statuses = open_idle_connections(one.port, args.connections)
        time.sleep(2)
        after = settle_rss(one)
        open_count = sum(1 for s in socks if harness.still_open(s))
    finally:
        for sock in socks:
            sock.close()
    per_conn_bytes = (after - before) * 1024 / args.connections
    result = {
        "seconds_before_measure": args.memory_seconds,
        "rss_1_stream_kib": rss1,
        f"rss_{many}_streams_kib": rss_many,
        "streams": many,
        "per_stream_kib": per_stream_kib,
        "segments_per_playlist_min": min(counts),
        "segments_per_playlist_max": max(counts),
        "idle_connections": args.connections,
        "idle_connection_statuses": statuses,
        "idle_connections_still_open": open_count,
        "rss_before_connections_kib": before,
        "rss_with_connections_kib": after,
        "per_idle_connection_bytes": per_conn_bytes,
    }
    print_table(
        f"4. memory (window 60 s, 2 s segments, measured after {args.memory_seconds:.0f}s)",
        ["figure", "value"],
        [
            ["RSS, 1 builtin stream", f"{rss1 / 1024:.1f} MiB"],
            [f"RSS, {many} builtin streams", f"{rss_many / 1024:.1f} MiB"],
            [f"per stream (RSS{many} - RSS1) / {many - 1}", f"{per_stream_kib:,.0f} KiB"],
            [f"segments per playlist ({many}-stream node)", f"{min(counts)}..{max(counts)}"],
            [f"RSS before {args.connections} idle connections", f"{before / 1024:.1f} MiB"],
            [f"RSS with {args.connections} idle connections", f"{after / 1024:.1f} MiB"],
            ["per idle connection", f"{per_conn_bytes:,.0f} bytes"],
            ["answers (status: count)", ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))],
            ["connections still open at measurement", open_count],
        ],
    )
    return result


def summary_rows(results):
    """The final Markdown table: figure, brdyun, nginx, brdyun/nginx."""
    rows = []
    delivery = results.get("delivery")
    if delivery:
        for key, label in (("segment", "segment"), ("playlist", "playlist")):
            part = delivery[key]
            size = part.get("bytes") or part.get("bytes_at_start")
            for run in part["runs"]:
                b, n = run["brdyun"], run["nginx"]
                what = f"{label} {size / 1000:,.0f} KB, c{run['connections']}"
                for metric, get, digits in (
                    ("req/s", lambda r: r["requests_per_s"], 0),
                    ("MiB/s", lambda r: mib(r["bytes_per_s"]), 1),
                    ("p99 ms", lambda r: r["latency_p99_s"] * 1e3, 2),
                    ("CPU us/request", lambda r: r.get("cpu_us_per_request"), 2),
                ):
                    rows.append([f"{what}: {metric}", fmt(get(b), digits), fmt(get(n), digits),
                                 fmt(parse.ratio(get(b), get(n)), 2)])  # fmt: skip
    latency = results.get("latency")
    if latency:
        metric = latency.get("metric")
        if metric:
            rows.append([f"ingest->playlist {metric['name']} mean ms", fmt(ms(metric["mean_s"]), 2), "-", "-"])
            rows.append([f"ingest->playlist {metric['name']} p99 ms", fmt(ms(metric["p99_s"]), 2), "-", "-"])
        p = latency["publish_delay_ms"]
        rows.append(["keyframe arrival -> segment in playlist, p50 ms", fmt(p.get("p50"), 2), "-", "-"])
        rows.append(["keyframe arrival -> segment in playlist, p99 ms", fmt(p.get("p99"), 2), "-", "-"])
        d, a = latency["deviation_ms"], latency["abs_deviation_ms"]
        rows.append(["segment appearance interval - EXTINF, stdev ms", fmt(d.get("stdev"), 2), "-", "-"])
        rows.append(["segment appearance interval - EXTINF, p99 abs ms", fmt(a.get("p99"), 2), "-", "-"])
        rows.append(["segment appearance vs media timeline, peak-to-peak ms",
                     fmt(latency.get("timeline_offset_peak_to_peak_ms"), 2), "-", "-"])  # fmt: skip
    memory = results.get("memory")
    if memory:
        many = memory["streams"]
        rows.append(["RSS, 1 stream (MiB)", fmt(memory["rss_1_stream_kib"] / 1024), "-", "-"])
        rows.append([f"RSS, {many} streams (MiB)", fmt(memory[f"rss_{many}_streams_kib"] / 1024), "-", "-"])
        rows.append(["RSS per stream (KiB)", fmt(memory["per_stream_kib"], 0), "-", "-"])
        rows.append(["RSS per idle connection (bytes)", fmt(memory["per_idle_connection_bytes"], 0), "-", "-"])
    return rows


def print_markdown(rows):
    print("\n| figure | brdyun | nginx | brdyun/nginx |\n|---|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    sys.stdout.flush()


def environment(binary):
    def out(argv):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
            return (done.stdout or done.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return None

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "git_head": out(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]),
        "git_dirty": bool(out(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])),
        "binary": binary,
        "binary_mtime": datetime.datetime.fromtimestamp(os.path.getmtime(binary)).isoformat(timespec="seconds"),
        "nginx": out(["nginx", "-v"]),
        "nginx_worker_processes": harness.NGINX_WORKERS,
        "wrk": out(["wrk", "-v"]),
        "ffmpeg": out(["ffmpeg", "-version"]),
    }


def machine_load():
    """Load average and running compilers: other work on the 2 cores skews every figure."""
    try:
        done = subprocess.run(["pgrep", "-c", "-x", "rustc|cargo|cc1|cc1plus|ld"],
                              capture_output=True, text=True, timeout=5, check=False)  # fmt: skip
        builds = int(done.stdout.strip() or 0)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        builds = None
    return {"loadavg": os.getloadavg(), "compiler_processes": builds}


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def options(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "release", "brdyun"))
    parser.add_argument("--only", default="delivery,latency,memory")
    parser.add_argument("--out", default=os.path.join(HERE, "results.json"))
    parser.add_argument("--keep-tmp", action="store_true")
    parser.add_argument("--self-test", action="store_true", help="run bench/test_parse.py and exit")
    args = parser.parse_args(argv)
    args.only = {part.strip() for part in args.only.split(",") if part.strip()}
    unknown = args.only - {"delivery", "latency", "memory"}
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    args.wrk_seconds = 3 if args.quick else 10
    args.latency_seconds = 15 if args.quick else 60
    args.memory_seconds = 25 if args.quick else 70
    args.streams = 6 if args.quick else 21
    args.connections = 200 if args.quick else 1000
    return args


def self_test():
    import unittest

    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
    return 0 if unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful() else 1


def run(args):
    if not os.access(args.binary, os.X_OK):
        raise BenchError(f"{args.binary} is not built (cargo build --release)")
    harness.ensure_tools(need_apt=os.geteuid() == 0)
    nofile = raise_nofile(args.connections + 4096)
    results = {"quick": args.quick, "environment": environment(args.binary), "rlimit_nofile": nofile}
    results["load_at_start"] = machine_load()
    procs = harness.Processes()
    tmp = tempfile.mkdtemp(prefix="brdyun-bench-")
    started = time.monotonic()
    try:
        if args.only & {"delivery", "latency"}:
            clip = os.path.join(tmp, "clip.mp4")
            harness.make_clip(clip)
            udp_port = harness.free_port(socket.SOCK_DGRAM)
            node = harness.Node(
                procs, args.binary, os.path.join(tmp, "live"), "bench", [(STREAM, [f"udp://127.0.0.1:{udp_port}"])], 600
            )
            clock = harness.KeyframeClock()
            harness.start_udp_feeder(procs, clip, udp_port, os.path.join(tmp, "feeder.log"), clock.port)
            results["clip"] = {"bytes": os.path.getsize(clip), "seconds": 20}
            if "latency" in args.only:
                try:
                    results["latency"] = bench_latency(node, clock, args)
                finally:
                    clock.close()
            else:
                clock.close()
            if "delivery" in args.only:
                nginx = harness.Nginx(procs, os.path.join(tmp, "nginx"))
                results["delivery"] = bench_delivery(node, nginx, args)
            procs.stop_all()
        if "memory" in args.only:
            results["memory"] = bench_memory(procs, args.binary, tmp, args)
    finally:
        procs.stop_all()
        results["runtime_s"] = time.monotonic() - started
        results["load_at_end"] = machine_load()
        if args.keep_tmp:
            print(f"\nlogs and configs kept in {tmp}")
        else:
            subprocess.run(["rm", "-rf", "--", tmp], check=False)
    print_markdown(summary_rows(results))
    for when in ("load_at_start", "load_at_end"):
        load = results[when]
        print(f"{when.replace('_', ' ')}: loadavg {' '.join(f'{x:.2f}' for x in load['loadavg'])}, "
              f"compiler processes {load['compiler_processes']}")  # fmt: skip
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(results, out, indent=2, sort_keys=True)
        out.write("\n")
    print(f"\nwrote {args.out} (runtime {results['runtime_s']:.0f}s)")
    return 0


def main(argv=None):
    args = options(sys.argv[1:] if argv is None else argv)
    if args.self_test:
        return self_test()

    def on_term(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        return run(args)
    except BenchError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
