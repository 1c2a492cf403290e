"""Deferred tools and the hosted tool_search through the official openai SDK (issue 31).

The gateway executes `{"type": "tool_search"}` for a model that only knows function calling:
upstream the model sees a `tool_search` function; its call becomes the SDK's typed
`ResponseToolSearchCall` and `ResponseToolSearchOutputItem`, streamed and not, and the tools it
loaded are declared from the next round on and again on continuation. A client-executed search
comes back as a `tool_search_call` with its `call_id`; the client's `tool_search_output` loads
what it names.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.responses import ResponseFunctionToolCall
from openai.types.responses.response_tool_search_call import ResponseToolSearchCall
from openai.types.responses.response_tool_search_output_item import ResponseToolSearchOutputItem

from test_responses_sdk import MODEL, create, sdk_dict, validate_sdk_events

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "name": "ping", "description": "Always there."},
    {"type": "namespace", "name": "crm", "description": "Customer records: find and update customers.", "tools": [
        {"type": "function", "name": "find_customer", "description": "Find a customer by email.", "defer_loading": True,
         "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}},
        {"type": "function", "name": "delete_customer", "description": "Delete a customer.", "defer_loading": True},
    ]},
    {"type": "function", "name": "get_weather", "description": "Current weather for a city.", "defer_loading": True,
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"type": "tool_search"},
]


def offered(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def search_then_call(upstream) -> None:
    upstream.push(
        {"tool_calls": [{"name": "tool_search", "arguments": json.dumps({"query": "find a customer by email"})}]},
        {"tool_calls": [{"name": "crm__find_customer", "arguments": json.dumps({"email": "a@b.c"})}]},
    )


def check_items(output: list[Any]) -> None:
    call, out, fc = output
    assert isinstance(call, ResponseToolSearchCall)
    assert (call.execution, call.status, call.call_id) == ("server", "completed", None)
    assert call.arguments == {"query": "find a customer by email"}
    assert isinstance(out, ResponseToolSearchOutputItem)
    assert (out.execution, out.status) == ("server", "completed")
    ns = sdk_dict(out.tools[0])
    assert ns["type"] == "namespace" and ns["name"] == "crm"
    assert [t["name"] for t in ns["tools"]] == ["find_customer"]
    assert isinstance(fc, ResponseFunctionToolCall)
    assert (fc.name, fc.namespace) == ("find_customer", "crm")


def test_hosted_search_items_not_streamed_and_continued(client: openai.OpenAI, upstream):
    search_then_call(upstream)
    resp, body = create(client, model=MODEL, input="who is a@b.c?", tools=TOOLS)
    check_items(resp.output)
    first, second = upstream.chat_bodies()
    assert offered(first) == ["tool_search", "ping"]
    assert "find_customer" not in json.dumps(first)
    assert offered(second) == ["tool_search", "ping", "crm__find_customer"]

    # previous_response_id keeps the tool loaded.
    upstream.reset()
    upstream.push({"text": ["Ada."]})
    fc = resp.output[2]
    resp2, _ = create(client, model=MODEL, previous_response_id=resp.id, tools=TOOLS,
                      input=[{"type": "function_call_output", "call_id": fc.call_id, "output": "Ada"}])
    assert resp2.output_text == "Ada."
    (body2,) = upstream.chat_bodies()
    assert offered(body2) == ["tool_search", "ping", "crm__find_customer"]

    # store:false replay of the typed items loads it again.
    upstream.reset()
    upstream.push({"text": ["Ada again."]})
    items = [{"role": "user", "content": "who is a@b.c?"}] + [sdk_dict(i) for i in resp.output]
    items.append({"type": "function_call_output", "call_id": fc.call_id, "output": "Ada"})
    resp3, _ = create(client, model=MODEL, store=False, tools=TOOLS, input=items)
    assert resp3.output_text == "Ada again."
    (body3,) = upstream.chat_bodies()
    assert offered(body3) == ["tool_search", "ping", "crm__find_customer"]


def test_hosted_search_items_streamed(client: openai.OpenAI, upstream):
    search_then_call(upstream)
    with client.responses.stream(model=MODEL, input="who is a@b.c?", tools=TOOLS) as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    added = [e["item"] for e in dicts if e["type"] == "response.output_item.added"]
    assert [i["type"] for i in added] == ["tool_search_call", "tool_search_output", "function_call"]
    assert added[0]["arguments"] == {} and added[0]["status"] == "in_progress"
    done = [e["item"] for e in dicts if e["type"] == "response.output_item.done"]
    assert done[0]["arguments"] == {"query": "find a customer by email"} and done[0]["status"] == "completed"
    check_items(final.output)


def test_a_failed_search_is_a_typed_incomplete_pair_that_replays(client: openai.OpenAI, upstream):
    upstream.push(
        {"tool_calls": [{"name": "tool_search", "arguments": json.dumps({"query": 5})}]},
        {"text": ["No tools."]},
    )
    with client.responses.stream(model=MODEL, input="who is a@b.c?", tools=TOOLS) as stream:
        events = list(stream)
        final = stream.get_final_response()
    validate_sdk_events(events)
    call, out, _msg = final.output
    assert isinstance(call, ResponseToolSearchCall) and isinstance(out, ResponseToolSearchOutputItem)
    assert (call.status, out.status, out.tools) == ("incomplete", "incomplete", [])
    _, second = upstream.chat_bodies()
    tool_msgs = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert tool_msgs[0].startswith("error: the tool search failed")

    # store:false replay of the typed pair: accepted, the model reads the same failure.
    upstream.reset()
    upstream.push({"text": ["Still none."]})
    items = [{"role": "user", "content": "who is a@b.c?"}] + [sdk_dict(i) for i in final.output]
    items.append({"role": "user", "content": "try again?"})
    resp, _ = create(client, model=MODEL, store=False, tools=TOOLS, input=items)
    assert resp.output_text == "Still none."
    (body,) = upstream.chat_bodies()
    assert [m["content"] for m in body["messages"] if m["role"] == "tool"] == tool_msgs


def test_client_search_is_returned_and_its_output_loads_tools(client: openai.OpenAI, upstream):
    tools = [
        {"type": "function", "name": "ping"},
        {"type": "tool_search", "execution": "client", "description": "Find project tools.",
         "parameters": {"type": "object", "properties": {"goal": {"type": "string"}}, "required": ["goal"]}},
    ]
    upstream.push({"tool_calls": [{"name": "tool_search", "arguments": json.dumps({"goal": "deploy"})}]})
    resp, _ = create(client, model=MODEL, input="deploy it", tools=tools)
    (call,) = resp.output
    assert isinstance(call, ResponseToolSearchCall)
    assert (call.execution, call.arguments) == ("client", {"goal": "deploy"})
    assert call.call_id

    upstream.reset()
    upstream.push({"text": ["Deploying."]})
    output = {"type": "tool_search_output", "execution": "client", "call_id": call.call_id, "status": "completed",
              "tools": [{"type": "function", "name": "deploy", "description": "Deploy.",
                         "parameters": {"type": "object", "properties": {}}}]}
    resp2, _ = create(client, model=MODEL, previous_response_id=resp.id, tools=tools, input=[output])
    assert resp2.output_text == "Deploying."
    (body,) = upstream.chat_bodies()
    assert offered(body) == ["ping", "tool_search", "deploy"]


@pytest.mark.parametrize("tools, param", [
    ([{"type": "function", "name": "f", "defer_loading": True}], "tools[0].defer_loading"),
    ([{"type": "function", "name": "f"}, {"type": "tool_search"}], "tools[1].type"),
    ([{"type": "function", "name": "f", "defer_loading": True}, {"type": "tool_search"}, {"type": "tool_search"}], "tools[2].type"),
])
def test_declarations_that_cannot_work_are_400s(client: openai.OpenAI, upstream, tools, param):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="x", tools=tools)
    assert e.value.body["param"] == param
    assert upstream.chat_bodies() == []
