#!/usr/bin/env python3
"""HTTP/2 over TLS: brdyun against nginx, same run (Python 3 stdlib, h2load, nginx, openssl).

Usage (from the repository root, after `cargo build --release`):

    python3 bench/h2.py            # about 2 minutes
    python3 bench/h2.py --quick    # 3-s runs

A node serves the built-in meeting over HTTPS (a self-signed certificate for 127.0.0.1,
ALPN h2); nginx (2 workers, `listen ... ssl http2`, the same certificate) serves a copy
of the node's live media playlist and of one of its segments. `h2load` (nghttp2) loads
each over h2 — 16 and 128 connections, 1 stream each, for the playlist; 16 connections
for the segment — and the script prints req/s, CPU µs per request of the server process
(from /proc) and the ratio brdyun/nginx. Raw figures go to `bench/h2_results.json`.
"""

import argparse
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import BenchError  # noqa: E402

REPO = os.path.dirname(HERE)


def self_signed(directory):
    """A certificate and key for 127.0.0.1 (openssl)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def https_get(port, path, cert):
    """GET over HTTPS (HTTP/1.1 from Python; the bytes are the same): (status, body)."""
    context = ssl.create_default_context(cafile=cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


H2LOAD = re.compile(r"finished in [0-9.]+\w+, ([0-9.]+) req/s.*?requests: (\d+) total, \d+ started, "
                    r"\d+ done, (\d+) succeeded, (\d+) failed", re.S)


def h2load(port, path, connections, seconds):
    """h2load over h2; returns (argv, req/s, requests done, failed)."""
    argv = ["h2load", "-t2", f"-c{connections}", "-m1", f"-D{seconds}", f"https://127.0.0.1:{port}{path}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    if done.returncode != 0 or "Application protocol: h2" not in done.stdout:
        raise BenchError(f"h2load failed or did not use h2: {done.stdout[-600:]} {done.stderr[-300:]}")
    m = H2LOAD.search(done.stdout)
    if not m:
        raise BenchError(f"cannot read h2load's output: {done.stdout[-600:]}")
    if int(m.group(4)) or not int(m.group(3)):
        raise BenchError(f"h2load: requests failed on {path}: {done.stdout[-600:]}")
    return argv, float(m.group(1)), int(m.group(3)), int(m.group(4))


def nginx_h2_conf(root, port, cert, key):
    """nginx serving root/www over TLS with http2."""
    return harness.nginx_conf(root, port, "ssl http2",
                              f"ssl_certificate {cert}; ssl_certificate_key {key}; "
                              "http2_max_requests 1000000;")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seconds = 3 if args.quick else 10
    for tool in ("h2load", "nginx", "openssl"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            raise BenchError(f"{tool} is needed (apt-get install nghttp2-client nginx openssl)")
    binary = os.path.join(REPO, "target", "release", "brdyun")
    workdir = tempfile.mkdtemp(prefix="brdyun-h2-bench-")
    cert, key = self_signed(workdir)
    procs = harness.Processes()
    results = {"seconds": seconds, "runs": []}
    try:
        https_port = harness.free_port()
        node_dir = os.path.join(workdir, "node")
        os.makedirs(node_dir, exist_ok=True)
        # A window long enough that the segment under load stays in it for the whole run.
        text = harness.node_config("h2", os.path.join(node_dir, "data"), [("m", ["builtin://meeting"])], 600, 1.0)
        text = text.replace('http = "127.0.0.1:0"',
                            f'http = "127.0.0.1:0"\nhttps = "127.0.0.1:{https_port}"\n'
                            f'tls_cert = "{cert}"\ntls_key = "{key}"')
        config = os.path.join(node_dir, "node.toml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(text)
        log = os.path.join(node_dir, "node.log")
        proc = procs.start([binary, "node", "--config", config], log,
                           env={**os.environ, "RUST_LOG": "warn"})

        def playlist():
            if proc.poll() is not None:
                raise BenchError(f"the node exited; see {log}")
            try:
                status, body = https_get(https_port, "/m/mono.m3u8", cert)
            except OSError:
                return None
            return body if status == 200 and body.count(b"#EXTINF") >= 4 else None

        body = harness.wait_until("four segments over https", playlist, 60)
        segment = [line for line in body.decode().splitlines() if line and not line.startswith("#")][-2]
        _, segment_bytes = https_get(https_port, f"/m/{segment}", cert)
        nginx_root = os.path.join(workdir, "nginx")
        os.makedirs(os.path.join(nginx_root, "www"), exist_ok=True)
        for name, data in (("mono.m3u8", body), (segment, segment_bytes)):
            with open(os.path.join(nginx_root, "www", name), "wb") as f:
                f.write(data)
        nginx_port = harness.free_port()
        conf = os.path.join(nginx_root, "nginx.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write(nginx_h2_conf(nginx_root, nginx_port, cert, key))
        nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
        nginx = procs.start([nginx_bin, "-p", nginx_root, "-e", os.path.join(nginx_root, "error.log"),
                             "-c", conf], os.path.join(nginx_root, "nginx.out"))
        harness.wait_until("nginx over https",
                           lambda: _answers(nginx_port, "/mono.m3u8", cert), 10)
        print(f"h2 over TLS, {seconds}-s h2load runs, 1 stream per connection "
              f"(playlist {len(body)} B, segment {len(segment_bytes)} B)")
        print(f"   {'what':<9} {'conns':>5} {'server':>7} {'req/s':>9} {'CPU us/req':>10} {'failed':>6}")
        for what, connections, brdyun_path, nginx_path in (
                ("playlist", 16, "/m/mono.m3u8", "/mono.m3u8"),
                ("playlist", 128, "/m/mono.m3u8", "/mono.m3u8"),
                ("segment", 16, f"/m/{segment}", f"/{segment}")):
            record = {"what": what, "connections": connections}
            for who, pid, port, path in (("brdyun", proc.pid, https_port, brdyun_path),
                                         ("nginx", nginx.pid, nginx_port, nginx_path)):
                before = harness.process_cpu_s(pid)
                command, rps, done, failed = h2load(port, path, connections, seconds)
                cpu = harness.process_cpu_s(pid) - before
                record[who] = {"command": " ".join(command), "requests_per_s": rps, "requests": done,
                               "failed": failed, "cpu_us_per_request": cpu * 1e6 / done if done else None}
                print(f"   {what:<9} {connections:>5} {who:>7} {rps:>9.0f} "
                      f"{record[who]['cpu_us_per_request'] or 0:>10.1f} {failed:>6}")
            b, n = record["brdyun"], record["nginx"]
            record["ratio"] = b["requests_per_s"] / n["requests_per_s"] if n["requests_per_s"] else None
            print(f"   {what:<9} {connections:>5}   ratio {record['ratio']:.2f}x req/s, "
                  f"{(b['cpu_us_per_request'] or 0) / (n['cpu_us_per_request'] or 1):.2f}x CPU/req")
            results["runs"].append(record)
    finally:
        procs.stop_all()
    out = os.path.join(HERE, "h2_results.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {out}")
    return 0


def _answers(port, path, cert):
    try:
        return https_get(port, path, cert)[0] == 200
    except OSError:
        return False


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as error:
        print(f"bench failed: {error}", file=sys.stderr)
        sys.exit(1)
