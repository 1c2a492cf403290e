"""The official openai SDK on what real model servers get wrong (issue 17): two calls
streamed under one `index`, a call the model wrote as text, image input to a text-only
model. Every stream and Response is validated (SDK models, Open Responses schema, stream
invariants) as in test_responses_sdk.py.
"""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import ResponseFunctionToolCall

import validate as V

MODEL = "scripted-model"

pytestmark = pytest.mark.usefixtures("upstream")

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def calls_of(client: openai.OpenAI, gateway, upstream, script: dict, request: dict) -> list[ResponseFunctionToolCall]:
    """Runs `script` streamed (validated) and not; the same calls both ways, typed by the SDK."""
    upstream.push(script)
    raw = gateway.stream_validated(request)
    streamed = raw.terminal()["response"]["output"]
    upstream.push(script)
    raw_resp = client.responses.with_raw_response.create(**request)
    body = raw_resp.http_response.json()
    V.validate_response(body)
    resp = raw_resp.parse()
    strip = lambda items: [{k: v for k, v in i.items() if k not in ("id", "call_id")} for i in items]  # noqa: E731
    assert strip(body["output"]) == strip(streamed)
    assert all(isinstance(i, ResponseFunctionToolCall) for i in resp.output), resp.output
    return list(resp.output)


def test_two_calls_under_one_index_are_two_typed_calls(client, gateway, upstream):
    def call(call_id: str, city: str) -> dict:
        return {"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]}
    script = {"deltas": [call("a", "Paris"), call("b", "Rome")]}
    calls = calls_of(client, gateway, upstream, script, {"model": MODEL, "input": "weather?", "tools": [WEATHER_TOOL]})
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]


def test_a_call_written_as_text_is_a_typed_call(client, gateway, upstream):
    script = {"text": ["<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"]}
    calls = calls_of(client, gateway, upstream, script, {"model": MODEL, "input": "weather?", "tools": [WEATHER_TOOL]})
    assert [(c.name, json.loads(c.arguments), c.status) for c in calls] == [("get_weather", {"city": "Oslo"}, "completed")]


def test_image_input_to_a_text_only_model_is_a_400(client, gateway, upstream):
    body = '{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}'
    upstream.push({"http_status": 500, "error_body": body})
    image = [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    ]}]
    with pytest.raises(openai.BadRequestError) as ei:
        client.responses.create(model=MODEL, input=image)
    err = ei.value.response.json()["error"]
    assert (err["type"], err["code"], err["param"]) == ("invalid_request_error", "unsupported_input", "input")
    assert err["message"].startswith("The model does not accept image input")


STRICT_WEATHER = {
    "type": "function",
    "name": "get_weather",
    "strict": True,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False},
}


def test_a_strict_function_is_asked_again_and_returns_valid_arguments(client, gateway, upstream):
    # The first attempt does not match the schema; the second is near-JSON that repairs to
    # a valid object: only that one reaches the client, streamed or not.
    first = {"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"town": "Oslo"})}]}
    second = {"tool_calls": [{"name": "get_weather", "arguments": "{city: 'Oslo',}", "fragment_chars": 3}]}
    request = {"model": MODEL, "input": "weather?", "tools": [STRICT_WEATHER], "store": False}
    upstream.push(first)
    upstream.push(second)
    raw = gateway.stream_validated(request)
    streamed = raw.terminal()["response"]
    assert streamed["status"] == "completed"
    upstream.push(first)
    upstream.push(second)
    resp = client.responses.create(**request)
    assert resp.status == "completed"
    calls = [i for i in resp.output if isinstance(i, ResponseFunctionToolCall)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert [i["arguments"] for i in streamed["output"] if i["type"] == "function_call"] == [calls[0].arguments]


def test_a_strict_function_invalid_twice_is_an_incomplete_response(client, gateway, upstream):
    bad = {"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"town": "Oslo"})}]}
    upstream.push(bad)
    upstream.push(bad)
    raw = client.responses.with_raw_response.create(model=MODEL, input="weather?", tools=[STRICT_WEATHER], store=False)
    V.validate_response(raw.http_response.json())
    resp = raw.parse()
    assert (resp.status, resp.incomplete_details.reason) == ("incomplete", "content_filter")
    assert not [i for i in resp.output if isinstance(i, ResponseFunctionToolCall)], resp.output


def test_an_ignored_required_tool_choice_is_asked_again(client, gateway, upstream):
    upstream.push({"text": ["It is sunny."]})
    upstream.push({"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})}]})
    raw = client.responses.with_raw_response.create(model=MODEL, input="weather?", tools=[WEATHER_TOOL],
                                                    tool_choice="required", store=False)
    V.validate_response(raw.http_response.json())
    resp = raw.parse()
    assert resp.status == "completed"
    assert [i.type for i in resp.output] == ["message", "function_call"]
    assert raw.http_response.json()["output"][0]["phase"] == "commentary"
    assert json.loads(resp.output[1].arguments) == {"city": "Oslo"}
