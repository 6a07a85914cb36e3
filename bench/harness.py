"""Process and network plumbing for the benchmark harness: brdyun nodes, nginx,
ffmpeg feeders, wrk runs, plain HTTP on 127.0.0.1. Everything started here is
tracked by a Processes registry so run.py can stop it all in a `finally`.
"""

import hashlib
import http.client
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import parse


class BenchError(RuntimeError):
    """A benchmark could not run as designed (a tool failed, a server never came up)."""


class Processes:
    """Every child process the harness started, each in its own process group.

    Stopping is by recorded id only: SIGTERM to the group we created, then SIGKILL
    after a grace period, so ffmpeg and nginx workers go down with their leader.
    """

    def __init__(self):
        self._procs = []

    def start(self, argv, log_path, **kwargs):
        """Starts argv with stdout and stderr appended to log_path."""
        log = open(log_path, "ab")  # noqa: SIM115 - closed in stop_all
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kwargs,
            )
        except OSError as error:
            log.close()
            raise BenchError(f"cannot start {argv[0]}: {error}") from error
        self._procs.append((proc, log))
        return proc

    def stop(self, proc, grace_s=5.0):
        """Stops one process group we started and waits for its leader."""
        for index, (known, log) in enumerate(self._procs):
            if known is proc:
                _terminate(proc, grace_s)
                log.close()
                del self._procs[index]
                return

    def stop_all(self):
        """Stops everything still running, newest first."""
        while self._procs:
            proc, log = self._procs.pop()
            _terminate(proc, 5.0)
            log.close()


def _terminate(proc, grace_s):
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def free_port(kind=socket.SOCK_STREAM):
    """A port on 127.0.0.1 that was free a moment ago (TCP or UDP)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ensure_tools(need_apt):
    """Checks wrk, nginx and ffmpeg exist; installs wrk/nginx with apt-get if allowed."""
    missing = [t for t in ("wrk", "nginx") if not (shutil.which(t) or os.path.exists(f"/usr/sbin/{t}"))]
    if missing and need_apt:
        subprocess.run(["apt-get", "install", "-y", *missing], check=False, timeout=300)
    for tool in ("wrk", "ffmpeg"):
        if not shutil.which(tool):
            raise BenchError(f"{tool} is not installed")
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        raise BenchError("nginx is not installed")


def http_get(port, path, timeout=5.0, headers=None):
    """GET http://127.0.0.1:port/path (with `headers`) -> (status, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class Poller:
    """A keep-alive HTTP client that reconnects after any error (for fast polling)."""

    def __init__(self, port, timeout=2.0):
        self._port = port
        self._timeout = timeout
        self._conn = None

    def get(self, path):
        """Returns (status, body), or (None, b"") when the request failed."""
        try:
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self._port, timeout=self._timeout)
            self._conn.request("GET", path)
            response = self._conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            return None, b""

    def close(self):
        """Closes the connection if one is open."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def wait_until(what, check, timeout_s, interval_s=0.2):
    """Calls check() until it returns something truthy; BenchError after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval_s)
    raise BenchError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def node_config(name, data_dir, streams, window_s, segment_s=None, extra=""):
    """TOML text for a node; streams is [(stream name, [input urls])]; `extra` is
    appended as it is (e.g. a `[shedding]` section)."""
    lines = [
        "[node]",
        f'name = "{name}"',
        "trust_loopback = true",
        'http = "127.0.0.1:0"',
        f'data_dir = "{data_dir}"',
        "[defaults]",
        f"window = {window_s}",
    ]
    if segment_s is not None:
        lines.append(f"segment_duration = {segment_s}")
    for stream, inputs in streams:
        quoted = ", ".join(f'"{url}"' for url in inputs)
        lines += ["[[stream]]", f'name = "{stream}"', f"inputs = [{quoted}]"]
    return "\n".join(lines) + "\n" + extra


def start_role(procs, binary, workdir, name, text, role="node", read=None):
    """Starts `brdyun ROLE` (node or mc) with config text in workdir; returns (proc,
    HTTP port) once its listening line is logged, or (proc, `read(line)`) when `read`
    picks something else from that line (None: not that line)."""
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, f"{name}.toml")
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
    log = os.path.join(workdir, f"{name}.log")
    proc = procs.start([binary, role, "--config", path], log,
                       env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")})

    def listening():
        if proc.poll() is not None:
            raise BenchError(f"{name} exited with {proc.returncode}; see {log}")
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if read is not None:
                    found = read(line)
                    if found is not None:
                        return found
                elif line.startswith("listening http="):
                    return parse.parse_listening(line)[1]
        return None

    return proc, wait_until(f"{name} to listen", listening, 30, 0.05)


class Node:
    """A running `brdyun node` process and its HTTP port."""

    def __init__(self, procs, binary, workdir, name, streams, window_s, segment_s=None, extra=""):
        os.makedirs(workdir, exist_ok=True)
        config_path = os.path.join(workdir, "node.toml")
        with open(config_path, "w", encoding="utf-8") as out:
            out.write(
                node_config(name, os.path.join(workdir, "data"), streams, window_s, segment_s, extra)
            )
        self.log_path = os.path.join(workdir, "node.log")
        self.proc = procs.start(
            [binary, "node", "--config", config_path],
            self.log_path,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
        )
        self.port = wait_until("the node's listening line", self._listening, 30, 0.05)

    def _listening(self):
        if self.proc.poll() is not None:
            raise BenchError(f"brdyun exited with {self.proc.returncode}; log: {self.log_tail()}")
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            for line in log:
                if line.startswith("listening http="):
                    return parse.parse_listening(line)[1]
        return None

    def log_tail(self, chars=1500):
        """The end of the node's log, for error messages."""
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            return log.read()[-chars:]

    def rss_kib(self):
        """The node's resident set size now, from /proc/PID/status."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            return parse.parse_vmrss_kib(status.read())

    def playlist(self, stream):
        """The stream's current media playlist (text, parsed), or None if not ready."""
        try:
            status, body = http_get(self.port, f"/{stream}/mono.m3u8")
        except OSError:
            return None
        if status != 200:
            return None
        text = body.decode("utf-8", errors="replace")
        try:
            return text, parse.parse_media_playlist(text)
        except (parse.ParseError, ValueError):
            return None

    def wait_segments(self, stream, count, timeout_s):
        """Waits until the stream's playlist lists at least `count` segments."""

        def ready():
            if self.proc.poll() is not None:
                raise BenchError(f"brdyun exited with {self.proc.returncode}; log: {self.log_tail()}")
            got = self.playlist(stream)
            return got if got and len(got[1].segments) >= count else None

        return wait_until(f"{count} segments in /{stream}/mono.m3u8", ready, timeout_s)


def make_clip(path, seconds=20):
    """Encodes the ~3.2 Mbit/s 1280x720 H.264 + AAC clip the UDP feeder loops.

    The clip is MP4, not TS: with `-stream_loop -1 -i clip.ts`, ffmpeg's mpegts demuxer
    drops the first video PES (the IDR) after each loop's seek, so every 20 s the
    stream carried a GOP without its keyframe and the node (rightly) made a 4 s
    segment. An MP4 loops sample-exact; the feeder still sends MPEG-TS.
    """
    argv = [
        "ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
        "-t", str(seconds),
        "-c:v", "libx264", "-preset", "veryfast", "-profile:v", "main", "-pix_fmt", "yuv420p",
        "-b:v", "3000k", "-minrate", "3000k", "-maxrate", "3000k", "-bufsize", "1500k",
        "-x264-params", "nal-hrd=cbr:force-cfr=1",
        "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
        "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2",
        "-movflags", "+faststart", "-f", "mp4", path,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=180, check=False)
    if done.returncode != 0:
        raise BenchError(f"ffmpeg could not make the clip: {done.stderr.decode(errors='replace')[-800:]}")


def start_udp_feeder(procs, clip, port, log_path, copy_port=None):
    """Loops the clip in real time into udp://127.0.0.1:port (ffmpeg -re -stream_loop -1).

    With copy_port, ffmpeg's tee muxer sends the same stream to a second port too (the
    harness's KeyframeClock): one mpegts muxer per output, written one after the other
    for every packet, so both copies leave within microseconds of each other.
    """
    head = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-stream_loop", "-1", "-i", clip]
    target = f"udp://127.0.0.1:{port}?pkt_size=1316"
    if copy_port is None:
        tail = ["-c", "copy", "-f", "mpegts", target]
    else:
        copy = f"udp://127.0.0.1:{copy_port}?pkt_size=1316"
        tail = ["-map", "0", "-c", "copy", "-f", "tee", f"[f=mpegts]{target}|[f=mpegts]{copy}"]
    return procs.start(head + tail, log_path)


NGINX_WORKERS = 2


def nginx_conf(root_dir, port, listen_options="", server_extra=""):
    """A minimal static-file nginx.conf rooted in root_dir (docroot = root_dir/www);
    `listen_options` (e.g. `ssl http2`) and `server_extra` (e.g. the certificate lines)
    go into its one server block."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""daemon off;
{user}worker_processes {NGINX_WORKERS};
pid {root_dir}/nginx.pid;
error_log {root_dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    types {{ application/vnd.apple.mpegurl m3u8; video/mp2t ts; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {root_dir}/client_body;
    proxy_temp_path {root_dir}/proxy;
    fastcgi_temp_path {root_dir}/fastcgi;
    uwsgi_temp_path {root_dir}/uwsgi;
    scgi_temp_path {root_dir}/scgi;
    server {{
        listen 127.0.0.1:{port} {listen_options};
        root {root_dir}/www;
        {server_extra}
    }}
}}
"""


class Nginx:
    """nginx serving files from its own docroot on a free 127.0.0.1 port."""

    def __init__(self, procs, root_dir):
        os.makedirs(os.path.join(root_dir, "www"), exist_ok=True)
        self.root_dir = root_dir
        self.port = free_port()
        conf = os.path.join(root_dir, "nginx.conf")
        with open(conf, "w", encoding="utf-8") as out:
            out.write(nginx_conf(root_dir, self.port))
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = procs.start(
            [binary, "-p", root_dir, "-e", os.path.join(root_dir, "error.log"), "-c", conf],
            os.path.join(root_dir, "nginx.out"),
        )

        def up():
            if self.proc.poll() is not None:
                raise BenchError(f"nginx exited with {self.proc.returncode}; see {root_dir}/error.log")
            try:
                return http_get(self.port, "/", timeout=1.0)[0] is not None
            except OSError:
                return False

        wait_until("nginx to answer", up, 10, 0.05)

    def put(self, name, data):
        """Writes a file into the docroot and returns its URL path."""
        with open(os.path.join(self.root_dir, "www", name), "wb") as out:
            out.write(data)
        return f"/{name}"


def served_alike(nginx, port, path, copy, seconds, connections=16):
    """wrk against brdyun's `path` on `port`, then against `nginx` serving the same bytes
    (put as `copy`) in the same run -> {"brdyun_rps", "nginx_rps", "ratio"}."""
    status, body = http_get(port, path)
    if status != 200:
        raise BenchError(f"GET {path}: {status}")
    served = nginx.put(copy, body)
    _, ours = run_wrk(port, path, connections, seconds)
    _, theirs = run_wrk(nginx.port, served, connections, seconds)
    if ours.errors or theirs.errors:
        raise BenchError(f"errors in the wrk runs of {path}")
    return {"brdyun_rps": ours.requests_per_s, "nginx_rps": theirs.requests_per_s,
            "ratio": parse.ratio(ours.requests_per_s, theirs.requests_per_s)}


def run_wrk(port, path, connections, seconds, threads=2):
    """Runs `wrk -t2 -cN -dNs --latency` on 127.0.0.1:port/path; returns (argv, WrkResult)."""
    argv = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
        "--timeout", "10s", f"http://127.0.0.1:{port}{path}",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    if done.returncode != 0:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stderr[-500:]}")
    return argv, parse.parse_wrk(done.stdout)


def sha256(data):
    """Hex digest, to prove both servers answer the same bytes."""
    return hashlib.sha256(data).hexdigest()


def read_http_response(sock, limit=1 << 20):
    """Reads one HTTP/1.1 response (Content-Length or chunked) from a blocking socket.

    Returns (status, body length). Raises BenchError on a malformed or oversized answer.
    """
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise BenchError("connection closed before the response headers")
        data += chunk
        if len(data) > limit:
            raise BenchError("response headers too large")
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise BenchError(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    if "content-length" in headers:
        want = int(headers["content-length"])
        while len(body) < want:
            chunk = sock.recv(65536)
            if not chunk:
                raise BenchError("connection closed inside the body")
            body += chunk
        return int(parts[1]), want
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while not body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                raise BenchError("connection closed inside a chunked body")
            body += chunk
            if len(body) > limit:
                raise BenchError("chunked body too large")
        return int(parts[1]), len(body)
    raise BenchError("response has neither content-length nor chunked encoding")


def still_open(sock):
    """True when the peer has not closed this idle connection (non-blocking peek)."""
    try:
        sock.setblocking(False)
        try:
            return sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True
    except OSError:
        return False
    finally:
        try:
            sock.setblocking(True)
        except OSError:
            pass


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class KeyframeClock:
    """Receives a copy of the UDP feed and records when each video keyframe arrived.

    Arrival times are the kernel's receive timestamps (SO_TIMESTAMPNS, CLOCK_REALTIME),
    so they do not depend on when this Python thread gets scheduled; compare them
    with time.time() readings.
    """

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.keyframes = []
        self.datagrams = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="keyframe-clock", daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                data, ancillary, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(16))
            except socket.timeout:
                continue
            except OSError:
                return
            stamp = time.time()
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
                    seconds, nanos = struct.unpack("qq", payload[:16])
                    stamp = seconds + nanos / 1e9
            self.datagrams += 1
            for _ in range(parse.video_keyframe_starts(data)):
                self.keyframes.append(stamp)

    def close(self):
        """Stops the receiver thread and closes the socket."""
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def process_family(root_pid):
    """A process and its direct children (nginx's workers), as pids."""
    pids = [root_pid]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == root_pid:
                    pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return pids


def process_cpu_split(root_pid):
    """(user, system) CPU seconds of a process and its direct children."""
    tick = os.sysconf("SC_CLK_TCK")
    user = system = 0
    for pid in process_family(root_pid):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])  # utime (field 14)
            system += int(fields[12])  # stime (field 15)
        except (OSError, IndexError, ValueError):
            continue
    return user / tick, system / tick


def process_cpu_s(root_pid):
    """User + system CPU seconds of a process and its direct children (nginx's workers).

    CPU per request is the fair efficiency figure on a shared machine: it does not
    depend on how much of the cores the server got while wrk and others ran."""
    return sum(process_cpu_split(root_pid))
