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

Usage: smoke.py [--base-url URL] [--model smollm2]
The base URL defaults to $GATEWAY_BASE_URL, then $OPENAI_BASE_URL, then
http://127.0.0.1:8080/v1.  Exits non-zero when any step fails.
"""

import argparse
import json
import os
import sys
import time
import traceback

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default=os.environ.get("GATEWAY_BASE_URL")
                    or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8080/v1")
    ap.add_argument("--model", default=os.environ.get("SMOKE_MODEL", "smollm2"))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
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
    ]
    passed = failed = 0
    for key, title, fn in steps:
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
