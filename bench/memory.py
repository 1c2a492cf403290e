#!/usr/bin/env python3
"""Memory of large request bodies (issue 28, point 3): RSS of the gateway before, at the
peak of, and after one large `store: true` body, then N such bodies at once.

    python3 bench/memory.py GATEWAY_BIN UPSTREAM_BIN [--mib 31] [--at-once 4] [--settle 5] [--no-store]

Not a test: it prints figures (MiB) and writes nothing. Standard library only. The
gateway stores in SQLite in a temporary directory, in front of `scripted-upstream
--no-record` (which answers a short text). RSS is read from /proc/PID/status: `VmRSS`
sampled every 2 ms while the requests run, and `VmHWM` (the kernel's peak, reset through
/proc/PID/clear_refs before each phase) for the peak.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: bytes) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        c.request("POST", "/v1/responses", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class Sampler:
    """Samples VmRSS every 2 ms until stopped; keeps the highest."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.002)

    def __enter__(self) -> "Sampler":
        self.t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.t.join()


def phase(name: str, pid: int, port: int, body: bytes, n: int, settle: float) -> dict:
    base = rss_kib(pid)
    hwm = reset_peak(pid)
    results: list[tuple[int, bytes]] = []
    lock = threading.Lock()

    def one() -> None:
        r = post(port, body)
        with lock:
            results.append(r)

    with Sampler(pid) as s:
        threads = [threading.Thread(target=one) for _ in range(n)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
    peak = max(s.peak, rss_kib(pid, "VmHWM") if hwm else 0)
    time.sleep(settle)
    after = rss_kib(pid)
    statuses = sorted(r[0] for r in results)
    for status, data in results:
        if status != 200:
            print(f"  {name}: HTTP {status}: {data[:300]!r}", file=sys.stderr)
    return {"phase": name, "statuses": statuses, "before_mib": base / 1024, "peak_mib": peak / 1024,
            "added_peak_mib": (peak - base) / 1024, "after_mib": after / 1024, "seconds": took}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gateway")
    ap.add_argument("upstream")
    ap.add_argument("--mib", type=float, default=31, help="body size in MiB (default 31)")
    ap.add_argument("--at-once", type=int, default=4, help="bodies sent at once in the second phase (default 4)")
    ap.add_argument("--settle", type=float, default=5, help="seconds before RSS is read after a phase (default 5)")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the gateway (repeatable)")
    ap.add_argument("--no-store", action="store_true", help="send store: false (default: store: true)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="rg-memory-")
    up_port, gw_port = free_port(), free_port()
    up = subprocess.Popen([args.upstream, "--listen", f"127.0.0.1:{up_port}", "--no-record", "--default-tokens", "8",
                           "--token-delay-ms", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    env = dict(os.environ, RUST_LOG="warn", XDG_DATA_HOME=tmp)
    env.update(kv.split("=", 1) for kv in args.env)
    gw = subprocess.Popen([args.gateway, "serve", "--upstream-url", f"http://127.0.0.1:{up_port}/v1", "--listen",
                           f"127.0.0.1:{gw_port}", "--data-dir", tmp], env=env, stdout=subprocess.DEVNULL,
                          stderr=open(os.path.join(tmp, "gateway.log"), "wb"), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", gw_port, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the gateway did not start")
            time.sleep(0.1)
        # Warm-up: small stored turns (the store, the allocator's first pages).
        small = json.dumps({"model": "m", "input": "hello", "store": True}).encode()
        for _ in range(20):
            post(gw_port, small)
        time.sleep(args.settle)
        text = "x" * int(args.mib * (1 << 20) - 200)
        body = json.dumps({"model": "m", "input": text, "store": not args.no_store}).encode()
        print(f"body: {len(body) / (1 << 20):.1f} MiB, gateway pid {gw.pid}")
        rows = [phase("one body", gw.pid, gw_port, body, 1, args.settle),
                phase(f"{args.at_once} at once", gw.pid, gw_port, body, args.at_once, args.settle)]
        print(f"{'phase':<12} {'statuses':<22} {'before':>8} {'peak':>8} {'+peak':>8} {'after':>8} {'s':>6}")
        for r in rows:
            print(f"{r['phase']:<12} {str(r['statuses']):<22} {r['before_mib']:8.0f} {r['peak_mib']:8.0f} "
                  f"{r['added_peak_mib']:8.0f} {r['after_mib']:8.0f} {r['seconds']:6.1f}")
        print(json.dumps(rows))
    finally:
        for p in (gw, up):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
