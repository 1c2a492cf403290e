"""Compaction (issue 29) with the official SDK: `client.responses.compact()` answers a typed
`CompactedResponse` (the user's messages, then one sealed `compaction` item, and usage);
its output plus a new message, sent to `client.responses.create()`, reaches the model as the
summary and the new message only. A changed blob is a 400 naming the item; `item_reference`
items resolve to stored items."""

from __future__ import annotations

from typing import Any

import openai
import pytest

import harness
from test_responses_sdk import MODEL, USAGE_SCRIPT

pytestmark = pytest.mark.usefixtures("upstream")

SUMMARY_INTRO = "[Summary of the earlier conversation, written when it was compacted."

HISTORY: list[Any] = [
    {"role": "user", "content": "I live in Lyon."},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Noted: Lyon.", "annotations": []}]},
    {"role": "user", "content": "I like green tea."},
]


def texts(body: dict[str, Any]) -> list[str]:
    out = []
    for m in body["messages"]:
        c = m["content"]
        out.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c))
    return out


def test_compact_then_create_sends_the_summary_and_the_new_items(client: openai.OpenAI, upstream: harness.Upstream):
    upstream.push({"text": ["Lives in Lyon; likes green tea."], "usage": USAGE_SCRIPT})
    compacted = client.responses.compact(model=MODEL, input=HISTORY, instructions="Be brief.")
    assert compacted.object == "response.compaction"
    assert [i.type for i in compacted.output] == ["message", "message", "compaction"]
    item = compacted.output[-1]
    assert item.id.startswith("cmp_")
    assert "Lyon" not in item.encrypted_content, "the summary is sealed"
    assert compacted.usage.input_tokens == 10 and compacted.usage.output_tokens == 5
    summary_call = upstream.chat_bodies()[0]
    assert summary_call["messages"][0] == {"role": "system", "content": "Be brief."}
    assert "Noted: Lyon." in texts(summary_call)

    upstream.push({"text": ["In Lyon."]})
    follow = [i.model_dump(exclude_none=True) for i in compacted.output] + [{"role": "user", "content": "Where do I live?"}]
    resp = client.responses.create(model=MODEL, input=follow)
    assert resp.output_text == "In Lyon."
    sent = texts(upstream.chat_bodies()[1])
    assert len(sent) == 2, sent
    assert sent[0].startswith(SUMMARY_INTRO) and sent[0].endswith("Lives in Lyon; likes green tea.")
    assert sent[1] == "Where do I live?"
    assert not any("Noted: Lyon." in t for t in sent)


def test_compact_a_stored_chain(client: openai.OpenAI, upstream: harness.Upstream):
    upstream.push({"text": ["Noted: Lyon."]}, {"text": ["Lives in Lyon."]})
    r1 = client.responses.create(model=MODEL, input="I live in Lyon.")
    compacted = client.responses.compact(model=MODEL, previous_response_id=r1.id)
    assert texts(upstream.chat_bodies()[1])[:2] == ["I live in Lyon.", "Noted: Lyon."]
    assert compacted.output[-1].type == "compaction"


def test_compact_errors(client: openai.OpenAI, upstream: harness.Upstream):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.compact(model=None, input="hello")  # type: ignore[arg-type]
    assert e.value.body["param"] == "model"
    upstream.push({"http_status": 500, "error_body": '{"error":{"message":"exploded","type":"server_error"}}'})
    with pytest.raises(openai.InternalServerError) as e:
        client.responses.compact(model=MODEL, input="hello")
    assert e.value.status_code == 502
    assert "Compaction failed" in e.value.body["message"]


def test_tampered_compaction_item_is_400(client: openai.OpenAI, upstream: harness.Upstream):
    upstream.push({"text": ["Summary."]})
    blob = client.responses.compact(model=MODEL, input="hello").output[-1].encrypted_content
    mid = len(blob) // 2
    changed = blob[:mid] + ("A" if blob[mid] != "A" else "B") + blob[mid + 1 :]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input=[{"type": "compaction", "encrypted_content": changed}, {"role": "user", "content": "hi"}])
    assert e.value.body["param"] == "input[0]"
    assert len(upstream.requests()) == 1, "nothing reached the model"


def test_item_reference_to_a_stored_message(client: openai.OpenAI, upstream: harness.Upstream):
    upstream.push({"text": ["Noted."]}, {"text": ["Lyon."]})
    r1 = client.responses.create(model=MODEL, input="I live in Lyon.")
    user_item = client.responses.input_items.list(r1.id).data[0]
    resp = client.responses.create(
        model=MODEL,
        store=False,
        input=[{"type": "item_reference", "id": user_item.id}, {"type": "item_reference", "id": r1.output[0].id}, {"role": "user", "content": "Where?"}],
    )
    assert resp.output_text == "Lyon."
    assert texts(upstream.chat_bodies()[1]) == ["I live in Lyon.", "Noted.", "Where?"]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=MODEL, input=[{"type": "item_reference", "id": "msg_unknown"}])
    assert e.value.body["param"] == "input[0]"
    assert e.value.body["message"] == "Item with id 'msg_unknown' not found."


@pytest.mark.usefixtures("searx")
def test_context_management_compacts_inside_a_streamed_turn(client: openai.OpenAI, upstream: harness.Upstream):
    upstream.push(
        {"tool_calls": [{"name": "web_search", "arguments": '{"query": "lyon weather"}'}], "usage": {"prompt_tokens": 1500, "completion_tokens": 10}},
        {"text": ["Searched Lyon weather."], "usage": USAGE_SCRIPT},
        {"text": ["Sunny in Lyon."], "usage": USAGE_SCRIPT},
    )
    with client.responses.stream(
        model=MODEL,
        input="Weather in Lyon?",
        tools=[{"type": "web_search"}],
        extra_body={"context_management": [{"type": "compaction", "compact_threshold": 1000}]},
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.status == "completed"
    kinds = [i.type for i in final.output if not (i.type == "message" and getattr(i, "phase", None) == "commentary")]
    assert kinds == ["web_search_call", "compaction", "message"], kinds
    assert sum(1 for e in events if e.type == "response.output_item.added" and e.item.type == "compaction") == 1
    assert final.output_text.endswith("Sunny in Lyon.")
    bodies = upstream.chat_bodies()
    assert len(bodies) == 3
    last = texts(bodies[2])
    assert last[0].startswith(SUMMARY_INTRO) and last[1] == "Weather in Lyon?", last
