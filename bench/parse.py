"""Pure parsers and statistics for the benchmark harness (no I/O, no processes).

Kept apart from the process orchestration in run.py / harness.py so that every
number the harness reports comes from code covered by bench/test_parse.py.
"""

import math
import re
from dataclasses import dataclass, field

# wrk prints latencies with these units (see wrk's src/units.c: time units).
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# wrk prints transfer sizes with binary (1024-based) prefixes.
_SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
# wrk prints counts such as "Req/Sec 5.00k" with decimal prefixes.
_COUNT_UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}


class ParseError(ValueError):
    """A tool's output did not have the shape the harness relies on."""


def parse_duration(text):
    """Converts a wrk duration such as '1.23ms' or '2.00s' to seconds."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(us|ms|s|m|h)", text.strip())
    if not match:
        raise ParseError(f"not a wrk duration: {text!r}")
    return float(match.group(1)) * _TIME_UNITS[match.group(2)]


def parse_size(text):
    """Converts a wrk size such as '812.34MB' to bytes (wrk uses 1024-based units)."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(B|KB|MB|GB|TB)", text.strip())
    if not match:
        raise ParseError(f"not a wrk size: {text!r}")
    return float(match.group(1)) * _SIZE_UNITS[match.group(2)]


@dataclass
class WrkResult:
    """What one wrk run measured; the fields the report tables are built from."""

    requests: int
    duration_s: float
    requests_per_s: float
    bytes_per_s: float
    latency_avg_s: float
    latency_p50_s: float
    latency_p99_s: float
    latency_max_s: float
    socket_errors: dict = field(default_factory=dict)
    non_2xx: int = 0

    @property
    def errors(self):
        """Every request that did not end in a 2xx/3xx answer, whatever the cause."""
        return self.non_2xx + sum(self.socket_errors.values())


def parse_wrk(output):
    """Parses the text wrk prints with --latency into a WrkResult."""

    def find(pattern, what):
        match = re.search(pattern, output, re.MULTILINE)
        if not match:
            raise ParseError(f"wrk output has no {what}")
        return match

    latency = find(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)\s+\S+\s*$", "latency line")
    p50 = find(r"^\s*50(?:\.0+)?%\s+(\S+)\s*$", "50% latency")
    p99 = find(r"^\s*99(?:\.0+)?%\s+(\S+)\s*$", "99% latency")
    total = find(r"^\s*(\d+) requests in ([0-9.]+\w+), (\S+) read", "request total")
    rps = find(r"^Requests/sec:\s+([0-9.]+)\s*$", "Requests/sec")
    tps = find(r"^Transfer/sec:\s+(\S+)\s*$", "Transfer/sec")
    errors = {}
    sock = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    if sock:
        errors = dict(zip(("connect", "read", "write", "timeout"), map(int, sock.groups())))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return WrkResult(
        requests=int(total.group(1)),
        duration_s=parse_duration(total.group(2)),
        requests_per_s=float(rps.group(1)),
        bytes_per_s=parse_size(tps.group(1)),
        latency_avg_s=parse_duration(latency.group(1)),
        latency_p50_s=parse_duration(p50.group(1)),
        latency_p99_s=parse_duration(p99.group(1)),
        latency_max_s=parse_duration(latency.group(3)),
        socket_errors=errors,
        non_2xx=int(non2xx.group(1)) if non2xx else 0,
    )


@dataclass
class Segment:
    """One media segment line of an HLS media playlist."""

    msn: int
    duration_s: float
    uri: str
    program_date_time: str = ""


@dataclass
class MediaPlaylist:
    """The parts of an HLS media playlist the benchmarks need."""

    target_duration: int
    media_sequence: int
    segments: list
    ended: bool = False


def parse_media_playlist(text):
    """Parses an HLS media playlist; segment numbers follow EXT-X-MEDIA-SEQUENCE."""
    lines = [line.strip() for line in text.splitlines()]
    if not lines or lines[0] != "#EXTM3U":
        raise ParseError("playlist does not start with #EXTM3U")
    target = None
    sequence = 0
    segments = []
    pending_duration = None
    pending_pdt = ""
    ended = False
    for line in lines[1:]:
        if not line:
            continue
        if line.startswith("#EXT-X-TARGETDURATION:"):
            target = int(line.split(":", 1)[1])
        elif line.startswith("#EXT-X-MEDIA-SEQUENCE:"):
            sequence = int(line.split(":", 1)[1])
        elif line.startswith("#EXTINF:"):
            pending_duration = float(line.split(":", 1)[1].split(",", 1)[0])
        elif line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            pending_pdt = line.split(":", 1)[1]
        elif line == "#EXT-X-ENDLIST":
            ended = True
        elif not line.startswith("#"):
            if pending_duration is None:
                raise ParseError(f"segment {line!r} has no #EXTINF")
            segments.append(
                Segment(sequence + len(segments), pending_duration, line, pending_pdt)
            )
            pending_duration = None
            pending_pdt = ""
    if target is None:
        raise ParseError("playlist has no #EXT-X-TARGETDURATION")
    return MediaPlaylist(target, sequence, segments, ended)


@dataclass
class Histogram:
    """A Prometheus histogram (cumulative buckets), summed over its label sets."""

    name: str
    buckets: list  # [(upper_bound, cumulative_count)] sorted by bound, ends with +Inf
    total: float
    count: float

    def minus(self, earlier):
        """The observations made between `earlier` and this scrape."""
        before = dict(earlier.buckets)
        buckets = [(le, n - before.get(le, 0.0)) for le, n in self.buckets]
        return Histogram(self.name, buckets, self.total - earlier.total, self.count - earlier.count)

    def mean(self):
        """Average observed value, or None without observations."""
        return self.total / self.count if self.count > 0 else None

    def quantile(self, q):
        """Estimates a quantile like PromQL histogram_quantile (linear within a bucket)."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        lower, below = 0.0, 0.0
        for bound, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower
                inside = cumulative - below
                if inside <= 0:
                    return bound
                return lower + (bound - lower) * (rank - below) / inside
            lower, below = bound, cumulative
        return lower


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def _labels(text):
    return dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', text or ""))


def find_histograms(metrics_text):
    """Names of every metric declared `# TYPE <name> histogram` in Prometheus text."""
    return re.findall(r"^# TYPE (\S+) histogram\s*$", metrics_text, re.MULTILINE)


def parse_histogram(metrics_text, name, label_filter=None):
    """Reads histogram `name`, summing label sets that match `label_filter` (a dict)."""
    buckets, total, count, seen = {}, 0.0, 0.0, False
    for line in metrics_text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        metric, labels, value = match.group(1), _labels(match.group(2)), float(match.group(3))
        if label_filter and any(labels.get(k) != v for k, v in label_filter.items()):
            continue
        if metric == name + "_bucket" and "le" in labels:
            bound = float(labels["le"].replace("+Inf", "inf"))
            buckets[bound] = buckets.get(bound, 0.0) + value
            seen = True
        elif metric == name + "_sum":
            total += value
            seen = True
        elif metric == name + "_count":
            count += value
            seen = True
    if not seen:
        return None
    return Histogram(name, sorted(buckets.items()), total, count)


def percentile(values, q):
    """The q-quantile (0..1) of values by linear interpolation; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarize(values):
    """Count, mean, stdev, p50, p99, min and max of a list of numbers."""
    if not values:
        return {"n": 0}
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return {
        "n": len(values),
        "mean": mean,
        "stdev": math.sqrt(var),
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "min": min(values),
        "max": max(values),
    }


def appearance_intervals(first_seen, durations):
    """Per new segment: (msn, wall interval since the previous one, its EXTINF).

    `first_seen` maps msn -> wall time it first appeared in the playlist; `durations`
    maps msn -> EXTINF. Only consecutive numbers are paired, so a gap in polling
    (or a segment seen in the very first poll) never produces a false interval.
    """
    rows = []
    for msn in sorted(first_seen):
        if msn - 1 in first_seen and msn in durations:
            rows.append((msn, first_seen[msn] - first_seen[msn - 1], durations[msn]))
    return rows


def timeline_offsets(first_seen, durations):
    """Per new segment: (msn, its first appearance minus where the media timeline says it
    should appear), relative to the first new segment; None if an EXTINF is unknown.

    Expected time of segment k = appearance of the first segment + the EXTINF sum of the
    segments after it up to k. A node that publishes each segment a constant delay after
    its media ends gives all-zero offsets; the peak-to-peak spread is the jitter, and a
    steady slope would be drift between the feeder's clock and the node's.
    """
    if not first_seen:
        return []
    msns = sorted(first_seen)
    origin = msns[0]
    rows, elapsed_media = [(origin, 0.0)], 0.0
    for previous, msn in zip(msns, msns[1:]):
        for between in range(previous + 1, msn + 1):
            if between not in durations:
                return None
            elapsed_media += durations[between]
        rows.append((msn, (first_seen[msn] - first_seen[origin]) - elapsed_media))
    return rows


def video_keyframe_starts(datagram):
    """How many H.264/H.265 keyframes start in this chunk of MPEG-TS packets.

    A keyframe start is a packet with payload_unit_start, the adaptation field's
    random_access_indicator (ffmpeg's muxer sets it on key packets) and a PES header
    whose stream_id is a video one (0xE0..0xEF). Malformed packets are skipped.
    """
    found = 0
    for offset in range(0, len(datagram) - 187, 188):
        packet = datagram[offset : offset + 188]
        if packet[0] != 0x47 or not packet[1] & 0x40:
            continue
        control = (packet[3] >> 4) & 0x3
        if control != 0x3:  # keyframe starts carry an adaptation field and a payload
            continue
        af_len = packet[4]
        if af_len == 0 or 5 + af_len > 184 or not packet[5] & 0x40:
            continue
        payload = packet[5 + af_len :]
        if len(payload) >= 4 and payload[:3] == b"\x00\x00\x01" and 0xE0 <= payload[3] <= 0xEF:
            found += 1
    return found


def publish_delays(appearances, keyframes):
    """Per segment: (msn, first appearance minus the arrival of the keyframe that closed it).

    A segment is complete when the keyframe that starts the next one arrives, so the
    closing keyframe is the latest one that arrived before the appearance. Returns
    (rows, ambiguous) where ambiguous counts consecutive appearances that were not
    separated by exactly one keyframe (the pairing would then be a guess).
    """
    keyframes = sorted(keyframes)
    rows, ambiguous = [], 0
    previous = None
    for msn in sorted(appearances):
        seen = appearances[msn]
        before = [t for t in keyframes if t <= seen]
        if not before:
            previous = (msn, seen)
            continue
        if previous is not None and previous[0] == msn - 1:
            between = sum(1 for t in keyframes if previous[1] < t <= seen)
            if between != 1:
                ambiguous += 1
        rows.append((msn, seen - before[-1]))
        previous = (msn, seen)
    return rows, ambiguous


def parse_vmrss_kib(status_text):
    """VmRSS in KiB from the text of /proc/PID/status."""
    match = re.search(r"^VmRSS:\s+(\d+)\s+kB\s*$", status_text, re.MULTILINE)
    if not match:
        raise ParseError("no VmRSS line")
    return int(match.group(1))


def parse_listening(line):
    """The HTTP port from brdyun's `listening http=127.0.0.1:PORT https=- rtmp=-` line."""
    match = re.match(r"^listening http=(\S+):(\d+) ", line)
    if not match:
        raise ParseError(f"not a listening line: {line!r}")
    return match.group(1), int(match.group(2))


def ratio(a, b):
    """a/b, or None when either side is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b
