"""Stored responses and conversations through the official SDK: a previous_response_id
chain of three turns with a tool round trip, responses.retrieve / delete /
input_items.list, and client.conversations.* (items included) with responses.create
(conversation=...).

Runs against whichever store the gateway was started with: SQLite by default; the
PostgreSQL pass of scripts/test.sh sets RESPONSES_GATEWAY_STORE__BACKEND=postgres.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.conversations import Conversation, ConversationItemList

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


def create(client: openai.OpenAI, **kwargs: Any):
    raw = client.responses.with_raw_response.create(**kwargs)
    body = raw.http_response.json()
    V.validate_response(body)
    return raw.parse(), body


def roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


def test_previous_response_chain_of_three_with_tool_round_trip(client, upstream):
    upstream.push(
        {"text": ["Let me check."], "tool_calls": [{"name": "get_weather", "arguments": '{"city":"Paris"}', "id": "call_p1"}]}
    )
    r1, _ = create(client, model=MODEL, instructions="Be brief.", input="Weather in Paris?", tools=[WEATHER_TOOL])
    calls = [i for i in r1.output if i.type == "function_call"]
    # The gateway assigns its own unique call ids (upstream ids may repeat across turns).
    assert len(calls) == 1 and calls[0].call_id.startswith("call_") and calls[0].call_id != "call_p1"
    cid = calls[0].call_id

    upstream.push({"text": ["Sunny, 18C."]})
    r2, body2 = create(
        client,
        model=MODEL,
        previous_response_id=r1.id,
        tools=[WEATHER_TOOL],
        input=[{"type": "function_call_output", "call_id": cid, "output": "18C, sunny"}],
    )
    assert body2["previous_response_id"] == r1.id
    assert r2.output_text == "Sunny, 18C."

    upstream.push({"text": ["You asked about Paris."]})
    r3, _ = create(client, model=MODEL, previous_response_id=r2.id, input="What did I ask?")
    assert r3.output_text == "You asked about Paris."

    bodies = upstream.chat_bodies()
    m2, m3 = bodies[1]["messages"], bodies[2]["messages"]
    assert roles(m2) == ["user", "assistant", "tool"], harness.dumps(m2)
    assert m2[1]["tool_calls"][0]["id"] == cid
    assert m2[2] == {"role": "tool", "tool_call_id": cid, "content": "18C, sunny"}
    assert roles(m3) == ["user", "assistant", "tool", "assistant", "user"], harness.dumps(m3)
    assert [harness.message_text(m) for m in m3] == ["Weather in Paris?", "Let me check.", "18C, sunny", "Sunny, 18C.", "What did I ask?"]
    assert all(m["role"] != "system" for m in m3), "instructions are not carried over"

    # retrieve: the stored Response, valid for the SDK and Open Responses
    raw = client.responses.with_raw_response.retrieve(r2.id)
    stored = raw.http_response.json()
    V.validate_response(stored)
    assert stored == body2
    assert raw.parse().output_text == "Sunny, 18C."

    # input_items.list: this request's items, with ids, paginated by the SDK
    items = list(client.responses.input_items.list(r2.id, limit=1))
    assert len(items) == 1
    assert items[0].type == "function_call_output" and items[0].call_id == cid and items[0].id
    asc = client.responses.input_items.list(r1.id, order="asc")
    assert [i.type for i in asc.data] == ["message"]
    assert asc.data[0].content[0].text == "Weather in Paris?"

    # delete: gone for retrieve and for continuation
    assert client.responses.delete(r1.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r1.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, previous_response_id=r1.id, input="again?")
    assert e.value.code == "previous_response_not_found"
    assert e.value.param == "previous_response_id"
    assert r1.id in e.value.message


def test_store_false_cannot_be_continued(client, upstream):
    upstream.push({"text": ["ephemeral"]})
    r, body = create(client, model=MODEL, input="x", store=False)
    assert body["store"] is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, previous_response_id=r.id, input="y")
    assert e.value.code == "previous_response_not_found"


def test_streamed_turn_is_stored_complete(client, upstream, gateway):
    upstream.push({"text": ["streamed ", "and stored"]})
    with client.responses.stream(model=MODEL, input="go") as stream:
        final = stream.get_final_response()
    stored = client.responses.with_raw_response.retrieve(final.id).http_response.json()
    V.validate_response(stored)
    assert stored["status"] == "completed"
    assert client.responses.retrieve(final.id).output_text == "streamed and stored"


def test_retrieve_stream_replays_the_stored_events(client, upstream):
    """`responses.retrieve(id, stream=True)`: the stored response as an event stream, typed
    by the SDK and valid (SDK strict, Open Responses, invariants); `starting_after` is
    refused (the replay is numbered anew, so resuming by a live number would skip events)."""
    upstream.push({"reasoning_content": ["Hm."], "tool_calls": [{"name": "get_weather", "arguments": '{"city":"Oslo"}'}]})
    r, body = create(client, model=MODEL, input="Weather in Oslo?", tools=[WEATHER_TOOL])
    events = list(client.responses.retrieve(r.id, stream=True))
    dicts = [e.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False) for e in events]
    V.validate_stream(dicts, strict=False)
    assert [d["sequence_number"] for d in dicts] == list(range(len(dicts)))
    assert events[-1].type == "response.completed"
    assert [i.type for i in events[-1].response.output] == ["reasoning", "function_call"]
    assert events[-1].response.output[1].arguments == '{"city":"Oslo"}'
    # The raw SSE, validated strictly (the SDK above coerces some types).
    with client.responses.with_streaming_response.retrieve(r.id, stream=True) as raw:
        text = raw.http_response.read().decode()
    decoded, problems = V.sse_json_events(V.parse_sse(text))
    assert problems == []
    V.validate_stream(decoded)
    assert decoded[-1]["response"] == body
    with pytest.raises(openai.BadRequestError) as err:
        list(client.responses.retrieve(r.id, stream=True, starting_after=3))
    assert err.value.param == "starting_after"


def test_conversations(client, upstream):
    conv = client.conversations.create(
        metadata={"topic": "weather"},
        items=[{"type": "message", "role": "user", "content": "My name is Ada."}],
    )
    assert conv.id.startswith("conv_")
    raw = client.conversations.with_raw_response.retrieve(conv.id).http_response.json()
    Conversation.model_validate(raw, strict=True)
    assert raw["metadata"] == {"topic": "weather"}

    updated = client.conversations.update(conv.id, metadata={"topic": "names"})
    assert updated.metadata == {"topic": "names"}

    added = client.conversations.items.create(
        conv.id, items=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I live in Oslo."}]}]
    )
    ConversationItemList.model_validate(added.model_dump(mode="json"))
    assert len(added.data) == 1

    upstream.push({"text": ["Hello Ada from Oslo."]})
    r, body = create(client, model=MODEL, conversation=conv.id, input="Who am I?")
    assert body["conversation"] == {"id": conv.id}
    assert r.output_text == "Hello Ada from Oslo."
    msgs = upstream.chat_bodies()[0]["messages"]
    assert [harness.message_text(m) for m in msgs] == ["My name is Ada.", "I live in Oslo.", "Who am I?"]

    upstream.push({"text": ["Still Ada."]})
    create(client, model=MODEL, conversation={"id": conv.id}, input="And now?")
    msgs = upstream.chat_bodies()[1]["messages"]
    assert [harness.message_text(m) for m in msgs][-3:] == ["Who am I?", "Hello Ada from Oslo.", "And now?"]

    # the SDK's auto-pagination walks `after` cursors
    texts = []
    for item in client.conversations.items.list(conv.id, order="asc", limit=2):
        assert item.type == "message"
        texts.append(item.content[0].text)
    assert texts == ["My name is Ada.", "I live in Oslo.", "Who am I?", "Hello Ada from Oslo.", "And now?", "Still Ada."]

    first = client.conversations.items.list(conv.id, order="asc", limit=1).data[0]
    got = client.conversations.items.retrieve(first.id, conversation_id=conv.id)
    assert got.id == first.id and got.content[0].text == "My name is Ada."
    after_delete = client.conversations.items.delete(first.id, conversation_id=conv.id)
    assert after_delete.id == conv.id
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(first.id, conversation_id=conv.id)

    deleted = client.conversations.delete(conv.id)
    assert deleted.deleted is True and deleted.id == conv.id
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=MODEL, conversation=conv.id, input="hello?")
