"""Gateway-owned file_search through the official openai SDK (issue 5), on the embedded
Files + Vector Stores API of the session gateway.

Flow: upload a file (`client.files.create`), create a vector store, attach the file and
wait for `completed` (`client.vector_stores.files.create_and_poll`), then
`responses.create` with `{"type": "file_search"}` and `include: ["file_search_call.results"]`.
The scripted model calls `file_search({"queries": […]})`, the gateway searches the embedded
index, records a `file_search_call`, and the model's answer cites `【1】`, which the gateway
turns into a `file_citation` annotation (the marker never reaches the client). The output
is then replayed as the next turn's input (store=false), and the model sees the search call
and its chunks again. Every Response and event is validated (SDK strictly, Open Responses,
stream invariants).
"""

from __future__ import annotations

import json

import pytest
from openai.types.responses import ResponseFileSearchToolCall, ResponseOutputMessage

import validate as V
from test_responses_sdk import MODEL, create, sdk_dict, validate_sdk_events

pytestmark = pytest.mark.usefixtures("upstream")

DOC = (
    "# Zürich cafés\n\n"
    "Café Schober, opened in 1842 in the Niederdorf, is the oldest café in Zürich.\n"
    "It is famous for its hot chocolate and opens at 8 every morning.\n"
)
ANSWER = ["The oldest café in Zürich is Café Schober【", "1】, open from 8."]
CLEAN = "The oldest café in Zürich is Café Schober, open from 8."


@pytest.fixture
def store(client):
    f = client.files.create(file=("zürich-cafés.md", DOC.encode()), purpose="assistants")
    assert f.id.startswith("file-") and f.bytes == len(DOC.encode()) and f.filename == "zürich-cafés.md"
    vs = client.vector_stores.create(name="cafés")
    assert vs.id.startswith("vs_")
    vsf = client.vector_stores.files.create_and_poll(vector_store_id=vs.id, file_id=f.id, attributes={"city": "Zürich"})
    assert vsf.status == "completed", vsf.last_error
    yield vs.id, f.id
    client.vector_stores.delete(vs.id)
    client.files.delete(f.id)


def search_call(queries):
    return {"tool_calls": [{"name": "file_search", "arguments": json.dumps({"queries": queries})}]}


def file_search_item(output):
    items = [o for o in output if getattr(o, "type", None) == "file_search_call"]
    assert len(items) == 1, output
    assert isinstance(items[0], ResponseFileSearchToolCall)
    return items[0]


def answer_message(output) -> ResponseOutputMessage:
    msgs = [o for o in output if isinstance(o, ResponseOutputMessage)]
    return msgs[-1]


def test_file_search_results_citations_and_replay(client, upstream, store):
    vs_id, file_id = store
    tools = [{"type": "file_search", "vector_store_ids": [vs_id]}]
    upstream.push(search_call(["oldest café Zürich"]), {"text": ANSWER})
    resp, body = create(client, model=MODEL, input="Which café in Zürich is the oldest?", tools=tools,
                        include=["file_search_call.results"])
    assert resp.status == "completed"
    fs = file_search_item(resp.output)
    assert fs.status == "completed"
    assert fs.queries == ["oldest café Zürich"]
    assert fs.results, "include asked for results"
    top = fs.results[0]
    assert top.file_id == file_id and top.filename == "zürich-cafés.md"
    assert "Schober" in (top.text or "") and 0.0 <= (top.score or 0) <= 1.0
    assert top.attributes == {"city": "Zürich"}
    msg = answer_message(resp.output)
    text = msg.content[0].text
    assert text == CLEAN
    ann = msg.content[0].annotations
    assert len(ann) == 1 and ann[0].type == "file_citation"
    assert (ann[0].file_id, ann[0].filename) == (file_id, "zürich-cafés.md")
    assert ann[0].index == len("The oldest café in Zürich is Café Schober"), "a code-point insertion point"
    assert body["tools"][0]["max_num_results"] == 20

    # what the model saw: the chunk, numbered, as untrusted tool output
    second = upstream.chat_bodies()[1]["messages"]
    tool_msgs = [m for m in second if m.get("role") == "tool"]
    assert "【1†zürich-cafés.md】" in tool_msgs[0]["content"] and "Schober" in tool_msgs[0]["content"]

    # streamed through client.responses.stream(): the same items, lifecycle events, no marker
    upstream.reset()
    upstream.push(search_call(["oldest café Zürich"]), {"text": ANSWER})
    with client.responses.stream(model=MODEL, input="Which café in Zürich is the oldest?", tools=tools,
                                 include=["file_search_call.results"]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    types = [e["type"] for e in dicts]
    for t in ("response.file_search_call.in_progress", "response.file_search_call.searching",
              "response.file_search_call.completed", "response.output_text.annotation.added"):
        assert t in types, t
    assert "【" not in "".join(e.get("delta", "") for e in dicts if e["type"] == "response.output_text.delta")
    added = [e for e in dicts if e["type"] == "response.output_item.added" and e["item"]["type"] == "file_search_call"]
    assert added[0]["item"]["queries"] == [] and added[0]["item"].get("results") is None
    assert answer_message(final.output).content[0].text == CLEAN

    # replay (store=false): the output goes back as input; the model sees the call and chunks
    upstream.reset()
    upstream.push({"text": ["Yes, since 1842."]})
    replay = [{"role": "user", "content": "Which café in Zürich is the oldest?"}]
    replay += [sdk_dict(o) for o in resp.output]
    replay.append({"role": "user", "content": "Since when?"})
    resp2, _ = create(client, model=MODEL, input=replay, tools=tools, store=False)
    assert resp2.output_text == "Yes, since 1842."
    msgs = upstream.chat_bodies()[0]["messages"]
    calls = [c for m in msgs for c in (m.get("tool_calls") or [])]
    assert [c["function"]["name"] for c in calls] == ["file_search"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"queries": ["oldest café Zürich"]}
    tool_msgs = [m for m in msgs if m.get("role") == "tool"]
    assert "Schober" in tool_msgs[0]["content"], "results replayed from the item"


def test_unknown_vector_store_is_a_400_naming_it(client, upstream):
    import openai

    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input="x", tools=[{"type": "file_search", "vector_store_ids": ["vs_does_not_exist"]}])
    assert "vs_does_not_exist" in str(e.value)
    assert e.value.body["param"] == "tools[0].vector_store_ids"
    assert upstream.chat_bodies() == [], "no model call"
