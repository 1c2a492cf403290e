#!/usr/bin/env python3
"""Issue 31's benchmark: the gateway's CPU for a request with 500 deferred tools (validation,
then one hosted search and the load of what it found), against the same request with
nothing deferred. A measurement, not a test. See bench/README.md, "Deferred tools and tool
search".

    bench/tool-search.sh [--bin-dir DIR] [--requests N]

The 500 tools: 60 namespaces of 7 functions each and 80 top-level functions, each with a
description and three parameters. Scenarios (each a fresh gateway, `store: false`, the
scripted model, one request at a time):

  direct         the 500 functions declared as usual; the model answers in text
  direct-call    the same; the model calls one of them (returned to the client)
  deferred       all 500 `defer_loading: true` behind `{"type": "tool_search"}`; the model
                 answers in text (validation and the search's overview only)
  search-call    the same; the model searches (a query naming the task), the gateway ranks
                 the catalog and loads what it found, and the model calls a loaded function
                 in the next round (returned): two upstream rounds

The gateway's CPU per request is its process's user+system time (/proc/PID/stat) over N
requests after a warm-up, divided by N; the client and the scripted model run in other
processes. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("invoice customer order refund shipment ticket calendar meeting repository branch deploy "
         "metric alert payment subscription inventory warehouse contract employee payroll report "
         "document folder permission backup database query cache cluster container image "
         "schedule reminder email message channel survey campaign lead account budget forecast").split()
VERBS = "get list create update delete find archive export sync approve".split()


def catalog(deferred: bool) -> list[dict]:
    """500 function declarations: 60 namespaces x 7 members, and 80 top-level functions."""
    def fn(name: str, i: int) -> dict:
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        d = {"type": "function", "name": name,
             "description": f"{VERBS[i % len(VERBS)].capitalize()} the {a} of a {b}, by id or by name.",
             "parameters": {"type": "object", "properties": {f"{a}_id": {"type": "string"}, f"{b}_name": {"type": "string"},
                                                             "limit": {"type": "integer"}}, "required": [f"{a}_id"]}}
        if deferred:
            d["defer_loading"] = True
        return d

    tools: list[dict] = []
    n = 0
    for ns in range(60):
        topic = WORDS[ns % len(WORDS)]
        members = []
        for m in range(7):
            members.append(fn(f"{VERBS[m]}_{topic}_{ns}", n))
            n += 1
        tools.append({"type": "namespace", "name": f"{topic}_{ns}", "description": f"Tools for {topic} records, set {ns}.", "tools": members})
    for f in range(80):
        tools.append(fn(f"{VERBS[f % len(VERBS)]}_{WORDS[f % len(WORDS)]}_item_{f}", n))
        n += 1
    assert n == 500
    if deferred:
        tools.append({"type": "tool_search"})
    return tools


def http(method: str, url: str, body: object | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def await_line(path: Path, regex: str, proc: subprocess.Popen) -> str:
    for _ in range(1200):
        m = re.search(regex, path.read_text(errors="replace")) if path.exists() else None
        if m:
            return m.group(1)
        if proc.poll() is not None:
            sys.exit(f"{proc.args[0]} exited:\n{path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)
    sys.exit(f"no line matching {regex} in {path}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The function the model calls: a top-level one, found by a query of its description's words.
TARGET = catalog(False)[60 + 20]
QUERY = TARGET["description"].rstrip(".")

SCENARIOS = {
    "direct": (False, [{"text": ["ok"]}]),
    "direct-call": (False, [{"tool_calls": [{"name": TARGET["name"], "arguments": json.dumps({TARGET["parameters"]["required"][0]: "7"})}]}]),
    "deferred": (True, [{"text": ["ok"]}]),
    "search-call": (True, [{"tool_calls": [{"name": "tool_search", "arguments": json.dumps({"query": QUERY})}]},
                           {"tool_calls": [{"name": TARGET["name"], "arguments": json.dumps({TARGET["parameters"]["required"][0]: "7"})}]}]),
}


def run(bin_dir: Path, scenario: str, n: int, warmup: int, tmp: Path) -> float:
    deferred, scripts = SCENARIOS[scenario]
    up_log, gw_log = tmp / f"upstream.{scenario}.log", tmp / f"gateway.{scenario}.log"
    procs = []
    try:
        up = subprocess.Popen([bin_dir / "scripted-upstream", "--listen", "127.0.0.1:0", "--no-record"],
                              stdout=up_log.open("w"), stderr=subprocess.STDOUT)
        procs.append(up)
        upstream = await_line(up_log, r"LISTENING (http://\S+)", up)
        gw = subprocess.Popen([bin_dir / "responses-gateway", "serve", "--upstream-url", f"{upstream}/v1", "--listen", "127.0.0.1:0",
                               "--data-dir", str(tmp / f"data-{scenario}")], stdout=gw_log.open("w"), stderr=subprocess.STDOUT)
        procs.append(gw)
        gateway = "http://" + await_line(gw_log, r"listening on http://([0-9.]+:[0-9]+)", gw)
        body = {"model": "m", "input": "What is on invoice 7?", "store": False, "tools": catalog(deferred)}
        expect = "function_call" if scenario.endswith("-call") else "message"

        def one() -> None:
            http("POST", f"{upstream}/_control/scripts", scripts)
            out = http("POST", f"{gateway}/v1/responses", body)
            kinds = [i["type"] for i in out["output"]]  # type: ignore[index]
            if kinds[-1] != expect or (scenario == "search-call" and kinds[:2] != ["tool_search_call", "tool_search_output"]):
                sys.exit(f"{scenario}: unexpected output {kinds}")

        for _ in range(warmup):
            one()
        start = cpu_seconds(gw.pid)
        for _ in range(n):
            one()
        return (cpu_seconds(gw.pid) - start) / n * 1000
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", type=Path, default=ROOT / "target" / "release")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ms = {s: run(a.bin_dir, s, a.requests, a.warmup, Path(tmp)) for s in a.scenarios}
    print(f"binaries: {a.bin_dir}; {a.requests} requests per scenario; gateway CPU (user+system) per request\n")
    print(f"| scenario | CPU ms/request | ratio to direct |\n|---|---:|---:|")
    for s, v in ms.items():
        ratio = f"{v / ms['direct']:.2f}" if ms.get("direct") else "-"
        print(f"| {s} | {v:.2f} | {ratio} |")
    if "search-call" in ms and "direct-call" in ms:
        print(f"\nthe search and load add {ms['search-call'] - ms['direct-call']:+.2f} ms against direct-call "
              f"(ratio {ms['search-call'] / ms['direct-call']:.2f})")


if __name__ == "__main__":
    main()
