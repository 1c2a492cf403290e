#!/usr/bin/env python3
"""Tool calls of a real small model through the gateway, before and after issue 17.

Not a test: a measurement (bench/model-quirks.sh starts llama.cpp and calls this).

  run    for each gateway binary given: starts it in front of a recording proxy that
         forwards to llama.cpp, sends every prompt of prompts.json through the official
         openai SDK (client.responses.create, not streamed, temperature 0,
         max_output_tokens 200; the proxy adds a fixed seed and cache_prompt false to
         each upstream request) and classifies each turn; writes JSON.
  table  reads the JSON of one or more runs and prints the Markdown table (also --out).

Per turn:
  valid call     (turns that need a call) status completed, at least one function_call,
                 and every function_call names a declared tool with arguments that parse as
                 a JSON object and validate against the tool's schema (jsonschema);
  as asked       a valid call of the expected tool (two or more for `parallel`); for
                 `tool_less`: a completed text answer without any call or leaked markup;
  leaked markup  an output message's text holds call markup: <tool_call>, [TOOL_CALLS],
                 <|python_tag|>, or a JSON object {"name": ..., "arguments"|"parameters": ...}
                 (bare or fenced);
  invalid args   the client got a function_call whose name is not declared or whose
                 arguments do not parse or do not validate;
  rounds         POST /v1/chat/completions requests the proxy saw during the turn;
  incomplete     status incomplete (with its reason); errors: HTTP or connection errors.
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "smollm2"
SEED = 7
MAX_OUTPUT_TOKENS = 200
UPSTREAM_TIMEOUT = 600

# ---------------------------------------------------------------- recording proxy


class Recorder:
    """Counts and records the upstream requests of the current turn."""

    def __init__(self, upstream: str):
        u = urllib.parse.urlsplit(upstream)
        self.host, self.port = u.hostname, u.port or 80
        self.lock = threading.Lock()
        self.rounds: list = []

    def take(self) -> list:
        with self.lock:
            rounds, self.rounds = self.rounds, []
        return rounds

    def add(self, entry: dict) -> None:
        with self.lock:
            self.rounds.append(entry)


def summarize_upstream(body: bytes, content_type: str) -> dict:
    """The model's text and tool calls out of a chat completion (SSE or JSON)."""
    text, calls = [], {}
    finish = None
    chunks = []
    if "text/event-stream" in content_type:
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if data and data != "[DONE]":
                    try:
                        chunks.append(json.loads(data))
                    except ValueError:
                        pass
        for chunk in chunks:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    c = calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
                    fn = tc.get("function") or {}
                    c["name"] += fn.get("name") or ""
                    args = fn.get("arguments")
                    c["arguments"] += args if isinstance(args, str) else json.dumps(args) if args else ""
                finish = choice.get("finish_reason") or finish
    else:
        try:
            doc = json.loads(body)
            msg = doc["choices"][0]["message"]
            text.append(msg.get("content") or "")
            for i, tc in enumerate(msg.get("tool_calls") or []):
                calls[i] = {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}
            finish = doc["choices"][0].get("finish_reason")
        except (ValueError, KeyError, IndexError, TypeError):
            text.append(body[:500].decode("utf-8", "replace"))
    return {"text": "".join(text), "tool_calls": [calls[k] for k in sorted(calls)], "finish_reason": finish}


def make_handler(rec: Recorder):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def forward(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            entry = None
            if method == "POST" and self.path.rstrip("/").endswith(("/chat/completions", "/responses")):
                try:
                    doc = json.loads(body)
                    # Repeatable answers: a fixed seed, and no reuse of the previous request's
                    # KV cache (a different cached prefix evaluates the prompt in other batches,
                    # whose rounding can flip a greedy choice between the two gateways' runs).
                    doc.setdefault("seed", SEED)
                    doc.setdefault("cache_prompt", False)
                    body = json.dumps(doc).encode()
                    entry = {
                        "path": self.path,
                        "tool_choice": doc.get("tool_choice"),
                        "tools": [((t.get("function") or t).get("name")) for t in doc.get("tools") or []],
                        "messages": len(doc.get("messages") or doc.get("input") or []),
                        "last_message": (doc.get("messages") or [{}])[-1],
                    }
                except ValueError:
                    entry = {"path": self.path, "unparsed": True}
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "authorization", "accept")}
            headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection(rec.host, rec.port, timeout=UPSTREAM_TIMEOUT)
            try:
                conn.request(method, self.path, body=body if method == "POST" else None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                status, ctype = resp.status, resp.getheader("Content-Type", "application/json")
            except OSError as e:
                data, status, ctype = json.dumps({"error": {"message": f"proxy: {e}"}}).encode(), 502, "application/json"
            finally:
                conn.close()
            if entry is not None:
                entry["status"] = status
                entry["model"] = summarize_upstream(data, ctype)
                rec.add(entry)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.forward("GET")

        def do_POST(self):
            self.forward("POST")

    return Handler


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    start = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}) before {url} answered")
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"no answer from {url} after {timeout}s")
        time.sleep(0.3)


def start_gateway(binary: str, upstream: str, work: Path, name: str):
    port = free_port()
    data = work / f"gateway-{name}-data"
    subprocess.run(["rm", "-rf", str(data)], check=True)
    log = open(work / f"gateway-{name}.log", "w")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESPONSES_GATEWAY_")}
    env["RESPONSES_GATEWAY_UPSTREAM__API"] = "chat"
    proc = subprocess.Popen([binary, "serve", "--upstream-url", upstream, "--listen", f"127.0.0.1:{port}",
                             "--data-dir", str(data)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    except Exception:
        proc.terminate()
        raise
    return proc, f"http://127.0.0.1:{port}/v1"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- prompts and classification


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def load_cases(path: Path, limit: int | None) -> tuple[dict, list]:
    spec = json.loads(path.read_text())
    tools = spec["tools"]
    cases = []
    for cat, c in spec["categories"].items():
        prompts = c["prompts"][:limit] if limit is not None else c["prompts"]
        for i, p in enumerate(prompts):
            p = {"input": p} if isinstance(p, str) else p
            cases.append({
                "category": cat,
                "n": i,
                "input": p["input"],
                "tools": c["tools"],
                "tool_choice": c.get("tool_choice"),
                "parallel_tool_calls": c.get("parallel_tool_calls"),
                "expect": p.get("expect", c.get("expect")),
            })
    return tools, cases


MARKUP = [
    re.compile(r"</?tool_call>"),
    re.compile(re.escape("[TOOL_CALLS]")),
    re.compile(re.escape("<|python_tag|>")),
    re.compile(r'\{\s*"name"\s*:\s*"[^"]*"\s*,\s*"(arguments|parameters)"\s*:'),
    re.compile(r'\{\s*"(arguments|parameters)"\s*:.*"name"\s*:', re.S),
]


def has_markup(text: str) -> bool:
    return any(p.search(text) for p in MARKUP)


def check_call(name: str, arguments: str, tools: dict) -> str | None:
    """None when the call is valid, else why not."""
    import jsonschema

    if name not in tools:
        return f"undeclared tool {name!r}"
    try:
        args = json.loads(arguments)
    except ValueError as e:
        return f"arguments are not JSON: {e}"
    if not isinstance(args, dict):
        return "arguments are not a JSON object"
    errors = sorted(jsonschema.Draft202012Validator(tools[name]["parameters"]).iter_errors(args), key=str)
    if errors:
        return f"schema: {errors[0].message}"
    return None


def run_case(client, case: dict, tools: dict, rec: Recorder) -> dict:
    import openai

    declared = {n: tools[n] for n in case["tools"]}
    kwargs = {
        "model": MODEL,
        "input": case["input"],
        "tools": list(declared.values()),
        "temperature": 0,
        "max_output_tokens": MAX_OUTPUT_TOKENS,
    }
    if case["tool_choice"] is not None:
        kwargs["tool_choice"] = case["tool_choice"]
    if case["parallel_tool_calls"] is not None:
        kwargs["parallel_tool_calls"] = case["parallel_tool_calls"]
    rec.take()
    started = time.monotonic()
    out = {k: case[k] for k in ("category", "n", "input")}
    try:
        resp = client.responses.create(**kwargs)
        out["status"] = resp.status
        details = getattr(resp, "incomplete_details", None)
        out["incomplete_reason"] = getattr(details, "reason", None) if details else None
        out["output"] = []
        for item in resp.output:
            if item.type == "message":
                text = "".join(c.text for c in item.content if getattr(c, "type", None) == "output_text")
                out["output"].append({"type": "message", "phase": getattr(item, "phase", None), "text": text})
            elif item.type == "function_call":
                out["output"].append({"type": "function_call", "name": item.name, "arguments": item.arguments,
                                      "invalid": check_call(item.name, item.arguments, declared)})
            else:
                out["output"].append({"type": item.type})
        out["error"] = None
    except openai.APIStatusError as e:
        out.update(status="error", error=f"HTTP {e.status_code}: {str(e.message)[:300]}", output=[])
    except openai.APIError as e:
        out.update(status="error", error=f"{type(e).__name__}: {str(e)[:300]}", output=[])
    out["seconds"] = round(time.monotonic() - started, 2)
    rounds = rec.take()
    out["rounds"] = len(rounds)
    out["upstream"] = rounds

    calls = [o for o in out["output"] if o["type"] == "function_call"]
    texts = [o["text"] for o in out["output"] if o["type"] == "message"]
    expect = case["expect"] or {}
    want = expect.get("call")
    out["needs_call"] = want is not None
    out["leaked"] = any(has_markup(t) for t in texts)
    out["invalid_returned"] = any(c["invalid"] for c in calls)
    valid = out["status"] == "completed" and bool(calls) and not out["invalid_returned"]
    out["valid_call"] = valid if want else None
    if want:
        right = [c for c in calls if c["name"] == want]
        out["as_asked"] = valid and len(right) >= expect.get("min_calls", 1)
    else:
        out["as_asked"] = (out["status"] == "completed" and not calls and not out["leaked"]
                           and any(t.strip() for t in texts))
    return out


def cmd_run(args) -> int:
    tools, cases = load_cases(Path(args.prompts), args.limit)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rec = Recorder(args.llama_url)
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(rec))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"

    import openai

    result = {"mode": args.mode, "meta": dict(m.split("=", 1) for m in args.meta), "gateways": {}}
    for spec in args.gateway:
        name, binary = spec.split("=", 1)
        print(f"==> [{args.mode}] gateway {name}: {binary} -> proxy {proxy_url} -> {args.llama_url}", flush=True)
        proc, base = start_gateway(binary, proxy_url, work, f"{args.mode}-{name}")
        turns = []
        try:
            client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0, timeout=UPSTREAM_TIMEOUT)
            for case in cases:
                t = run_case(client, case, tools, rec)
                turns.append(t)
                items = "; ".join(
                    f"call {o['name']} {o['arguments'][:80]!r}{' INVALID' if o['invalid'] else ''}"
                    if o["type"] == "function_call"
                    else f"text {o.get('text', '')[:80]!r}" if o["type"] == "message" else o["type"]
                    for o in t["output"]) or t["error"]
                print(f"    {t['category']:<10} #{t['n']} {t['status']:<10} rounds={t['rounds']} "
                      f"{'ok ' if t['as_asked'] else '-- '}{items}", flush=True)
        finally:
            stop(proc)
        result["gateways"][name] = {"binary": binary, "turns": turns}
    proxy.shutdown()
    Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(f"==> wrote {args.out}", flush=True)
    return 0


# ---------------------------------------------------------------- table

MODE_TITLE = {
    "parser": "llama.cpp's template tool parser (chatml-tools.jinja, calls parsed into tool_calls)",
    "text": "no template tool parser (same template, llama.cpp --skip-chat-parsing: calls arrive as text)",
}


def pct(k: int, n: int) -> str:
    return "—" if n == 0 else f"{100 * k / n:.0f} % ({k}/{n})"


def row(label: str, gw: str, turns: list) -> str:
    need = [t for t in turns if t["needs_call"]]
    n = len(turns)
    incomplete = [t for t in turns if t["status"] == "incomplete"]
    errors = [t for t in turns if t["status"] == "error"]
    reasons = sorted({t["incomplete_reason"] or "?" for t in incomplete})
    cells = [
        label, gw, str(n),
        pct(sum(t["valid_call"] for t in need), len(need)),
        pct(sum(t["as_asked"] for t in turns), n),
        pct(sum(t["leaked"] for t in turns), n),
        pct(sum(t["invalid_returned"] for t in turns), n),
        f"{sum(t['rounds'] for t in turns) / n:.2f}" if n else "—",
        f"{len(incomplete)}" + (f" ({', '.join(reasons)})" if incomplete else ""),
        str(len(errors)),
    ]
    return "| " + " | ".join(cells) + " |"


def cmd_table(args) -> int:
    lines = []
    header = ("| category | gateway | turns | valid call (call needed) | as asked | leaked markup "
              "| invalid args returned | upstream rounds/turn | incomplete | errors |")
    sep = "|" + "|".join(["---"] * 10) + "|"
    for path in args.inputs:
        res = json.loads(Path(path).read_text())
        lines.append(f"#### {MODE_TITLE.get(res['mode'], res['mode'])}")
        lines.append("")
        if res["meta"]:
            lines.append(", ".join(f"{k}: {v}" for k, v in res["meta"].items()))
            lines.append("")
        lines += [header, sep]
        gws = list(res["gateways"])
        cats = list(dict.fromkeys(t["category"] for t in res["gateways"][gws[0]]["turns"]))
        for cat in cats:
            for gw in gws:
                lines.append(row(cat, gw, [t for t in res["gateways"][gw]["turns"] if t["category"] == cat]))
        for gw in gws:
            lines.append(row("**all**", gw, res["gateways"][gw]["turns"]))
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--mode", required=True, help="label of the llama.cpp setup (parser, text)")
    r.add_argument("--llama-url", required=True, help="llama.cpp's base URL without /v1")
    r.add_argument("--gateway", action="append", required=True, help="NAME=BINARY, in order")
    r.add_argument("--prompts", default=str(HERE / "prompts.json"))
    r.add_argument("--limit", type=positive, default=None, help="first N prompts of each category (N >= 1)")
    r.add_argument("--work", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--meta", action="append", default=[], help="KEY=VALUE shown above the table")
    t = sub.add_parser("table")
    t.add_argument("inputs", nargs="+")
    t.add_argument("--out")
    args = ap.parse_args()
    return cmd_run(args) if args.cmd == "run" else cmd_table(args)


if __name__ == "__main__":
    sys.exit(main())
