#!/usr/bin/env python3
"""Smoke test of the gateway's Responses API with the official openai SDK.

Runs against a gateway that fronts a real model (SmolLM2-135M-Instruct served
by llama.cpp, see scripts/real-model.sh):
  (a) responses.create, plain question        -> non-empty output_text
  (b) responses.stream, same question         -> text deltas arrived, final text non-empty
  (c) function tool round trip (store=False)  -> get_weather call with a city, then
      the output items + a function_call_output replayed -> non-empty final answer
  (d) the gateway-owned custom tool package_version, forced with
      tool_choice {"type":"custom","name":"package_version"}, only that tool declared:
      "What is the installed version of axum?" -> custom_tool_call, its
      custom_tool_call_output (the version, or for a name outside the allowlist an
      "error: ..." listing the allowed names) and a final message, all in one response;
      the whole transcript is printed. The 135M model may write odd inputs: which input
      it wrote is reported, not asserted.
  (e) the gateway-owned web_search, only {"type":"web_search"} declared and forced with
      tool_choice {"type":"web_search"}, max_output_tokens 300, two phrasings ("Search the
      web for: Tour de France 2025 winner", "Search the web: who won the 2025 Tour de
      France?") against the local SearXNG-shaped fixture (searxng_fixture.py, started by
      scripts/real-model.sh and configured as the gateway's http backend). Each streamed as
      raw SSE and again non-streaming; prints the query the model wrote (and what the fixture
      received), each web_search_call, the answer and its url_citation annotations with
      their text spans. Asserted: the web_search_call lifecycle and final item; the turn ends
      completed with a message, or incomplete (max_output_tokens) when the model used up the
      budget (a run-on call is then never executed); every annotation's span contains its URL
      and the URL is a source of this turn; the fixture received exactly the items' queries;
      every event/response validates with tests/python/validate.py (SDK models strictly, Open
      Responses, stream invariants); at least one search ran. The query's quality and the
      answer's content are reported, not asserted.
  (f) the gateway-owned file_search on the embedded vector store: see file_search_step.py.

Usage: smoke.py [--base-url URL] [--model smollm2] [--search-url URL]
The base URL defaults to $GATEWAY_BASE_URL, then $OPENAI_BASE_URL, then
http://127.0.0.1:8080/v1.  Exits non-zero when any step fails.
"""

import argparse
import json
import os
import sys
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

from file_search_step import step_file_search

QUESTION = "What is the capital of France? Answer in one sentence."
WEATHER_PROMPT = "What's the weather in Paris? Use the tool."
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
TOOL_RESULT = '{"temperature_c": 18, "conditions": "sunny"}'
# Two phrasings. With the first, the 135M model writes a clean query ("Tour de France
# 2025"); with the second it often runs on inside the query string until the token budget
# (a truncated call the gateway must not execute). Either outcome is checked for validity.
SEARCH_QUESTIONS = [
    "Search the web for: Tour de France 2025 winner",
    "Search the web: who won the 2025 Tour de France?",
]
# The model repeats itself until the budget runs out; this bounds each request.
SEARCH_MAX_OUTPUT_TOKENS = 300
WEB_SEARCH_TOOL = {"type": "web_search"}
ROOT = Path(__file__).resolve().parents[2]
VERSION_QUESTION = "What is the installed version of axum?"
PACKAGE_VERSION_TOOL = {"type": "custom", "name": "package_version"}


class SmokeFailure(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise SmokeFailure(msg)


def show(label: str, value) -> None:
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    print(f"    {label:<16} {value}", flush=True)


def describe_output(resp) -> None:
    show("response id", resp.id)
    show("status", resp.status)
    for i, item in enumerate(resp.output):
        if item.type == "message":
            texts = [c.text for c in item.content if getattr(c, "type", None) == "output_text"]
            phase = getattr(item, "phase", None)
            show(f"output[{i}]", f"message{f' ({phase})' if phase else ''}: {' '.join(texts)!r}")
        elif item.type == "function_call":
            show(f"output[{i}]", f"function_call {item.name} call_id={item.call_id} arguments={item.arguments!r}")
        elif item.type == "custom_tool_call":
            show(f"output[{i}]", f"custom_tool_call {item.name} call_id={item.call_id} status={getattr(item, 'status', None)} "
                                 f"input={item.input!r}")
        elif item.type == "custom_tool_call_output":
            show(f"output[{i}]", f"custom_tool_call_output call_id={item.call_id} status={getattr(item, 'status', None)} "
                                 f"output={item.output!r}")
        else:
            show(f"output[{i}]", item.type)
    if resp.usage is not None:
        show("usage", f"input={resp.usage.input_tokens} output={resp.usage.output_tokens} "
                      f"total={resp.usage.total_tokens}")


def step_create(client, model: str) -> None:
    resp = client.responses.create(model=model, input=QUESTION, temperature=0)
    describe_output(resp)
    text = resp.output_text
    show("output_text", repr(text))
    check(bool(text.strip()), "output_text is empty")


def step_stream(client, model: str) -> None:
    deltas = []
    counts: dict = {}
    with client.responses.stream(model=model, input=QUESTION, temperature=0) as stream:
        for event in stream:
            counts[event.type] = counts.get(event.type, 0) + 1
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    show("events", ", ".join(f"{k} x{v}" for k, v in counts.items()))
    describe_output(final)
    text = final.output_text
    show("streamed text", repr("".join(deltas)))
    show("output_text", repr(text))
    check(len(deltas) > 0, "no response.output_text.delta events arrived")
    check(bool(text.strip()), "final output_text is empty")
    check("".join(deltas) == text, "concatenated text deltas differ from the final output_text")


def step_tool_round_trip(client, model: str) -> None:
    first = client.responses.create(
        model=model, input=WEATHER_PROMPT, tools=[WEATHER_TOOL], temperature=0, store=False)
    print("    -- first request (tool call expected)", flush=True)
    describe_output(first)
    calls = [item for item in first.output if item.type == "function_call"]
    check(len(calls) > 0, "no function_call item in the output")
    call = calls[0]
    check(call.name == "get_weather", f"function_call name is {call.name!r}, expected 'get_weather'")
    try:
        args = json.loads(call.arguments)
    except ValueError as e:
        raise SmokeFailure(f"function_call arguments are not JSON: {call.arguments!r} ({e})")
    check(isinstance(args, dict), f"function_call arguments are not a JSON object: {call.arguments!r}")
    city = args.get("city")
    check(isinstance(city, str) and city.strip() != "", f"arguments carry no city: {args!r}")
    show("parsed args", args)

    replay = [item.model_dump(mode="json", exclude_unset=True) for item in first.output]
    follow_up = (
        [{"role": "user", "content": WEATHER_PROMPT}]
        + replay
        + [{"type": "function_call_output", "call_id": call.call_id, "output": TOOL_RESULT}]
    )
    print("    -- second request (function_call_output replayed)", flush=True)
    show("input items", [i.get("type", "message") for i in follow_up])
    second = client.responses.create(
        model=model, input=follow_up, tools=[WEATHER_TOOL], temperature=0, store=False)
    describe_output(second)
    text = second.output_text
    show("final answer", repr(text))
    check(bool(text.strip()), "final answer after the tool result is empty")


def step_package_version(client, model: str) -> None:
    from openai.types.responses import (
        ResponseCustomToolCall,
        ResponseCustomToolCallOutputItem,
        ResponseOutputMessage,
    )

    resp = client.responses.create(
        model=model, input=VERSION_QUESTION, tools=[PACKAGE_VERSION_TOOL],
        tool_choice={"type": "custom", "name": "package_version"}, temperature=0, store=False)
    show("question", VERSION_QUESTION)
    show("tool_choice", resp.tool_choice.model_dump(mode="json", exclude_unset=True))
    print("    -- transcript (response.output, as the SDK typed it)", flush=True)
    for i, item in enumerate(resp.output):
        show(f"[{i}] type", f"{item.type} ({type(item).__name__}) id={getattr(item, 'id', None)}")
        if item.type == "custom_tool_call":
            show("    name", item.name)
            show("    call_id", item.call_id)
            show("    input", repr(item.input))
        elif item.type == "custom_tool_call_output":
            show("    call_id", item.call_id)
            show("    status", item.status)
            show("    output", repr(item.output))
        elif item.type == "message":
            show("    role/phase", f"{item.role}/{getattr(item, 'phase', None)}")
            show("    text", repr("".join(c.text for c in item.content if c.type == "output_text")))
    show("status", resp.status)
    if resp.usage is not None:
        show("usage", f"input={resp.usage.input_tokens} output={resp.usage.output_tokens} "
                      f"total={resp.usage.total_tokens} (all rounds)")
    show("final answer", repr(resp.output_text))

    check(resp.status == "completed", f"status is {resp.status!r}, expected 'completed'")
    calls = [it for it in resp.output if it.type == "custom_tool_call"]
    outs = {it.call_id: it for it in resp.output if it.type == "custom_tool_call_output"}
    check(len(calls) > 0, "no custom_tool_call in the output")
    for call in calls:
        check(isinstance(call, ResponseCustomToolCall), f"custom_tool_call typed as {type(call).__name__}")
        check(call.name == "package_version", f"custom_tool_call name is {call.name!r}")
        out = outs.get(call.call_id)
        check(out is not None, f"no custom_tool_call_output for call {call.call_id}")
        check(isinstance(out, ResponseCustomToolCallOutputItem), f"custom_tool_call_output typed as {type(out).__name__}")
        check(resp.output.index(call) < resp.output.index(out), "custom_tool_call_output precedes its call")
        if out.status == "completed":
            check(isinstance(out.output, str) and out.output.strip() != "", "completed tool output is empty")
            verdict = "a version"
        else:
            check(out.status == "incomplete", f"custom_tool_call_output status {out.status!r}")
            check(isinstance(out.output, str) and out.output.startswith("error: "),
                  f"failed tool output does not start with 'error: ': {out.output!r}")
            check("axum" in out.output, f"the error output does not list the allowed names: {out.output!r}")
            verdict = "an error listing the allowed names"
        show("tool verdict", f"input {call.input!r} -> {verdict}")
    last = resp.output[-1]
    check(isinstance(last, ResponseOutputMessage) and last.role == "assistant",
          f"the last output item is {last.type}, not the assistant's final message")
    check(getattr(last, "phase", None) in (None, "final_answer"), f"final message phase is {getattr(last, 'phase', None)!r}")
    final_text = "".join(c.text for c in last.content if c.type == "output_text")
    check(final_text.strip() != "", "the final message is empty")
    check(resp.output.index(last) > max(resp.output.index(c) for c in calls), "no message after the tool call")


def load_validate():
    """tests/python/validate.py (needs openai + openresponses-types, both in the venv)."""
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import validate  # noqa: E402

    return validate


def post_raw(base_url: str, body: dict, timeout: float) -> tuple[int, str]:
    """POST /responses with urllib (no SDK in between); the whole body as text."""
    req = urllib.request.Request(
        base_url.rstrip("/") + "/responses", data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "authorization": "Bearer sk-local-smoke"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def squeeze(types: list) -> str:
    """Event types with consecutive repeats collapsed: `a, b x12, c`."""
    out: list = []
    for t in types:
        if out and out[-1][0] == t:
            out[-1][1] += 1
        else:
            out.append([t, 1])
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in out)


def search_transcript(output: list, problems: list, where: str) -> None:
    """Print each item of a response's output; check the web_search items and citations."""
    sources: set = set()
    for i, item in enumerate(output):
        t = item.get("type")
        if t == "web_search_call":
            action = item.get("action") or {}
            show(f"[{i}] {t}", f"id={item.get('id')} status={item.get('status')}")
            show("    query", repr(action.get("query")))
            show("    action", action)
            for src in action.get("sources") or []:
                sources.add(src.get("url"))
        elif t == "message":
            text = "".join(c.get("text", "") for c in item.get("content") or [] if c.get("type") == "output_text")
            anns = [a for c in item.get("content") or [] if c.get("type") == "output_text" for a in c.get("annotations") or []]
            show(f"[{i}] message", f"id={item.get('id')} phase={item.get('phase')} status={item.get('status')}")
            show("    text", repr(text))
            show("    annotations", f"{len(anns)}")
            for a in anns:
                span = text[a["start_index"]:a["end_index"]] if a.get("type") == "url_citation" else None
                show("     -", f"{a.get('type')} [{a.get('start_index')}:{a.get('end_index')}] url={a.get('url')!r} "
                               f"title={a.get('title')!r} span={span!r}")
                if a.get("type") != "url_citation":
                    problems.append(f"{where}: annotation of type {a.get('type')!r}")
                    continue
                if not (0 <= a["start_index"] < a["end_index"] <= len(text)):
                    problems.append(f"{where}: annotation offsets out of range: {a}")
                elif a["url"] not in span:
                    problems.append(f"{where}: text[{a['start_index']}:{a['end_index']}]={span!r} lacks {a['url']!r}")
                if a.get("url") not in sources:
                    problems.append(f"{where}: cited URL {a.get('url')!r} is not a source of this turn {sorted(sources)}")
        else:
            show(f"[{i}] {t}", json.dumps(item, ensure_ascii=False)[:300])


def check_search_stream(events: list, problems: list, where: str) -> list:
    """The web_search_call lifecycle: added without action (in_progress), in_progress ->
    searching -> completed (only on success) -> done with action {type: search, query,
    queries}. Returns the queries of the search items."""
    added = [e for e in events if e.get("type") == "response.output_item.added" and e["item"].get("type") == "web_search_call"]
    queries = []
    for a in added:
        oi, item = a["output_index"], a["item"]
        if set(item) != {"id", "type", "status"} or item.get("status") != "in_progress":
            problems.append(f"{where}: web_search_call added as {item} (want id, type, status in_progress; no action)")
        mine = [e.get("type") for e in events if e.get("output_index") == oi]
        done = [e["item"] for e in events if e.get("type") == "response.output_item.done" and e.get("output_index") == oi]
        status = done[0].get("status") if done else None
        want = ["response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching"]
        want += ["response.web_search_call.completed"] if status == "completed" else []
        want += ["response.output_item.done"]
        show(f"search item {oi}", " -> ".join(t.removeprefix("response.") for t in mine))
        if mine != want:
            problems.append(f"{where}: web_search_call at output_index {oi} events {mine}, want {want}")
        if status not in ("completed", "failed"):
            problems.append(f"{where}: web_search_call status {status!r}")
        action = (done[0].get("action") if done else None) or {}
        if action.get("type") != "search" or not isinstance(action.get("query"), str) \
                or action.get("queries") != [action.get("query")]:
            problems.append(f"{where}: web_search_call action {action}")
        queries.append(action.get("query"))
    return queries


def fixture_queries(search_url: str) -> list:
    if not search_url:
        return []
    with urllib.request.urlopen(search_url.rsplit("/", 1)[0] + "/_queries", timeout=5) as r:
        return [q["q"] for q in json.loads(r.read().decode())]


def check_turn_end(resp: dict, output: list, searched: bool, problems: list, where: str) -> None:
    """The turn ends in one of two ways the gateway may legitimately report for this model:
    completed with the answer, or incomplete (max_output_tokens) when the model's answer (or
    its run-on call) used up the budget. A run-on call must not have been executed."""
    status, details = resp.get("status"), resp.get("incomplete_details")
    if status == "completed":
        if not output or output[-1].get("type") != "message" or output[-1].get("phase") == "commentary":
            problems.append(f"{where}: completed, but the turn does not end in the assistant's answer")
    elif status == "incomplete" and details == {"reason": "max_output_tokens"}:
        note = "the answer was cut at max_output_tokens" if searched else \
            "the model's web_search call ran on until max_output_tokens: never executed"
        show("note", note)
    else:
        problems.append(f"{where}: status {status!r} incomplete_details {details} error {resp.get('error')}")


def search_request(V, client, model: str, base_url: str, search_url: str, timeout: float, question: str,
                   problems: list) -> bool:
    """One question, streamed (raw SSE) and non-streaming; returns whether a search ran."""
    request = {"model": model, "input": question, "tools": [WEB_SEARCH_TOOL],
               "tool_choice": {"type": "web_search"}, "include": ["web_search_call.action.sources"],
               "temperature": 0, "max_output_tokens": SEARCH_MAX_OUTPUT_TOKENS, "store": False}
    show("question", question)
    show("request", {k: v for k, v in request.items() if k != "input"})
    searched = False

    print("    -- streamed (raw SSE)", flush=True)
    before = fixture_queries(search_url)
    t0 = time.monotonic()
    status, text = post_raw(base_url, {**request, "stream": True}, timeout)
    check(status == 200, f"streaming request: HTTP {status}: {text[:2000]}")
    parsed = V.parse_sse(text)
    events, framing = V.sse_json_events(parsed)
    problems += [f"stream framing: {p}" for p in framing]
    show("took", f"{time.monotonic() - t0:.1f}s, {len(parsed.comments)} keep-alive comment(s)")
    show("events", squeeze([e.get("type") for e in events]))
    for e in events:
        if e.get("type") == "response.output_item.added" and e["item"].get("type") == "web_search_call":
            show("added item", e["item"])
    written = check_search_stream(events, problems, "stream")
    terminal = events[-1] if events else {}
    resp = terminal.get("response") or {}
    show("terminal", f"{terminal.get('type')} status={resp.get('status')} incomplete_details={resp.get('incomplete_details')}")
    output = resp.get("output") or []
    search_transcript(output, problems, "stream")
    for e in events:
        if e.get("type") == "response.output_text.annotation.added":
            show("annotation evt", f"output_index={e.get('output_index')} annotation_index={e.get('annotation_index')} "
                                   f"url={e['annotation'].get('url')!r}")
    check_turn_end(resp, output, bool(written), problems, "stream")
    got = fixture_queries(search_url)[len(before):]
    show("fixture got", got)
    if search_url and got != written:
        problems.append(f"stream: the fixture received {got}, the web_search_call items say {written}")
    searched |= bool(written)
    try:
        V.validate_stream(events)
        show("validation", "stream: SDK (strict) + Open Responses + invariants OK")
    except V.ValidationFailure as e:
        problems.append(f"stream validation: {str(e)[:1500]}")

    print("    -- non-streaming (SDK responses.create, raw body validated)", flush=True)
    before = fixture_queries(search_url)
    t0 = time.monotonic()
    raw = client.responses.with_raw_response.create(**request)
    body = raw.http_response.json()
    sdk = raw.parse()
    show("took", f"{time.monotonic() - t0:.1f}s")
    show("status", f"{body.get('status')} incomplete_details={body.get('incomplete_details')}")
    show("output types", [f"{o.type} ({type(o).__name__})" for o in sdk.output])
    output = body.get("output") or []
    search_transcript(output, problems, "create")
    check_turn_end(body, output, any(o.get("type") == "web_search_call" for o in output), problems, "create")
    from openai.types.responses import ResponseFunctionWebSearch

    written = [(o.get("action") or {}).get("query") for o in output if o.get("type") == "web_search_call"]
    if [o for o in sdk.output if o.type == "web_search_call" and not isinstance(o, ResponseFunctionWebSearch)]:
        problems.append("create: a web_search_call not typed as ResponseFunctionWebSearch")
    got = fixture_queries(search_url)[len(before):]
    show("fixture got", got)
    if search_url and got != written:
        problems.append(f"create: the fixture received {got}, the web_search_call items say {written}")
    searched |= bool(written)
    if sdk.usage is not None:
        show("usage", f"input={sdk.usage.input_tokens} output={sdk.usage.output_tokens} "
                      f"total={sdk.usage.total_tokens} (all rounds)")
    try:
        V.validate_response(body)
        show("validation", "create: SDK (strict) + Open Responses OK")
    except V.ValidationFailure as e:
        problems.append(f"create validation: {str(e)[:1500]}")
    return searched


def step_web_search(client, model: str, base_url: str, search_url: str, timeout: float) -> None:
    V = load_validate()
    problems: list = []
    if search_url:
        show("search backend", search_url)
    searched = False
    for n, question in enumerate(SEARCH_QUESTIONS, 1):
        print(f"    == e.{n}", flush=True)
        searched |= search_request(V, client, model, base_url, search_url, timeout, question, problems)
    if not searched:
        problems.append("the model never completed a web_search call in step (e), so no search ran")
    check(not problems, "\n      - " + "\n      - ".join(problems))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default=os.environ.get("GATEWAY_BASE_URL")
                    or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default=os.environ.get("SMOKE_MODEL", "smollm2"))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    ap.add_argument("--search-url", default=os.environ.get("SEARCH_URL", ""),
                    help="the gateway's web_search backend (the fixture), to report what it received")
    ap.add_argument("--steps", default=os.environ.get("SMOKE_STEPS", "abcdef"),
                    help="which steps to run, by letter (default all: abcdef)")
    args = ap.parse_args()

    import openai

    client = openai.OpenAI(
        base_url=args.base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or "sk-local-smoke",
        timeout=args.timeout,
        max_retries=0,
    )
    print(f"smoke: openai {openai.__version__}, base_url {args.base_url}, model {args.model}", flush=True)

    steps = [
        ("a", "responses.create, plain question", step_create),
        ("b", "responses.stream, plain question", step_stream),
        ("c", "function tool round trip (store=False)", step_tool_round_trip),
        ("d", "server-owned custom tool package_version, forced by tool_choice", step_package_version),
        ("e", "gateway-owned web_search (SearXNG fixture), forced by tool_choice",
         lambda c, m: step_web_search(c, m, args.base_url, args.search_url, args.timeout)),
        ("f", "gateway-owned file_search (embedded vector store), forced by tool_choice",
         lambda c, m: step_file_search(c, m, args.base_url, args.timeout, load_validate(), post_raw, squeeze,
                                       show, check)),
    ]
    passed = failed = 0
    for key, title, fn in steps:
        if key not in args.steps:
            continue
        print(f"\n[{key}] {title}", flush=True)
        t0 = time.monotonic()
        try:
            fn(client, args.model)
        except SmokeFailure as e:
            failed += 1
            print(f"    FAIL ({time.monotonic() - t0:.1f}s): {e}", flush=True)
        except openai.APIStatusError as e:
            failed += 1
            print(f"    FAIL ({time.monotonic() - t0:.1f}s): HTTP {e.status_code} from the gateway: "
                  f"{e.response.text[:2000]}", flush=True)
        except openai.APIError as e:  # connection errors, timeouts, malformed streams
            failed += 1
            cause = f" ({type(e.__cause__).__name__}: {e.__cause__})" if e.__cause__ else ""
            print(f"    FAIL ({time.monotonic() - t0:.1f}s): {type(e).__name__}: {e}{cause}", flush=True)
        except Exception as e:  # SDK stream-state errors, validation errors, ...
            failed += 1
            print(f"    FAIL ({time.monotonic() - t0:.1f}s): {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=-3, file=sys.stdout)
        else:
            passed += 1
            print(f"    PASS ({time.monotonic() - t0:.1f}s)", flush=True)
    print(f"\nsmoke: {passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
