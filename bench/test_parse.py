"""Unit tests of the harness's parsers and statistics (run: python3 bench/run.py --self-test)."""

import math
import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import parse  # noqa: E402

# Real wrk 4.1.0 output (a 1 s run against nginx answering 404).
WRK_404 = """Running 1s test @ http://127.0.0.1:46405/nothere
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   463.63us  824.10us   7.90ms   86.47%
    Req/Sec    56.74k    25.75k   93.76k    52.38%
  Latency Distribution
     50%   84.00us
     75%  325.00us
     90%    1.67ms
     99%    3.69ms
  118299 requests in 1.10s, 34.75MB read
  Non-2xx or 3xx responses: 118299
Requests/sec: 107593.65
Transfer/sec:     31.60MB
"""

WRK_SOCKET_ERRORS = """Running 10s test @ http://127.0.0.1:1/seg.ts
  2 threads and 128 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.02s   200.00ms   2.00s    70.00%
    Req/Sec   100.00     10.00   120.00     80.00%
  Latency Distribution
     50%  990.00ms
     75%     1.10s
     90%     1.50s
     99%     1.90s
  2000 requests in 10.00s, 1.52GB read
  Socket errors: connect 0, read 3, write 1, timeout 7
Requests/sec:    199.90
Transfer/sec:    155.80MB
"""

PLAYLIST = """#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:41
#EXT-X-PROGRAM-DATE-TIME:2025-01-01T00:00:00.000Z
#EXTINF:2.000,
seg-41.ts
#EXTINF:1.960,
seg-42.ts

#EXT-X-PROGRAM-DATE-TIME:2025-01-01T00:00:03.960Z
#EXTINF:2.040,
seg-43.ts
"""

METRICS = """# HELP brdyun_segment_publish_seconds time from last frame to playlist
# TYPE brdyun_segment_publish_seconds histogram
brdyun_segment_publish_seconds_bucket{stream="m",le="0.001"} 2
brdyun_segment_publish_seconds_bucket{stream="m",le="0.01"} 8
brdyun_segment_publish_seconds_bucket{stream="m",le="0.1"} 10
brdyun_segment_publish_seconds_bucket{stream="m",le="+Inf"} 10
brdyun_segment_publish_seconds_sum{stream="m"} 0.05
brdyun_segment_publish_seconds_count{stream="m"} 10
brdyun_segment_publish_seconds_bucket{stream="x",le="0.001"} 0
brdyun_segment_publish_seconds_bucket{stream="x",le="0.01"} 0
brdyun_segment_publish_seconds_bucket{stream="x",le="0.1"} 4
brdyun_segment_publish_seconds_bucket{stream="x",le="+Inf"} 4
brdyun_segment_publish_seconds_sum{stream="x"} 0.2
brdyun_segment_publish_seconds_count{stream="x"} 4
# TYPE brdyun_http_requests_total counter
brdyun_http_requests_total{kind="segment",status="2xx"} 7
"""


class WrkTests(unittest.TestCase):
    def test_real_output(self):
        r = parse.parse_wrk(WRK_404)
        self.assertEqual(r.requests, 118299)
        self.assertAlmostEqual(r.duration_s, 1.10)
        self.assertAlmostEqual(r.requests_per_s, 107593.65)
        self.assertAlmostEqual(r.bytes_per_s, 31.60 * 1024 * 1024)
        self.assertAlmostEqual(r.latency_p50_s, 84e-6)
        self.assertAlmostEqual(r.latency_p99_s, 3.69e-3)
        self.assertAlmostEqual(r.latency_max_s, 7.90e-3)
        self.assertEqual(r.non_2xx, 118299)
        self.assertEqual(r.errors, 118299)

    def test_seconds_and_socket_errors(self):
        r = parse.parse_wrk(WRK_SOCKET_ERRORS)
        self.assertAlmostEqual(r.latency_avg_s, 1.02)
        self.assertAlmostEqual(r.latency_p99_s, 1.90)
        self.assertEqual(r.socket_errors, {"connect": 0, "read": 3, "write": 1, "timeout": 7})
        self.assertEqual(r.errors, 11)

    def test_truncated_output_is_an_error(self):
        with self.assertRaises(parse.ParseError):
            parse.parse_wrk(WRK_404.split("Requests/sec")[0])

    def test_units(self):
        self.assertAlmostEqual(parse.parse_duration("2m"), 120)
        self.assertAlmostEqual(parse.parse_size("512.00B"), 512)
        self.assertAlmostEqual(parse.parse_size("1.50GB"), 1.5 * 1024**3)
        with self.assertRaises(parse.ParseError):
            parse.parse_duration("12 ms")


class PlaylistTests(unittest.TestCase):
    def test_numbers_follow_media_sequence(self):
        p = parse.parse_media_playlist(PLAYLIST)
        self.assertEqual(p.target_duration, 2)
        self.assertEqual([s.msn for s in p.segments], [41, 42, 43])
        self.assertEqual([s.uri for s in p.segments], ["seg-41.ts", "seg-42.ts", "seg-43.ts"])
        self.assertAlmostEqual(p.segments[1].duration_s, 1.96)
        self.assertEqual(p.segments[0].program_date_time, "2025-01-01T00:00:00.000Z")
        self.assertEqual(p.segments[1].program_date_time, "")
        self.assertFalse(p.ended)

    def test_rejects_non_playlists(self):
        for text in ("", "<html>", "#EXTM3U\nseg-1.ts\n", "#EXTM3U\n#EXTINF:2,\nseg-1.ts\n"):
            with self.assertRaises(parse.ParseError):
                parse.parse_media_playlist(text)


class HistogramTests(unittest.TestCase):
    def test_found_filtered_and_summed(self):
        self.assertEqual(parse.find_histograms(METRICS), ["brdyun_segment_publish_seconds"])
        m = parse.parse_histogram(METRICS, "brdyun_segment_publish_seconds", {"stream": "m"})
        self.assertEqual(m.count, 10)
        self.assertAlmostEqual(m.mean(), 0.005)
        # rank 5 lies in (0.001, 0.01] holding observations 3..8: 0.001 + 0.009 * 3/6
        self.assertAlmostEqual(m.quantile(0.5), 0.0055)
        both = parse.parse_histogram(METRICS, "brdyun_segment_publish_seconds")
        self.assertEqual(both.count, 14)
        self.assertIsNone(parse.parse_histogram(METRICS, "absent_seconds"))

    def test_delta_between_scrapes(self):
        later = METRICS.replace('le="+Inf"} 10', 'le="+Inf"} 12').replace(
            'le="0.1"} 10', 'le="0.1"} 12'
        ).replace('_count{stream="m"} 10', '_count{stream="m"} 12').replace('_sum{stream="m"} 0.05', '_sum{stream="m"} 0.15')
        a = parse.parse_histogram(METRICS, "brdyun_segment_publish_seconds", {"stream": "m"})
        b = parse.parse_histogram(later, "brdyun_segment_publish_seconds", {"stream": "m"})
        d = b.minus(a)
        self.assertEqual(d.count, 2)
        self.assertAlmostEqual(d.mean(), 0.05)
        self.assertTrue(0.01 <= d.quantile(0.99) <= 0.1)

    def test_quantile_in_inf_bucket_returns_last_bound(self):
        h = parse.Histogram("x", [(1.0, 0), (math.inf, 5)], 50, 5)
        self.assertEqual(h.quantile(0.99), 1.0)
        self.assertIsNone(parse.Histogram("x", [], 0, 0).quantile(0.5))


class StatsTests(unittest.TestCase):
    def test_percentile_and_summary(self):
        self.assertEqual(parse.percentile([3, 1, 2], 0.5), 2)
        self.assertAlmostEqual(parse.percentile([0, 10], 0.99), 9.9)
        self.assertIsNone(parse.percentile([], 0.5))
        s = parse.summarize([1.0, 3.0])
        self.assertEqual((s["n"], s["mean"], s["stdev"], s["min"], s["max"]), (2, 2.0, 1.0, 1.0, 3.0))
        self.assertEqual(parse.summarize([]), {"n": 0})

    def test_intervals_pair_only_consecutive_segments(self):
        seen = {10: 100.0, 11: 102.1, 13: 106.0, 14: 107.9}
        durations = {10: 2.0, 11: 2.0, 12: 2.0, 13: 2.0, 14: 2.0}
        rows = parse.appearance_intervals(seen, durations)
        self.assertEqual([r[0] for r in rows], [11, 14])
        self.assertAlmostEqual(rows[0][1], 2.1)
        self.assertAlmostEqual(rows[1][1], 1.9)

    def test_timeline_offsets_show_jitter_and_bridge_missed_polls(self):
        seen = {10: 100.0, 11: 102.1, 13: 106.0}
        durations = {11: 2.0, 12: 2.0, 13: 2.0}
        rows = parse.timeline_offsets(seen, durations)
        self.assertEqual([m for m, _ in rows], [10, 11, 13])
        self.assertAlmostEqual(rows[0][1], 0.0)
        self.assertAlmostEqual(rows[1][1], 0.1)
        self.assertAlmostEqual(rows[2][1], 0.0)
        self.assertIsNone(parse.timeline_offsets(seen, {11: 2.0, 13: 2.0}))
        self.assertEqual(parse.timeline_offsets({}, {}), [])

    def test_keyframe_starts_need_rai_pusi_and_a_video_pes(self):
        def packet(pusi, rai, stream_id):
            header = bytes([0x47, 0x40 if pusi else 0x00, 0x100 & 0xFF, 0x30])
            adaptation = bytes([7, 0x40 if rai else 0x00]) + bytes(6)
            payload = b"\x00\x00\x01" + bytes([stream_id])
            return (header + adaptation + payload).ljust(188, b"\xff")

        key = packet(True, True, 0xE0)
        self.assertEqual(parse.video_keyframe_starts(key), 1)
        self.assertEqual(parse.video_keyframe_starts(key * 3), 3)
        for other in (packet(False, True, 0xE0), packet(True, False, 0xE0), packet(True, True, 0xC0)):
            self.assertEqual(parse.video_keyframe_starts(other), 0)
        self.assertEqual(parse.video_keyframe_starts(b"\x47" + bytes(186)), 0)  # short: ignored
        self.assertEqual(parse.video_keyframe_starts(b"\x00" + key[1:]), 0)  # lost sync

    def test_publish_delay_pairs_each_segment_with_its_closing_keyframe(self):
        keyframes = [10.0, 12.0, 14.0, 16.0]
        seen = {5: 12.05, 6: 14.03, 7: 16.5}
        rows, ambiguous = parse.publish_delays(seen, keyframes)
        self.assertEqual([m for m, _ in rows], [5, 6, 7])
        self.assertAlmostEqual(rows[0][1], 0.05)
        self.assertAlmostEqual(rows[1][1], 0.03)
        self.assertAlmostEqual(rows[2][1], 0.5)
        self.assertEqual(ambiguous, 0)
        _, ambiguous = parse.publish_delays({5: 12.05, 6: 16.1}, keyframes)
        self.assertEqual(ambiguous, 1)  # two keyframes between: the pairing is a guess

    def test_small_parsers(self):
        self.assertEqual(parse.parse_vmrss_kib("Name:\tx\nVmRSS:\t   12345 kB\n"), 12345)
        self.assertEqual(
            parse.parse_listening("listening http=127.0.0.1:40123 https=- rtmp=-\n"), ("127.0.0.1", 40123)
        )
        with self.assertRaises(parse.ParseError):
            parse.parse_listening("node started")
        self.assertIsNone(parse.ratio(1, 0))
        self.assertEqual(parse.ratio(1, 4), 0.25)


class HarnessTests(unittest.TestCase):
    def _serve_once(self, answer):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def reply():
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                for i in range(0, len(answer), 7):  # trickle, to exercise partial reads
                    conn.sendall(answer[i : i + 7])
                conn.recv(1)

        thread = threading.Thread(target=reply, daemon=True)
        thread.start()
        client = socket.create_connection(server.getsockname(), timeout=5)
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        try:
            return harness.read_http_response(client), client
        finally:
            server.close()

    def test_reads_content_length_and_chunked(self):
        (status, length), c = self._serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world")
        self.assertEqual((status, length), (200, 11))
        self.assertTrue(harness.still_open(c))
        c.close()
        chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        (status, _), c = self._serve_once(chunked)
        self.assertEqual(status, 404)
        c.close()

    def test_rejects_garbage(self):
        with self.assertRaises(harness.BenchError):
            self._serve_once(b"SSH-2.0-OpenSSH\r\n\r\n")

    def test_node_config_is_the_documented_shape(self):
        text = harness.node_config("n", "/tmp/d", [("m", ["udp://127.0.0.1:5"])], 600, 2)
        self.assertIn('inputs = ["udp://127.0.0.1:5"]', text)
        self.assertIn("window = 600", text)
        self.assertIn("segment_duration = 2", text)


if __name__ == "__main__":
    unittest.main()
