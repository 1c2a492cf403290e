"""Thinking models through the tool loop (issue 30), with the official SDK.

The scripted upstream acts as DeepSeek (or vLLM, with its `reasoning` field) and refuses a
tool round sent back without its reasoning (`POST /_control/require_reasoning`): a web
search turn and a client function round trip replayed with `store: False` and
`include=["reasoning.encrypted_content"]` must complete, with the reasoning back on the
assistant message in the server's own field. On a Responses upstream, a reasoning item's
summary and raw content stay apart, and a streamed failure carries the usage so far.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import harness
import search_fixture as SF
from test_responses_sdk import MODEL, WEATHER_TOOL, create, validate_sdk_events
from test_responses_upstream import responses_gateway_client

pytestmark = pytest.mark.usefixtures("upstream", "searx")


@pytest.fixture
def thinking_server(upstream: harness.Upstream):
    """Yields a function that makes the upstream want its reasoning back in a field; the
    check is off again after the test (the upstream is shared by the whole session)."""

    def require(field: str | None) -> None:
        upstream.http.post("/_control/require_reasoning", json={"field": field}).raise_for_status()

    yield require
    require(None)


@pytest.fixture(scope="module")
def rclient(upstream_server: harness.Upstream, search_server: SF.SearchFixture, tmp_path_factory: pytest.TempPathFactory):
    yield from responses_gateway_client(upstream_server, search_server, tmp_path_factory.mktemp("reasoning-responses-upstream"))


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_web_search_turn_hands_the_reasoning_back(client, upstream, thinking_server):
    thinking_server("reasoning_content")
    upstream.push(
        {"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": "berlin art week"})}], "reasoning_content": ["Search ", "first."]},
        {"text": ["It runs in September."], "reasoning_content": ["Answer."]},
    )
    with client.responses.stream(model=MODEL, input="When is Berlin Art Week?", tools=[{"type": "web_search"}]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    validate_sdk_events(events)
    assert final.status == "completed", final
    assert [o.type for o in final.output if o.type == "reasoning"] == ["reasoning", "reasoning"]
    second = upstream.chat_bodies()[1]
    (call_turn,) = assistants(second)
    assert call_turn["reasoning_content"] == "Search first."
    assert call_turn["tool_calls"][0]["function"]["name"] == "web_search"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_stateless_function_round_trip_hands_the_sealed_reasoning_back(client, upstream, thinking_server, field):
    thinking_server(field)
    upstream.push({"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}],
                   "reasoning_content": ["Need ", "the weather."], "reasoning_field": field})
    first, _ = create(client, model=MODEL, input="Weather in Paris?", tools=[WEATHER_TOOL], store=False,
                      include=["reasoning.encrypted_content"])
    reasoning = next(o for o in first.output if o.type == "reasoning")
    assert reasoning.encrypted_content and reasoning.encrypted_content.startswith("rgs1.")
    assert "weather" not in reasoning.encrypted_content
    call = next(o for o in first.output if o.type == "function_call")
    # Codex's way: the output items back as input, with the call's output.
    replay: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    replay += [o.model_dump(exclude_none=True) for o in first.output]
    replay.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
    upstream.push({"text": ["Sunny."], "reasoning_content": ["Easy."], "reasoning_field": field})
    second, _ = create(client, model=MODEL, input=replay, tools=[WEATHER_TOOL], store=False,
                       include=["reasoning.encrypted_content"])
    assert second.status == "completed" and second.output_text == "Sunny."
    (call_turn,) = assistants(upstream.chat_bodies()[1])
    assert call_turn[field] == "Need the weather."
    # A changed blob is dropped: the server refuses the round, and the SDK raises its 400.
    bad = [dict(i) for i in replay]
    for item in bad:
        if item.get("type") == "reasoning":
            item["encrypted_content"] = item["encrypted_content"][:-6] + "AAAAAA"
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model=MODEL, input=bad, tools=[WEATHER_TOOL], store=False)
    assert f"The `{field}` in the thinking mode must be passed back to the API." in str(err.value)


def test_responses_upstream_keeps_summary_and_content_apart(rclient, upstream):
    # 20 ms apart: each chunk is its own delta (chunks that arrive together leave as one).
    upstream.push({"text": ["42"], "reasoning_content": ["raw ", "thoughts"], "summary": ["Thought about it.", "Then answered."], "token_delay_ms": 20})
    with rclient.responses.stream(model=MODEL, input="q", reasoning={"effort": "low", "summary": "detailed"}) as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    reasoning = final.output[0]
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == ["Thought about it.", "Then answered."]
    assert [c.text for c in reasoning.content or []] == ["raw thoughts"]
    deltas = [e["delta"] for e in dicts if e["type"] == "response.reasoning_summary_text.delta"]
    assert deltas == ["Thought about it.", "Then answered."]
    assert upstream.chat_bodies()[0]["reasoning"] == {"effort": "low", "summary": "detailed"}


def test_a_streamed_failure_carries_the_usage_so_far(rclient, upstream):
    upstream.push({"text": ["par"], "failed": "the engine ran out of memory", "failed_beside": True,
                   "usage": {"prompt_tokens": 9, "completion_tokens": 2, "cached_tokens": 1, "reasoning_tokens": 1}})
    # Read raw (an SDK may raise at the `error` event, before `response.failed`), then parse
    # the terminal event's Response with the SDK's own type.
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{rclient.base_url}responses", json={"model": MODEL, "input": "q", "stream": True},
                      headers={"Authorization": "Bearer test"}, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: "):]))
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"], events
    assert "the engine ran out of memory" in events[-2]["message"]
    failed = openai.types.responses.Response.model_validate(events[-1]["response"])
    assert failed.status == "failed" and "the engine ran out of memory" in failed.error.message
    assert failed.usage.input_tokens == 9 and failed.usage.output_tokens == 2
    assert failed.usage.input_tokens_details.cached_tokens == 1
    assert failed.usage.output_tokens_details.reasoning_tokens == 1
