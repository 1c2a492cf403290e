"""Gateway-owned tools through the official openai SDK: the server-owned custom tool
`package_version` (issue 3).

The client declares `{"type":"custom","name":"package_version"}`; the scripted model calls
it as the function `package_version` with `{"input":"axum"}`; the gateway executes it and
the response carries `custom_tool_call`, `custom_tool_call_output` and the final `message`
(streams also a progress message before them). Every Response, item and event is validated
like in test_responses_sdk.py (SDK models strictly, Open Responses, stream invariants).

The whole module needs an SDK whose output-item union has `custom_tool_call_output`
(openai 3.x); test_sdk28_replay.py covers openai 2.8.0, which has not.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
)

import harness
import validate as V
from test_responses_sdk import MODEL, WEATHER_TOOL, create, find_tool_call_turn, sdk_dict, upstream_function, validate_sdk_events, without_ids

try:  # openai 3.x; absent from 2.8.0 (whose runs skip this module)
    from openai.types.responses import ResponseCustomToolCallOutputItem
except ImportError:  # pragma: no cover
    ResponseCustomToolCallOutputItem = None  # type: ignore[assignment,misc]

pytestmark = [
    pytest.mark.usefixtures("upstream"),
    pytest.mark.skipif(
        "custom_tool_call_output" not in V.SDK_ITEM_TYPES or ResponseCustomToolCallOutputItem is None,
        reason="this SDK's ResponseOutputItem has no custom_tool_call_output (see test_sdk28_replay.py)",
    ),
]

PV_TOOL = {"type": "custom", "name": "package_version"}
ROUND1 = {"tool_calls": [{"name": "package_version", "arguments": json.dumps({"input": "axum"}), "fragment_chars": 4}]}
ROUND2 = {"text": ["axum is 0.8."]}
MIXED_ROUND = {"tool_calls": [
    {"name": "package_version", "arguments": json.dumps({"input": "axum"})},
    {"name": "get_weather", "arguments": '{"city":"Paris"}'},
]}
PROGRESS_PREFIX = "msg_progress_"
PROGRESS_TEXT = "Looking up the installed version of axum"
ALLOWED = ["responses-gateway", "tokio", "axum", "reqwest", "hyper", "serde"]


def locked_version(name: str) -> str:
    """The version of `name` in Cargo.lock (the tool reads build metadata, never a constant)."""
    lock = (harness.ROOT / "Cargo.lock").read_text()
    versions = re.findall(r'\[\[package\]\]\nname = "' + re.escape(name) + r'"\nversion = "([^"]+)"', lock)
    assert versions, f"{name} not in Cargo.lock"
    return ", ".join(versions)


AXUM_OUTPUT = f"axum {locked_version('axum')}"


def dump(item: Any) -> dict[str, Any]:
    """What a client replays for an SDK output item."""
    return item.model_dump(mode="json", by_alias=True, exclude_unset=True)


def is_progress(item: Any) -> bool:
    d = item if isinstance(item, dict) else sdk_dict(item)
    return d.get("type") == "message" and str(d.get("id", "")).startswith(PROGRESS_PREFIX)


def message_text(item: ResponseOutputMessage) -> str:
    return "".join(c.text for c in item.content if c.type == "output_text")


def assert_typed(items: list[Any], classes: list[type]) -> None:
    """The SDK built each item as its typed class, and the item validates strictly as it."""
    assert len(items) == len(classes), [type(i).__name__ for i in items]
    for item, cls in zip(items, classes, strict=True):
        assert isinstance(item, cls), f"{type(item).__name__} is not {cls.__name__}: {sdk_dict(item)}"
        parsed = V.validate_sdk_item(sdk_dict(item))
        assert isinstance(parsed, cls), (type(parsed).__name__, cls.__name__)


def assert_package_version_items(call: Any, out: Any, *, output: str = AXUM_OUTPUT, status: str = "completed") -> None:
    assert isinstance(call, ResponseCustomToolCall)
    assert (call.type, call.name, call.input) == ("custom_tool_call", "package_version", "axum")
    assert call.call_id and call.id
    assert sdk_dict(call).get("status") == "completed", sdk_dict(call)
    assert isinstance(out, ResponseCustomToolCallOutputItem)
    assert out.type == "custom_tool_call_output"
    assert out.call_id == call.call_id
    assert out.output == output
    assert out.status == status
    assert out.id and out.id != call.id


def assert_progress(item: Any) -> None:
    assert isinstance(item, ResponseOutputMessage), type(item)
    assert item.id.startswith(PROGRESS_PREFIX), item.id
    assert (item.role, item.status, item.phase) == ("assistant", "completed", "commentary")
    assert message_text(item) == PROGRESS_TEXT


def upstream_tool_turn(msgs: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """(index of the one assistant message with tool_calls, its calls, the tool messages right after it)."""
    i = find_tool_call_turn(msgs)
    calls = msgs[i]["tool_calls"]
    tools = []
    for m in msgs[i + 1:]:
        if m.get("role") != "tool":
            break
        tools.append(m)
    return i, calls, tools


def assert_no_progress_upstream(bodies: list[dict[str, Any]]) -> None:
    for n, b in enumerate(bodies):
        for m in b["messages"]:
            text = harness.message_text(m) or ""
            assert "Looking up the installed version" not in text, f"progress text reached the model in request {n}:\n{harness.dumps(b['messages'])}"


# ---------------------------------------------------------------------------
# package_version alone
# ---------------------------------------------------------------------------


def test_package_version_alone_non_streaming(client, upstream):
    upstream.push(ROUND1, ROUND2)
    resp, body = create(client, model=MODEL, input="What is the installed version of axum?", tools=[PV_TOOL], store=False)

    assert resp.status == "completed", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["custom_tool_call", "custom_tool_call_output", "message"], harness.dumps(body["output"])
    assert not any(is_progress(o) for o in body["output"]), "progress messages exist only in streams"
    call, out, msg = resp.output
    assert_typed(resp.output, [ResponseCustomToolCall, ResponseCustomToolCallOutputItem, ResponseOutputMessage])
    assert_package_version_items(call, out)
    assert (msg.role, msg.status, msg.phase) == ("assistant", "completed", "final_answer")
    assert message_text(msg) == "axum is 0.8."
    assert resp.output_text == "axum is 0.8."
    # The declaration is echoed as declared (name only), not as the server's function.
    assert [(t["type"], t["name"]) for t in body["tools"]] == [("custom", "package_version")], body["tools"]

    bodies = upstream.chat_bodies()
    assert len(bodies) == 2, harness.dumps(bodies)
    fn = upstream_function(bodies[0], "package_version")
    params = fn["parameters"]
    assert params.get("type") == "object" and list(params.get("properties") or {}) == ["input"], params
    assert params["properties"]["input"].get("type") == "string" and params.get("required") == ["input"], params
    # The server owns the description, which names the allowed components.
    assert all(name in fn.get("description", "") for name in ALLOWED), fn
    assert bodies[0].get("tool_choice") in (None, "auto"), bodies[0].get("tool_choice")

    # Round 2 carries the call and its result, and nothing after it.
    msgs = bodies[1]["messages"]
    i, calls, tools = upstream_tool_turn(msgs)
    assert harness.message_text(msgs[0]) == "What is the installed version of axum?"
    assert [(c["id"], c["function"]["name"]) for c in calls] == [(call.call_id, "package_version")], harness.dumps(msgs)
    assert json.loads(calls[0]["function"]["arguments"]) == {"input": "axum"}
    assert [(t["tool_call_id"], t["content"]) for t in tools] == [(call.call_id, AXUM_OUTPUT)], harness.dumps(msgs)
    assert i + 1 == len(msgs) - 1, f"unexpected messages after the tool result:\n{harness.dumps(msgs)}"


def test_package_version_alone_stream_helper_and_raw_twin(client, upstream, gateway):
    request = {"model": MODEL, "input": "What is the installed version of axum?", "tools": [PV_TOOL], "store": False}

    upstream.push(ROUND1, ROUND2)
    with client.responses.stream(**request) as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    V.validate_response(sdk_dict(final), strict=False)
    assert_no_progress_upstream(upstream.chat_bodies())
    assert len(upstream.chat_bodies()) == 2

    assert final.status == "completed"
    assert [o.type for o in final.output] == ["message", "custom_tool_call", "custom_tool_call_output", "message"], [sdk_dict(o) for o in final.output]
    progress, call, out, msg = final.output
    assert_typed(final.output, [ResponseOutputMessage, ResponseCustomToolCall, ResponseCustomToolCallOutputItem, ResponseOutputMessage])
    assert_progress(progress)
    assert_package_version_items(call, out)
    assert (msg.phase, message_text(msg)) == ("final_answer", "axum is 0.8.")
    assert not msg.id.startswith(PROGRESS_PREFIX)
    # The SDK's output_text joins every message, the progress commentary included.
    assert final.output_text.endswith("axum is 0.8.")

    # Event order: the progress message is complete before the call is added.
    added = [(e["output_index"], e["item"]["type"], e["item"]["id"]) for e in dicts if e["type"] == "response.output_item.added"]
    assert [a[:2] for a in added] == [(0, "message"), (1, "custom_tool_call"), (2, "custom_tool_call_output"), (3, "message")], added
    seq_of = {(e["type"], e.get("output_index")): e["sequence_number"] for e in dicts if "output_index" in e}
    assert seq_of[("response.output_item.done", 0)] < seq_of[("response.output_item.added", 1)]
    input_deltas = [e["delta"] for e in dicts if e["type"] == "response.custom_tool_call_input.delta"]
    assert "".join(input_deltas) == "axum"
    assert [e["input"] for e in dicts if e["type"] == "response.custom_tool_call_input.done"] == ["axum"]
    assert not [e for e in dicts if e["type"].startswith("response.function_call_arguments")], "the function wrapper leaked"
    assert [e["type"] for e in dicts].count("response.created") == 1
    assert [e["type"] for e in dicts][-1] == "response.completed"

    # The raw SSE of the same request (strict validation, invariants).
    upstream.push(ROUND1, ROUND2)
    raw = gateway.stream_validated(request)
    assert raw.types() == [d["type"] for d in dicts]
    completed = raw.terminal()["response"]
    assert [o["type"] for o in completed["output"]] == ["message", "custom_tool_call", "custom_tool_call_output", "message"]
    assert completed["output"][0]["id"].startswith(PROGRESS_PREFIX) and completed["output"][0]["phase"] == "commentary"

    # Streaming and non-streaming give the same items, the progress message aside.
    upstream.push(ROUND1, ROUND2)
    resp, body = create(client, **request)
    streamed = [o for o in completed["output"] if not is_progress(o)]
    assert without_ids(body["output"]) == without_ids(streamed)


def test_component_outside_allowlist_is_an_error_output_the_model_reads(client, upstream):
    upstream.push(
        {"tool_calls": [{"name": "package_version", "arguments": json.dumps({"input": "openssl"})}]},
        {"text": ["I can only report some components."]},
    )
    resp, body = create(client, model=MODEL, input="Which openssl?", tools=[PV_TOOL], store=False)
    assert resp.status == "completed"
    assert [o.type for o in resp.output] == ["custom_tool_call", "custom_tool_call_output", "message"]
    call, out, msg = resp.output
    assert_typed(resp.output, [ResponseCustomToolCall, ResponseCustomToolCallOutputItem, ResponseOutputMessage])
    assert call.input == "openssl"
    assert out.status == "incomplete", sdk_dict(out)
    assert isinstance(out.output, str) and out.output.startswith("error: "), out.output
    assert all(name in out.output for name in ALLOWED), out.output
    assert message_text(msg) == "I can only report some components."
    _, _, tools = upstream_tool_turn(upstream.chat_bodies()[1]["messages"])
    assert [t["content"] for t in tools] == [out.output]


# ---------------------------------------------------------------------------
# package_version together with a client function (mixed round)
# ---------------------------------------------------------------------------


def test_mixed_round_then_client_replays_with_function_output(client, upstream, gateway):
    tools = [WEATHER_TOOL, PV_TOOL]
    input1 = [{"role": "user", "content": "Weather in Paris, and which axum?"}]
    upstream.push(MIXED_ROUND)
    resp1, body1 = create(client, model=MODEL, input=input1, tools=tools, store=False)

    # The gateway ran package_version, then ended the turn on the client's call.
    assert resp1.status == "completed", harness.dumps(body1)
    types = [o.type for o in resp1.output]
    assert sorted(types) == ["custom_tool_call", "custom_tool_call_output", "function_call"], types
    assert types.index("custom_tool_call") < types.index("custom_tool_call_output")
    by_type = {o.type: o for o in resp1.output}
    fc, call, out = by_type["function_call"], by_type["custom_tool_call"], by_type["custom_tool_call_output"]
    assert_typed([fc, call, out], [ResponseFunctionToolCall, ResponseCustomToolCall, ResponseCustomToolCallOutputItem])
    assert_package_version_items(call, out)
    assert (fc.name, json.loads(fc.arguments), fc.status) == ("get_weather", {"city": "Paris"}, "completed")
    assert resp1.output_text == ""

    bodies = upstream.chat_bodies()
    assert len(bodies) == 1, "a round with a client call ends the turn"
    declared = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert declared == ["package_version", "get_weather"], f"gateway tools are declared before client tools: {declared}"

    # The same request streamed: valid stream, same items plus the progress message.
    upstream.push(MIXED_ROUND)
    raw = gateway.stream_validated({"model": MODEL, "input": input1, "tools": tools, "store": False})
    completed = raw.terminal()
    assert completed["type"] == "response.completed"
    progress = [o for o in completed["response"]["output"] if is_progress(o)]
    assert len(progress) == 1 and progress[0]["phase"] == "commentary"
    assert without_ids([o for o in completed["response"]["output"] if not is_progress(o)]) == without_ids(body1["output"])

    # Turn 2: the client replays every output item and answers its own call.
    upstream.reset()
    input2 = input1 + [dump(o) for o in resp1.output] + [
        {"type": "function_call_output", "call_id": fc.call_id, "output": "18C sunny"},
    ]
    upstream.push({"text": ["It is 18C in Paris; axum is 0.8."]})
    resp2, _ = create(client, model=MODEL, input=input2, tools=tools, store=False)
    assert resp2.status == "completed"
    assert [o.type for o in resp2.output] == ["message"]
    assert resp2.output_text == "It is 18C in Paris; axum is 0.8."

    bodies = upstream.chat_bodies()
    assert len(bodies) == 1
    msgs = bodies[0]["messages"]
    i, calls, tool_msgs = upstream_tool_turn(msgs)
    assert harness.message_text(msgs[0]) == "Weather in Paris, and which axum?"
    assert sorted((c["id"], c["function"]["name"]) for c in calls) == sorted(
        [(call.call_id, "package_version"), (fc.call_id, "get_weather")]
    ), harness.dumps(msgs)
    results = {call.call_id: AXUM_OUTPUT, fc.call_id: "18C sunny"}
    # Both results, right after the calls, each answering one call, in the calls' order
    # (chat templates without call ids pair results with calls by position).
    assert [(t["tool_call_id"], t["content"]) for t in tool_msgs] == [(c["id"], results[c["id"]]) for c in calls], (
        "tool results must follow the order of the assistant's tool_calls:\n" + harness.dumps(msgs[i:])
    )
    assert i + len(tool_msgs) == len(msgs) - 1, harness.dumps(msgs)


# ---------------------------------------------------------------------------
# The output replayed as input on the next turn (store=false)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["create", "stream"])
def test_output_replayed_as_input_next_turn(client, upstream, source):
    input1 = [{"role": "user", "content": "What is the installed version of axum?"}]
    request = {"model": MODEL, "input": input1, "tools": [PV_TOOL], "store": False}
    upstream.push(ROUND1, ROUND2)
    if source == "create":
        resp1, _ = create(client, **request)
        output = resp1.output
    else:
        with client.responses.stream(**request) as stream:
            validate_sdk_events(list(stream))
            output = stream.get_final_response().output
        assert is_progress(output[0]), "the streamed output starts with the progress message"
    call = next(o for o in output if o.type == "custom_tool_call")

    upstream.reset()
    # What a store=false client sends: everything it got back (SDK dumps), then its next message.
    replay = [dump(o) for o in output]
    input2 = input1 + replay + [{"role": "user", "content": "And tokio?"}]
    upstream.push({"text": ["I will check."]})
    resp2, _ = create(client, model=MODEL, input=input2, tools=[PV_TOOL], store=False)
    assert resp2.status == "completed" and resp2.output_text == "I will check."

    (body,) = upstream.chat_bodies()
    msgs = body["messages"]
    assert_no_progress_upstream([body])
    i, calls, tools = upstream_tool_turn(msgs)
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        (call.call_id, "package_version", {"input": "axum"})
    ], harness.dumps(msgs)
    assert [(t["tool_call_id"], t["content"]) for t in tools] == [(call.call_id, AXUM_OUTPUT)], harness.dumps(msgs)
    shape = [(m["role"], harness.message_text(m) if m["role"] != "tool" else None) for m in msgs]
    assert shape == [
        ("user", "What is the installed version of axum?"),
        ("assistant", harness.message_text(msgs[i])),
        ("tool", None),
        ("assistant", "axum is 0.8."),
        ("user", "And tokio?"),
    ], harness.dumps(msgs)
    assert not (harness.message_text(msgs[i]) or "").strip(), "the tool-call turn carries no text"


# ---------------------------------------------------------------------------
# tool_choice
# ---------------------------------------------------------------------------


def test_tool_choice_custom_forces_package_version(client, upstream):
    upstream.push(ROUND1, ROUND2)
    resp, body = create(
        client, model=MODEL, input="Versions?", tools=[WEATHER_TOOL, PV_TOOL],
        tool_choice={"type": "custom", "name": "package_version"}, store=False,
    )
    assert resp.status == "completed"
    assert body["tool_choice"] == {"type": "custom", "name": "package_version"}, body["tool_choice"]
    assert [o.type for o in resp.output] == ["custom_tool_call", "custom_tool_call_output", "message"]
    assert_package_version_items(resp.output[0], resp.output[1])

    first, second = upstream.chat_bodies()
    assert first.get("tool_choice") == {"type": "function", "function": {"name": "package_version"}}, first.get("tool_choice")
    # After the executed round the forcing choice drops back to auto (the loop cannot spin).
    assert second.get("tool_choice") == "auto", second.get("tool_choice")
    assert [t["function"]["name"] for t in second["tools"]] == ["package_version", "get_weather"]


def test_tool_choice_none_declares_no_tools_upstream(client, upstream):
    upstream.push({"text": ["No tools today."]})
    resp, body = create(client, model=MODEL, input="Which axum?", tools=[PV_TOOL], tool_choice="none", store=False)
    assert resp.status == "completed"
    assert body["tool_choice"] == "none"
    assert [o.type for o in resp.output] == ["message"] and resp.output_text == "No tools today."
    (req,) = upstream.chat_bodies()
    assert not req.get("tools"), f"tool_choice none must declare no tools upstream: {harness.dumps(req.get('tools'))}"
    assert req.get("tool_choice") in (None, "none"), req.get("tool_choice")
