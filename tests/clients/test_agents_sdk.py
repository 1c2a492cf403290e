"""The OpenAI Agents SDK (`openai-agents`, pinned) against the gateway, unchanged: its
Responses model (`OpenAIResponsesModel`) on an AsyncOpenAI client whose base_url is the
gateway. Each test scripts the model, runs an agent and checks both what the SDK returns and
what reached the model server.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    WebSearchTool,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import ResponseFunctionWebSearch, ResponseOutputMessage
from pydantic import BaseModel

# Tracing would post spans to api.openai.com.
set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 21 C"


def run(coro):
    return asyncio.run(coro)


def agent(client, **kw) -> Agent:
    kw.setdefault("instructions", "Be brief.")
    return Agent(name=kw.pop("name", "assistant"), model=OpenAIResponsesModel("scripted-model", client), **kw)


def test_function_tool_round_trip(async_client, upstream):
    upstream.push(
        {"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}]},
        {"text": ["It", " is", " sunny."]},
    )
    result = run(Runner.run(agent(async_client, tools=[get_weather]), "Weather in Paris?"))
    assert result.final_output == "It is sunny."
    assert [i.type for i in result.new_items] == ["tool_call_item", "tool_call_output_item", "message_output_item"]
    first, second = upstream.chat_bodies()
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    (call,) = [m for m in second["messages"] if m.get("tool_calls")][0]["tool_calls"]
    (out,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert out["tool_call_id"] == call["id"]
    assert out["content"] == "Sunny in Paris, 21 C"


def test_streamed_run_gives_typed_events_and_the_text(async_client, upstream):
    upstream.push(
        {"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Rome"})}]},
        {"text": ["Rome", " is", " warm."]},
    )

    async def go():
        streamed = Runner.run_streamed(agent(async_client, tools=[get_weather]), "Weather in Rome?")
        raw, items = [], []
        async for ev in streamed.stream_events():
            if ev.type == "raw_response_event":
                raw.append(ev.data)
            elif ev.type == "run_item_stream_event":
                items.append(ev.item.type)
        return streamed, raw, items

    streamed, raw, items = run(go())
    assert streamed.final_output == "Rome is warm."
    assert items == ["tool_call_item", "tool_call_output_item", "message_output_item"]
    types = [e.type for e in raw]
    assert types.count("response.created") == 2 and types.count("response.completed") == 2
    # Every raw event is one of the SDK's typed events (its union parsed it), in order.
    assert all(type(e).__module__.startswith("openai.types.responses") for e in raw)
    deltas = "".join(e.delta for e in raw if e.type == "response.output_text.delta")
    assert deltas == "Rome is warm."
    args = "".join(e.delta for e in raw if e.type == "response.function_call_arguments.delta")
    assert json.loads(args) == {"city": "Rome"}


class Weather(BaseModel):
    city: str
    sunny: bool


def test_structured_output_goes_upstream_as_a_json_schema(async_client, upstream):
    upstream.push({"text": ['{"city":', '"Paris","sunny":true}']})
    result = run(Runner.run(agent(async_client, output_type=Weather), "Paris?"))
    assert result.final_output == Weather(city="Paris", sunny=True)
    (body,) = upstream.chat_bodies()
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert set(fmt["json_schema"]["schema"]["properties"]) == {"city", "sunny"}


def test_handoff_switches_agent(async_client, upstream):
    spanish = agent(async_client, name="spanish", instructions="Responde en español.")
    triage = agent(async_client, name="triage", instructions="Route the user.", handoffs=[spanish])
    upstream.push({"tool_calls": [{"name": "transfer_to_spanish", "arguments": "{}"}]}, {"text": ["¡Hola!"]})
    result = run(Runner.run(triage, "hola"))
    assert result.final_output == "¡Hola!"
    assert result.last_agent.name == "spanish"
    first, second = upstream.chat_bodies()
    assert first["messages"][0]["content"] == "Route the user."
    assert second["messages"][0]["content"] == "Responde en español."


def test_previous_response_id_and_conversation_keep_state_on_the_gateway(async_client, upstream):
    a = agent(async_client)
    upstream.push({"text": ["one"]}, {"text": ["two"]}, {"text": ["c1"]}, {"text": ["c2"]})

    async def go():
        r1 = await Runner.run(a, "first")
        r2 = await Runner.run(a, "second", previous_response_id=r1.last_response_id)
        conv = await async_client.conversations.create()
        await Runner.run(a, "alpha", conversation_id=conv.id)
        r4 = await Runner.run(a, "beta", conversation_id=conv.id)
        return r1.final_output, r2.final_output, r4.final_output

    assert run(go()) == ("one", "two", "c2")
    bodies = upstream.chat_bodies()
    assert [(m["role"], m["content"]) for m in bodies[1]["messages"][1:]] == [
        ("user", "first"), ("assistant", "one"), ("user", "second")]
    assert [(m["role"], m["content"]) for m in bodies[3]["messages"][1:]] == [
        ("user", "alpha"), ("assistant", "c1"), ("user", "beta")]


def test_model_settings_reach_the_model_server(async_client, upstream):
    upstream.push(
        {"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})},
                        {"name": "get_weather", "arguments": json.dumps({"city": "Bergen"})}]},
        {"text": ["Both", " cold."]},
    )
    settings = ModelSettings(tool_choice="required", parallel_tool_calls=True, temperature=0.2, top_p=0.9,
                             max_tokens=77, store=False)
    result = run(Runner.run(agent(async_client, tools=[get_weather], model_settings=settings), "Oslo and Bergen?"))
    assert result.final_output == "Both cold."
    assert [i.type for i in result.new_items].count("tool_call_output_item") == 2
    first, second = upstream.chat_bodies()
    assert (first["tool_choice"], first["parallel_tool_calls"]) == ("required", True)
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.2, 0.9, 77)
    # The SDK resets tool_choice after a tool use, so the answer can come.
    assert second.get("tool_choice") in (None, "auto")
    outs = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert outs == ["Sunny in Oslo, 21 C", "Sunny in Bergen, 21 C"]


def test_hosted_web_search_tool_runs_on_the_gateway(async_client, upstream, searx):
    upstream.push(
        {"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": "axum 0.8"})}]},
        {"text": ["See", " [axum](https://docs.rs/axum/latest/axum/)."]},
        {"text": ["Still", " axum."]},
    )
    a = agent(async_client, tools=[WebSearchTool()])

    async def go():
        first = await Runner.run(a, "axum news?")
        # The SDK's next turn replays the items (no previous_response_id).
        second = await Runner.run(a, first.to_input_list() + [{"role": "user", "content": "and then?"}])
        return first, second

    result, follow = run(go())
    assert result.final_output == "See [axum](https://docs.rs/axum/latest/axum/)."
    calls = [i.raw_item for i in result.new_items if i.type == "tool_call_item"]
    assert len(calls) == 1 and isinstance(calls[0], ResponseFunctionWebSearch)
    assert calls[0].status == "completed"
    msg = [i.raw_item for i in result.new_items if i.type == "message_output_item"][0]
    assert isinstance(msg, ResponseOutputMessage)
    (ann,) = msg.content[0].annotations
    assert ann.type == "url_citation" and ann.url == "https://docs.rs/axum/latest/axum/"
    assert [q["q"] for q in searx.queries] == [["axum 0.8"]]

    # On the replay, the gateway restores the stored results: the model sees them again.
    assert follow.final_output == "Still axum."
    tool_msgs = [m for m in upstream.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "<untrusted_search_results>" in tool_msgs[0]["content"]
    assert "docs.rs/axum" in tool_msgs[0]["content"]
    assert len(searx.queries) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_failure_reaches_the_sdk_as_an_error(async_client, upstream, gateway, stream):
    upstream.push({"http_status": 500, "error_body": json.dumps({"error": {"message": "model crashed"}})})
    a = agent(async_client)
    mark = gateway.proc.log_size()

    async def go():
        if stream:
            s = Runner.run_streamed(a, "hi")
            async for _ in s.stream_events():
                pass
        else:
            await Runner.run(a, "hi")

    # Not streamed: the gateway's 502; streamed: the `error` event / `response.failed`, which
    # the SDK raises as APIError. Either way the upstream's message comes through.
    with pytest.raises(openai.APIError) as e:
        run(go())
    if stream:
        assert "model crashed" in str(e.value)
    else:
        assert isinstance(e.value, openai.InternalServerError) and e.value.status_code == 502
        assert "model crashed" in e.value.message
    # The operator sees it too: one warn line with the code and the upstream's message.
    log = gateway.proc.tail(since=mark)
    assert "WARN" in log and "turn failed on the upstream" in log and "model crashed" in log, log
