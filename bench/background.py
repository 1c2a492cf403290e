#!/usr/bin/env python3
"""Background responses' cost (issue 19 "Benchmark"), side by side in one run.

Two gateways on one fresh PostgreSQL database (`scripts/pg.sh`), in front of the scripted
upstream answering 64 tokens at once:

* CPU per request of gateway A (its /proc utime+stime): a foreground stored stream
  (`stream: true`) against a logged background stream (`background: true, stream: true`,
  run by A's worker, read back from its event log) — the ratio is the logging's cost;
* store writes: PostgreSQL transactions (`pg_stat_database.xact_commit`) and event-log rows
  per stream, and so rows per commit (batching: not one commit per token);
* event-log bytes per 64-token stream;
* resume latency served by the other replica: upstream tokens 20 ms apart, the stream read on
  A and followed at once on B (`GET ?stream=true`, workers=0 on B); per event, B's arrival
  minus A's.

Usage: bench/background.sh [--no-build] [--requests N]   (prints a Markdown table)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
import harness  # noqa: E402
import httpx  # noqa: E402


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")


def psql(url: str, sql: str) -> str:
    return subprocess.run(["psql", url, "-Atqc", sql], check=True, capture_output=True, text=True).stdout.strip()


def stream(api: str, body: dict) -> bytes:
    with httpx.stream("POST", f"{api}/responses", json=body, timeout=60) as r:
        r.raise_for_status()
        return r.read()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--latency-runs", type=int, default=10)
    args = ap.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    gw_bin = Path(os.environ.get("GATEWAY_BIN", target / "release" / "responses-gateway"))
    up_bin = Path(os.environ.get("UPSTREAM_BIN", target / "release" / "scripted-upstream"))
    admin = subprocess.run(["bash", str(ROOT / "scripts" / "pg.sh")], check=True, capture_output=True, text=True).stdout.strip()
    db = f"rg_bench_bg_{os.getpid()}"
    psql(admin, f'CREATE DATABASE "{db}"')
    url = admin.rsplit("/", 1)[0] + "/" + db
    logs = target / "bench-background"
    logs.mkdir(parents=True, exist_ok=True)
    upstream = harness.start_upstream(up_bin, logs)
    # Idle workers look for other replicas' runs every poll_ms: a long one keeps that polling
    # out of the per-stream figures (runs queued by A wake A's workers at once).
    env = {"RESPONSES_GATEWAY_STORE__BACKEND": "postgres", "RESPONSES_GATEWAY_STORE__URL_ENV": "RG_BENCH_DB",
           "RG_BENCH_DB": url, "RUST_LOG": "warn", "RESPONSES_GATEWAY_BACKGROUND__POLL_MS": "60000"}
    for d in ("a", "b"):
        (logs / d).mkdir(exist_ok=True)
    a = harness.start_gateway(gw_bin, upstream.base_url, logs / "a", extra_env={**env, "RESPONSES_GATEWAY_BACKGROUND__WORKERS": "2"})
    b = harness.start_gateway(gw_bin, upstream.base_url, logs / "b", extra_env={**env, "RESPONSES_GATEWAY_BACKGROUND__WORKERS": "0"})
    try:
        n = args.requests
        fg_body = {"model": "m", "input": "hi", "stream": True}
        bg_body = {**fg_body, "background": True}
        for body in (fg_body, bg_body):  # warm-up
            for _ in range(20):
                stream(a.api_base, body)
        rows = {}
        for name, body in (("foreground stream (stored)", fg_body), ("background stream (logged)", bg_body)):
            c0, x0 = cpu_ms(a.proc.p.pid), int(psql(url, f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"))
            e0 = int(psql(url, "SELECT count(*) FROM response_events"))
            frames = 0
            for _ in range(n):
                frames += stream(a.api_base, body).count(b"\n\nevent: ") + 1
            time.sleep(0.3)  # the last batch
            c1, x1 = cpu_ms(a.proc.p.pid), int(psql(url, f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"))
            e1 = int(psql(url, "SELECT count(*) FROM response_events"))
            rows[name] = {"cpu_ms": (c1 - c0) / n, "commits": (x1 - x0) / n, "log_rows": (e1 - e0) / n, "events": frames / n}
        log_bytes = float(psql(url, "SELECT avg(s) FROM (SELECT sum(octet_length(frame)) s FROM response_events GROUP BY response_id) t"))
        # Resume latency on the other replica.
        lat: list[float] = []
        for _ in range(args.latency_runs):
            upstream.push({"text": [f"t{i} " for i in range(64)], "token_delay_ms": 20})
            arrivals_a: dict[int, float] = {}
            arrivals_b: dict[int, float] = {}
            rid: list[str] = []
            started = threading.Event()

            def read(method: str, api: str, path: str, into: dict[int, float], **kw) -> None:
                with httpx.stream(method, f"{api}{path}", timeout=60, **kw) as r:
                    buf = b""
                    for chunk in r.iter_bytes():
                        now = time.monotonic()
                        buf += chunk
                        *done, buf = buf.split(b"\n\n")
                        for f in done:
                            if not f.startswith(b"event: "):
                                continue
                            data = json.loads(f.split(b"\ndata: ", 1)[1])
                            into[data["sequence_number"]] = now
                            if not rid and "response" in data:
                                rid.append(data["response"]["id"])
                                started.set()

            ta = threading.Thread(target=read, args=("POST", a.api_base, "/responses", arrivals_a), kwargs={"json": bg_body})
            ta.start()
            started.wait(30)
            read("GET", b.api_base, f"/responses/{rid[0]}?stream=true", arrivals_b)
            ta.join()
            # Events B got that A got too, after B joined (the first ones are a catch-up).
            common = sorted(set(arrivals_a) & set(arrivals_b))[5:]
            lat += [(arrivals_b[s] - arrivals_a[s]) * 1000 for s in common]
        fg, bg = rows["foreground stream (stored)"], rows["background stream (logged)"]
        print("| | gateway CPU ms / stream | store commits / stream | log rows / stream | events / stream |")
        print("|---|---|---|---|---|")
        for name, r in rows.items():
            print(f"| {name} | {r['cpu_ms']:.3f} | {r['commits']:.2f} | {r['log_rows']:.1f} | {r['events']:.1f} |")
        print()
        print(f"- CPU ratio background / foreground: **{bg['cpu_ms'] / fg['cpu_ms']:.2f}x** ({n} streams each)")
        print(f"- log rows per commit (batching): {bg['log_rows'] / max(bg['commits'] - fg['commits'], 0.01):.1f} "
              f"(extra commits per background stream: {bg['commits'] - fg['commits']:.2f})")
        print(f"- event-log bytes per 64-token stream: {log_bytes:.0f}")
        if lat:
            q = statistics.quantiles(lat, n=100)
            print(f"- resume served by the other replica, added latency per event: median {statistics.median(lat):.1f} ms, "
                  f"p90 {q[89]:.1f} ms, max {max(lat):.1f} ms ({len(lat)} events, {args.latency_runs} runs)")
    finally:
        for g in (a, b):
            g.close()
            g.proc.stop()
        upstream.close()
        upstream.proc.stop()
        psql(admin, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
