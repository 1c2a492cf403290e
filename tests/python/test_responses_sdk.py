"""The official openai SDK against the gateway (in front of the scripted upstream).

Every Response object, output item and stream event seen here is validated against
the SDK's pydantic models (explicitly — the SDK itself only `construct`s) and the
Open Responses schema (see validate.py for what that schema lacks and how such
parts are filtered out); every stream also against the stream invariants.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.shared import ErrorObject

import harness
import validate as V

MODEL = "scripted-model"

pytestmark = pytest.mark.usefixtures("upstream")

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
SQL_TOOL = {"type": "custom", "name": "run_sql", "description": "Run SQL"}
USAGE_SCRIPT = {"prompt_tokens": 10, "completion_tokens": 5}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def create(client: openai.OpenAI, **kwargs: Any):
    """client.responses.create, with the raw JSON body validated (SDK + Open Responses)."""
    raw = client.responses.with_raw_response.create(**kwargs)
    body = raw.http_response.json()
    V.validate_response(body)
    resp = raw.parse()
    assert resp.id == body["id"]
    return resp, body


_LIB_KEYS = {"snapshot", "parsed", "parsed_arguments"}  # added by the SDK's stream helper / parse()


def _strip_lib(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_lib(v) for k, v in obj.items() if k not in _LIB_KEYS}
    if isinstance(obj, list):
        return [_strip_lib(v) for v in obj]
    return obj


def sdk_dict(model: Any) -> dict[str, Any]:
    """What the server sent for an SDK-constructed model (fields as received)."""
    return _strip_lib(model.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False))


def validate_sdk_events(events: list[Any]) -> list[dict[str, Any]]:
    """Validate events as the SDK yielded them (not strict: the SDK already coerced some
    types, e.g. created_at to float; the raw-SSE twins are validated strictly)."""
    dicts = [sdk_dict(e) for e in events]
    V.validate_stream(dicts, strict=False)
    return dicts


def without_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in it.items() if k not in ("id", "call_id")} for it in items]


def find_tool_call_turn(messages: list[dict[str, Any]]) -> int:
    idx = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]
    assert len(idx) == 1, f"expected one assistant message with tool_calls, got {idx}:\n{harness.dumps(messages)}"
    return idx[0]


def upstream_function(body: dict[str, Any], name: str) -> dict[str, Any]:
    fns = [
        t["function"]
        for t in body.get("tools") or []
        if t.get("type") == "function" and (t.get("function") or {}).get("name") == name
    ]
    assert len(fns) == 1, f"upstream request should declare function {name!r} once:\n{harness.dumps(body.get('tools'))}"
    return fns[0]


# ---------------------------------------------------------------------------
# 1. plain text, non-streaming
# ---------------------------------------------------------------------------


def test_create_text_maps_text_status_and_usage(client, upstream):
    upstream.push({"text": ["Hello", " world"], "usage": USAGE_SCRIPT})
    resp, body = create(client, model=MODEL, input="hi")

    assert resp.output_text == "Hello world"
    assert resp.status == "completed"
    assert body["object"] == "response"
    assert body["id"].startswith("resp_"), body["id"]
    assert resp.error is None and resp.incomplete_details is None
    assert resp.completed_at is not None and resp.completed_at >= resp.created_at

    assert len(resp.output) == 1
    msg = resp.output[0]
    assert isinstance(msg, ResponseOutputMessage)
    assert (msg.role, msg.status) == ("assistant", "completed")
    assert len(msg.content) == 1 and isinstance(msg.content[0], ResponseOutputText)
    assert msg.content[0].text == "Hello world"
    assert msg.content[0].annotations == []

    assert resp.usage is not None
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (10, 5, 15)
    assert resp.usage.input_tokens_details.cached_tokens == 0
    assert resp.usage.output_tokens_details.reasoning_tokens == 0

    bodies = upstream.chat_bodies()
    assert len(bodies) == 1
    last = bodies[0]["messages"][-1]
    assert last["role"] == "user" and harness.message_text(last) == "hi", bodies[0]["messages"]


# ---------------------------------------------------------------------------
# 2. streaming: SDK stream helper, SDK raw iterator, raw SSE twin, non-stream twin
# ---------------------------------------------------------------------------

DELTAS = ["Hel", "lo", ", ", "wor", "ld", "!"]


def test_stream_helper_final_response_and_raw_twin(client, upstream, gateway):
    # The chunks 20 ms apart: each arrives on its own, so each is its own delta (chunks that
    # arrive together leave as one delta, issue 34).
    script = {"text": DELTAS, "usage": USAGE_SCRIPT, "token_delay_ms": 20}

    upstream.push(script)
    with client.responses.stream(model=MODEL, input="hi") as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    V.validate_response(sdk_dict(final), strict=False)

    sdk_deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(sdk_deltas) == "Hello, world!"
    assert final.output_text == "".join(sdk_deltas)
    # no buffering: one text delta per upstream content chunk
    assert sdk_deltas == DELTAS
    assert final.status == "completed"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens) == (10, 5, 15)

    # The raw SSE of the same request.
    upstream.push(script)
    raw = gateway.stream_validated({"model": MODEL, "input": "hi"})
    assert raw.types() == [d["type"] for d in dicts]
    assert "".join(V.iter_text_deltas(raw.events)) == "Hello, world!"
    assert raw.events[0]["response"]["usage"] is None
    assert raw.events[1]["response"]["usage"] is None
    assert raw.events[0]["response"]["output"] == []
    done = raw.of("response.output_text.done")
    assert len(done) == 1 and done[0]["text"] == "Hello, world!"
    completed = raw.terminal()
    assert completed["type"] == "response.completed"
    assert completed["response"]["usage"]["total_tokens"] == 15

    # Streaming and non-streaming give the same output items (ids aside).
    upstream.push(script)
    resp, body = create(client, model=MODEL, input="hi")
    assert without_ids(body["output"]) == without_ids(completed["response"]["output"])


def test_stream_raw_iterator_via_create_stream_true(client, upstream):
    upstream.push({"text": DELTAS, "usage": USAGE_SCRIPT})
    stream = client.responses.create(model=MODEL, input="hi", stream=True)
    events = list(stream)
    validate_sdk_events(events)
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Hello, world!"


def test_finish_reason_length_is_incomplete(client, upstream, gateway):
    """Contract §11: finish_reason length -> status incomplete, reason max_output_tokens."""
    script = {"text": ["Once upon", " a time"], "finish_reason": "length", "usage": USAGE_SCRIPT}
    upstream.push(script)
    resp, body = create(client, model=MODEL, input="Tell a story")
    assert resp.status == "incomplete"
    assert resp.incomplete_details is not None and resp.incomplete_details.reason == "max_output_tokens"
    assert resp.output_text == "Once upon a time"
    assert [(o.type, o.status) for o in resp.output] == [("message", "incomplete")]

    upstream.push(script)
    raw = gateway.stream_validated({"model": MODEL, "input": "Tell a story"})
    final = raw.terminal()
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert without_ids(final["response"]["output"]) == without_ids(body["output"])


# ---------------------------------------------------------------------------
# 3. function tool round trip (store=false, client replays the output)
# ---------------------------------------------------------------------------


def test_function_tool_round_trip_store_false(client, upstream):
    input1 = [{"role": "user", "content": "What is the weather in Paris?"}]
    upstream.push({
        "tool_calls": [{"name": "get_weather", "arguments": '{"city":"Paris"}', "pretty": True, "fragment_chars": 3}],
        "usage": USAGE_SCRIPT,
    })
    resp1, body1 = create(client, model=MODEL, input=input1, tools=[WEATHER_TOOL], store=False)

    assert resp1.status == "completed"
    assert body1.get("store") is False
    assert len(resp1.output) == 1, harness.dumps(body1["output"])
    fc = resp1.output[0]
    assert isinstance(fc, ResponseFunctionToolCall)
    assert fc.name == "get_weather"
    assert isinstance(fc.call_id, str) and fc.call_id
    assert json.loads(fc.arguments) == {"city": "Paris"}
    assert fc.status == "completed"
    assert resp1.output_text == ""

    req1 = upstream.chat_bodies()[0]
    fn = upstream_function(req1, "get_weather")
    assert fn["parameters"]["properties"] == {"city": {"type": "string"}}
    assert fn["parameters"]["required"] == ["city"]

    # Turn 2: the client sends the whole transcript back.
    input2 = (
        input1
        + [item.model_dump(mode="json", by_alias=True, exclude_unset=True) for item in resp1.output]
        + [{"type": "function_call_output", "call_id": fc.call_id, "output": "18C sunny"}]
    )
    upstream.push({"text": ["It is 18C and sunny ", "in Paris."]})
    resp2, _ = create(client, model=MODEL, input=input2, tools=[WEATHER_TOOL], store=False)
    assert resp2.status == "completed"
    assert resp2.output_text == "It is 18C and sunny in Paris."

    bodies = upstream.chat_bodies()
    assert len(bodies) == 2
    msgs = bodies[1]["messages"]
    i = find_tool_call_turn(msgs)
    assert any(m.get("role") == "user" and harness.message_text(m) == "What is the weather in Paris?" for m in msgs[:i])
    calls = msgs[i]["tool_calls"]
    assert len(calls) == 1
    assert calls[0]["id"] == fc.call_id
    assert calls[0].get("type", "function") == "function"
    assert calls[0]["function"]["name"] == "get_weather"
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Paris"}
    assert i + 1 < len(msgs), f"no message after the tool call:\n{harness.dumps(msgs)}"
    tool_msg = msgs[i + 1]
    assert tool_msg.get("role") == "tool", harness.dumps(msgs)
    assert tool_msg.get("tool_call_id") == fc.call_id
    assert tool_msg.get("content") == "18C sunny"
    assert i + 1 == len(msgs) - 1, f"unexpected messages after the tool result:\n{harness.dumps(msgs)}"


# ---------------------------------------------------------------------------
# 4. custom tool round trip
# ---------------------------------------------------------------------------


def declared_custom_parameter(client, upstream) -> str:
    """Ask the gateway how it declares a custom tool upstream; return the parameter name."""
    upstream.push({"text": ["ok"]})
    resp, body = create(client, model=MODEL, input="Count the rows.", tools=[SQL_TOOL])
    assert resp.output_text == "ok"
    assert [(t["type"], t["name"]) for t in body["tools"]] == [("custom", "run_sql")], body["tools"]
    fn = upstream_function(upstream.chat_bodies()[-1], "run_sql")
    params = fn["parameters"]
    assert params.get("type") == "object", params
    props = params.get("properties") or {}
    assert len(props) == 1, f"a custom tool is a function with exactly one string parameter: {params}"
    ((name, schema),) = props.items()
    assert schema.get("type") == "string", params
    assert params.get("required") == [name], params
    upstream.reset()
    return name


def test_custom_tool_round_trip(client, upstream):
    param = declared_custom_parameter(client, upstream)

    input1 = [{"role": "user", "content": "How many rows?"}]
    upstream.push({"tool_calls": [{"name": "run_sql", "arguments": json.dumps({param: "SELECT 1"}), "fragment_chars": 4}]})
    resp1, body1 = create(client, model=MODEL, input=input1, tools=[SQL_TOOL], store=False)
    assert resp1.status == "completed"
    assert len(resp1.output) == 1, harness.dumps(body1["output"])
    ctc = resp1.output[0]
    assert isinstance(ctc, ResponseCustomToolCall)
    assert ctc.name == "run_sql"
    assert ctc.input == "SELECT 1"
    assert isinstance(ctc.call_id, str) and ctc.call_id

    input2 = input1 + [
        ctc.model_dump(mode="json", by_alias=True, exclude_unset=True),
        {"type": "custom_tool_call_output", "call_id": ctc.call_id, "output": "1"},
    ]
    upstream.push({"text": ["There is 1 row."]})
    resp2, _ = create(client, model=MODEL, input=input2, tools=[SQL_TOOL], store=False)
    assert resp2.output_text == "There is 1 row."

    bodies = upstream.chat_bodies()
    assert len(bodies) == 2
    msgs = bodies[1]["messages"]
    i = find_tool_call_turn(msgs)
    calls = msgs[i]["tool_calls"]
    assert len(calls) == 1
    assert calls[0]["id"] == ctc.call_id
    assert calls[0]["function"]["name"] == "run_sql"
    assert json.loads(calls[0]["function"]["arguments"]) == {param: "SELECT 1"}
    assert i + 1 < len(msgs), harness.dumps(msgs)
    tool_msg = msgs[i + 1]
    assert (tool_msg.get("role"), tool_msg.get("tool_call_id"), tool_msg.get("content")) == ("tool", ctc.call_id, "1"), harness.dumps(msgs)


def test_custom_tool_streaming_input_deltas(client, upstream, gateway):
    param = declared_custom_parameter(client, upstream)
    # Quotes and a backslash: the JSON-escaped argument is split inside escapes.
    sql = 'SELECT "a" FROM t WHERE b = \'x\\y\' -- é'
    script = {"tool_calls": [{"name": "run_sql", "arguments": json.dumps({param: sql}), "fragment_chars": 3}]}
    request = {"model": MODEL, "input": "Run it.", "tools": [SQL_TOOL]}

    upstream.push(script)
    raw = gateway.stream_validated(request)
    deltas = raw.of("response.custom_tool_call_input.delta")
    assert deltas, f"no response.custom_tool_call_input.delta events: {raw.types()}"
    assert "".join(d["delta"] for d in deltas) == sql
    assert not raw.of("response.function_call_arguments.delta"), "the function wrapper of a custom tool leaked"
    for d in raw.of("response.custom_tool_call_input.done"):
        assert d["input"] == sql
    done = [e["item"] for e in raw.of("response.output_item.done")]
    assert [(it["type"], it.get("input")) for it in done] == [("custom_tool_call", sql)]
    final = raw.terminal()
    assert final["type"] == "response.completed"
    assert [(it["type"], it.get("input")) for it in final["response"]["output"]] == [("custom_tool_call", sql)]

    # The SDK's own streaming path.
    upstream.push(script)
    events = list(client.responses.create(stream=True, **request))
    validate_sdk_events(events)
    sdk_deltas = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
    assert "".join(sdk_deltas) == sql
    completed = events[-1]
    assert completed.type == "response.completed"
    assert isinstance(completed.response.output[0], ResponseCustomToolCall)
    assert completed.response.output[0].input == sql


# ---------------------------------------------------------------------------
# 5. streaming function-call arguments
# ---------------------------------------------------------------------------


def test_stream_function_call_arguments(client, upstream, gateway):
    args = '{"city":"Paris","unit":"celsius"}'
    # 20 ms apart: each fragment arrives on its own (fragments that arrive together leave as
    # one delta, issue 34).
    script = {"tool_calls": [{"name": "get_weather", "arguments": args, "fragment_chars": 4}], "token_delay_ms": 20}
    request = {"model": MODEL, "input": "Weather in Paris?", "tools": [WEATHER_TOOL]}

    upstream.push(script)
    raw = gateway.stream_validated(request)
    deltas = raw.of("response.function_call_arguments.delta")
    assert len(deltas) >= 2, f"expected the arguments in several deltas: {raw.types()}"
    concat = "".join(d["delta"] for d in deltas)
    assert json.loads(concat) == json.loads(args)
    dones = raw.of("response.function_call_arguments.done")
    assert len(dones) == 1 and dones[0]["arguments"] == concat
    item_done = raw.of("response.output_item.done")
    assert len(item_done) == 1
    item = item_done[0]["item"]
    assert (item["type"], item["name"], item["arguments"], item.get("status")) == ("function_call", "get_weather", concat, "completed")
    assert {d["item_id"] for d in deltas} == {item["id"]}
    final = raw.terminal()
    assert final["type"] == "response.completed" and final["response"]["status"] == "completed"
    assert [it["type"] for it in final["response"]["output"]] == ["function_call"]

    # The SDK stream helper.
    upstream.push(script)
    with client.responses.stream(**request) as stream:
        events = list(stream)
        resp = stream.get_final_response()
    validate_sdk_events(events)
    sdk_deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(sdk_deltas) >= 2
    fc = resp.output[0]
    assert isinstance(fc, ResponseFunctionToolCall)
    assert "".join(sdk_deltas) == fc.arguments
    assert json.loads(fc.arguments) == {"city": "Paris", "unit": "celsius"}


def test_stream_parallel_function_calls(client, upstream, gateway):
    script = {"tool_calls": [
        {"name": "get_weather", "arguments": '{"city":"Paris"}', "fragment_chars": 5},
        {"name": "get_weather", "arguments": '{"city":"Berlin"}', "fragment_chars": 5},
    ]}
    upstream.push(script)
    raw = gateway.stream_validated({"model": MODEL, "input": "Paris and Berlin?", "tools": [WEATHER_TOOL]})
    added = [e for e in raw.of("response.output_item.added")]
    assert [e["item"]["type"] for e in added] == ["function_call", "function_call"]
    assert added[0]["output_index"] < added[1]["output_index"]
    items = {e["item"]["id"]: e["item"] for e in raw.of("response.output_item.done")}
    assert len(items) == 2
    assert len({it["call_id"] for it in items.values()}) == 2
    for item_id, item in items.items():
        concat = "".join(d["delta"] for d in raw.of("response.function_call_arguments.delta") if d["item_id"] == item_id)
        assert concat == item["arguments"]
    assert sorted(json.loads(it["arguments"])["city"] for it in items.values()) == ["Berlin", "Paris"]
    out = raw.terminal()["response"]["output"]
    assert [json.loads(it["arguments"])["city"] for it in out] == ["Paris", "Berlin"]


# ---------------------------------------------------------------------------
# 6. error paths
# ---------------------------------------------------------------------------

# Several copies: a gateway may retry a 5xx upstream, which must not turn into a success
# (an empty script queue answers with default text).
UPSTREAM_500 = [{"http_status": 500, "error_body": '{"error":{"message":"model server exploded","type":"server_error"}}'}] * 3


def test_upstream_500_non_streaming_is_502(client, upstream):
    upstream.push(UPSTREAM_500)
    with pytest.raises(openai.APIStatusError) as ei:
        client.responses.create(model=MODEL, input="hi")
    e = ei.value
    assert e.status_code == 502, (e.status_code, e.response.text)
    body = e.response.json()
    assert isinstance(body.get("error"), dict), body
    err = body["error"]
    ErrorObject.model_validate_json(json.dumps(err), strict=True)  # {message, type, param, code}
    assert {"message", "type", "param", "code"} <= set(err), err
    assert err["message"]
    assert e.message and e.type == err["type"]
    assert len(upstream.requests()) >= 1


def test_upstream_500_streaming_error_then_failed(client, upstream, gateway):
    request = {"model": MODEL, "input": "hi"}
    upstream.push(UPSTREAM_500)
    raw = gateway.stream_raw(request)
    assert raw.status_code == 200, f"a streaming request fails inside the stream, got HTTP {raw.status_code}: {raw.text[:500]}"
    assert not raw.problems, raw.problems
    V.validate_stream(raw.events)
    assert raw.types()[:2] == ["response.created", "response.in_progress"]
    assert raw.types()[-2:] == ["error", "response.failed"], raw.types()

    err_ev = raw.events[-2]
    assert isinstance(err_ev.get("message"), str) and err_ev["message"], err_ev  # flat (SDK/SPEC shape)
    nested = err_ev.get("error")
    assert isinstance(nested, dict), f"error event lacks the nested `error` object: {err_ev}"
    assert isinstance(nested.get("type"), str) and nested["type"]
    assert isinstance(nested.get("message"), str) and nested["message"]
    assert "code" in nested and "param" in nested
    assert nested.get("code") == err_ev.get("code")

    failed = raw.events[-1]["response"]
    assert failed["status"] == "failed"
    assert isinstance(failed.get("error"), dict) and failed["error"].get("code") and failed["error"].get("message"), failed

    # Through the SDK: it raises on the nested error (openai/_streaming.py) or yields error/failed.
    upstream.push(UPSTREAM_500)
    seen: list[Any] = []
    raised: openai.APIError | None = None
    try:
        for ev in client.responses.create(stream=True, **request):
            seen.append(ev)
    except openai.APIError as exc:
        raised = exc
    if raised is not None:
        for e in seen:
            V.validate_event(sdk_dict(e), strict=False)
        assert raised.message, raised
        assert [e.type for e in seen] == ["response.created", "response.in_progress"]
    else:
        validate_sdk_events(seen)
        assert [e.type for e in seen][-2:] == ["error", "response.failed"]


@pytest.mark.parametrize("kind", ["disconnect", "malformed"])
def test_upstream_fault_mid_stream_ends_with_one_failed_terminal(client, upstream, gateway, kind):
    """DESIGN: exactly one terminal event on every stream, also when the upstream breaks
    mid-answer; the partial message is closed (output_item.done) before it."""
    script = {"text": ["Hel", "lo", " wor", "ld"], "fault": {"kind": kind, "after_chunks": 2}}
    upstream.push([script] * 3)
    raw = gateway.stream_validated({"model": MODEL, "input": "hi"})
    assert raw.terminal()["type"] == "response.failed", raw.types()
    assert raw.terminal()["response"]["error"], raw.terminal()

    upstream.push([script] * 3)
    with pytest.raises(openai.APIStatusError) as ei:
        client.responses.create(model=MODEL, input="hi")
    assert ei.value.status_code == 502, (ei.value.status_code, ei.value.response.text)


def test_bad_tool_choice_is_400_with_param(client, upstream, gateway):
    kwargs = dict(model=MODEL, input="hi", tools=[WEATHER_TOOL], tool_choice={"type": "function", "name": "nope"})
    with pytest.raises(openai.BadRequestError) as ei:
        client.responses.create(**kwargs)
    e = ei.value
    assert e.status_code == 400
    assert e.param == "tool_choice", e.response.text
    assert e.type == "invalid_request_error"
    err = e.response.json()["error"]
    ErrorObject.model_validate_json(json.dumps(err), strict=True)
    assert "nope" in err["message"]

    # Streaming: validated before the stream starts, so a plain HTTP 400, not SSE.
    with pytest.raises(openai.BadRequestError) as ei2:
        client.responses.create(stream=True, **kwargs)
    assert ei2.value.param == "tool_choice"
    raw = gateway.stream_raw(kwargs)
    assert raw.status_code == 400
    assert raw.headers.get("content-type", "").startswith("application/json")
    assert json.loads(raw.text)["error"]["param"] == "tool_choice"

    assert upstream.requests() == [], "a rejected request must not reach the upstream"


# ---------------------------------------------------------------------------
# reasoning (upstream `reasoning_content`)
# ---------------------------------------------------------------------------


def test_upstream_reasoning_is_a_typed_reasoning_item(client, upstream, gateway):
    """`delta.reasoning_content` streams as `response.reasoning_text.delta` on a `reasoning`
    item (contract §8.4 h, raw reasoning); the SDK types every event and item, `output_text`
    is the answer alone, and a store=false replay of the reasoning item is accepted and not
    sent upstream."""
    from openai.types.responses import ResponseReasoningItem

    # 20 ms apart: each chunk is its own delta (chunks that arrive together leave as one).
    script = {"reasoning_content": ["The user", " greets."], "tool_calls": [{"name": "get_weather", "arguments": '{"city":"Oslo"}'}], "token_delay_ms": 20}
    upstream.push(script)
    with client.responses.stream(model=MODEL, input="weather in Oslo?", tools=[WEATHER_TOOL], store=False) as stream:
        events = list(stream)
        final = stream.get_final_response()
    validate_sdk_events(events)
    V.validate_response(sdk_dict(final), strict=False)
    deltas = [e.delta for e in events if e.type == "response.reasoning_text.delta"]
    assert deltas == ["The user", " greets."]
    assert isinstance(final.output[0], ResponseReasoningItem)
    assert isinstance(final.output[1], ResponseFunctionToolCall)
    assert len(final.output) == 2
    rs = final.output[0]
    assert rs.status == "completed" and rs.summary == []
    assert rs.content is not None and [c.text for c in rs.content] == ["The user greets."]

    # The raw twin validates strictly (SDK models and Open Responses).
    upstream.push(script)
    gateway.stream_validated({"model": MODEL, "input": "weather in Oslo?", "tools": [WEATHER_TOOL], "store": False})

    # Turn 2 replays the reasoning item and the call as the SDK dumps them.
    fc = final.output[1]
    input2 = (
        [{"role": "user", "content": "weather in Oslo?"}]
        + [item.model_dump(mode="json", by_alias=True, exclude_unset=True) for item in final.output]
        + [{"type": "function_call_output", "call_id": fc.call_id, "output": "-3C"}]
    )
    upstream.push({"reasoning_content": ["Cold."], "text": ["It is -3C."]})
    resp2, body2 = create(client, model=MODEL, input=input2, tools=[WEATHER_TOOL], store=False)
    assert resp2.output_text == "It is -3C."
    assert [i["type"] for i in body2["output"]] == ["reasoning", "message"]
    sent = json.dumps(upstream.chat_bodies()[-1]["messages"])
    assert "The user greets" not in sent, sent


def test_models_list_and_retrieve(client):
    """`client.models.list()` / `.retrieve()`: the upstream's models; an unknown id is the
    SDK's NotFoundError with code model_not_found."""
    ids = [m.id for m in client.models.list()]
    assert ids, ids
    model = client.models.retrieve(ids[0])
    assert model.id == ids[0] and model.object == "model"
    with pytest.raises(openai.NotFoundError) as err:
        client.models.retrieve("no-such-model")
    assert err.value.code == "model_not_found"


def test_readiness_follows_the_upstream_and_logs_only_its_changes(tmp_path):
    """`/readyz` is 503 while the upstream is down and 200 once it is back. The operator sees
    one warn line when it goes down, not one per probe, and one info line when it is back."""
    port = harness.free_port()
    upstream_bin = harness.binary("UPSTREAM_BIN", "scripted-upstream")
    up = harness.start_upstream(upstream_bin, tmp_path, listen=f"127.0.0.1:{port}")
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), up.base_url, tmp_path)
    try:
        ready = lambda: gw.http.get("/readyz").status_code  # noqa: E731
        assert ready() == 200
        up.close()
        up.proc.stop()
        mark = gw.proc.log_size()
        assert [ready(), ready(), ready()] == [503, 503, 503]
        body = gw.http.get("/readyz").json()
        assert body["status"] == "not_ready" and body["reason"], body
        up = harness.start_upstream(upstream_bin, tmp_path, listen=f"127.0.0.1:{port}")
        assert ready() == 200
        log = gw.proc.tail(since=mark)
        assert log.count("readyz: not ready") == 1 and log.count("WARN") == 1, log
        assert log.count("readyz: the upstream answers again") == 1, log
    finally:
        gw.close()
        gw.proc.stop()
        up.close()
        up.proc.stop()
