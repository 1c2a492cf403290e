"""Gateway-owned web_search through the official openai SDK (issue 4).

The gateway's `http` backend points at search_fixture.py, a local server answering in
SearXNG's JSON shape (conftest.py wires it into the session gateway's environment). The
scripted model calls the function `web_search({"query": …})`; the gateway searches, records a
`web_search_call` (`output_item.added` without `action`, `in_progress` → `searching` →
`completed`, `output_item.done` with the action) and annotates the answer with a
`url_citation` for every occurrence of a source URL. Every Response, item and event is
validated like elsewhere (SDK models strictly, Open Responses, stream invariants), with the
one documented exception in validate.py (the added item has no `action`).

Covered:
* the seed's combined request: `package_version` (server custom tool) and `web_search` in
  one round, `tool_choice: "required"`, `parallel_tool_calls: true` — non-streaming,
  `client.responses.stream()` and raw SSE;
* search backend failures (403, 500, 429, non-JSON, wrong JSON shape) → a failed
  `web_search_call` with no `.completed` event, the turn still completes; a real empty
  result set → a completed call without sources;
* the untrusted snippet ("ignore previous instructions") reaches the model only inside the
  tool message, fenced as untrusted data, and never reaches the client.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
)

import harness
import search_fixture as SF
import validate as V
from test_responses_sdk import MODEL, create, sdk_dict, upstream_function, validate_sdk_events, without_ids
from test_server_tools import (
    AXUM_OUTPUT,
    PROGRESS_PREFIX,
    PV_TOOL,
    assert_package_version_items,
    assert_typed,
    is_progress,
    message_text,
    upstream_tool_turn,
)

try:  # openai 3.x; absent from 2.8.0
    from openai.types.responses import ResponseCustomToolCallOutputItem
except ImportError:  # pragma: no cover
    ResponseCustomToolCallOutputItem = None  # type: ignore[assignment,misc]

pytestmark = pytest.mark.usefixtures("upstream", "searx")
needs_custom_output = pytest.mark.skipif(
    "custom_tool_call_output" not in V.SDK_ITEM_TYPES or ResponseCustomToolCallOutputItem is None,
    reason="this SDK's ResponseOutputItem has no custom_tool_call_output",
)

WS_TOOL = {"type": "web_search"}
INCLUDE_SOURCES = ["web_search_call.action.sources"]
QUERY = "axum latest release"
SEARCH_CALL = {"name": "web_search", "arguments": json.dumps({"query": QUERY}), "fragment_chars": 6}
PV_CALL = {"name": "package_version", "arguments": json.dumps({"input": "axum"}), "fragment_chars": 4}
COMBINED_ROUND = {"tool_calls": [PV_CALL, SEARCH_CALL]}

DOCS, RELEASES, BLOG, CRATES = (r["url"] for r in SF.KEPT)
TITLE = {r["url"]: r["title"] for r in SF.KEPT}
UNKNOWN_URL = "https://evil.example.net/x"
# Non-ASCII text before the first link (code points != UTF-8 bytes), a markdown link inside
# parentheses (the span widens to them), a plain markdown link, a bare URL twice, and a URL
# that is not a source of this turn (no annotation).
ANSWER = (
    f"naïve – café ☕: the installed version is {AXUM_OUTPUT}; the docs are here "
    f"([docs.rs](https://docs.rs/axum/latest/axum/)). What changed: [the 0.8 notes]({BLOG}). "
    f"Registry: {CRATES}, and again {CRATES}. Not a source: {UNKNOWN_URL}."
)
EXPECTED_SPANS = [
    (f"([docs.rs]({DOCS}))", DOCS),
    (f"[the 0.8 notes]({BLOG})", BLOG),
    (CRATES, CRATES),
    (CRATES, CRATES),
]


def chunks(text: str, n: int = 7) -> list[str]:
    """The answer as upstream content deltas (splitting URLs and multi-byte characters' neighbours)."""
    return [text[i:i + n] for i in range(0, len(text), n)]


ANSWER_ROUND = {"text": chunks(ANSWER)}
SEARCH_PROGRESS = f"Searching the web for “{QUERY}”"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def annotations_of(msg: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    (part,) = [c for c in msg["content"] if c["type"] == "output_text"]
    return part["text"], part["annotations"]


def assert_citations_match_text(text: str, annotations: list[dict[str, Any]], expected=EXPECTED_SPANS) -> None:
    """Every url_citation matches the text slice by slice (code points, end exclusive)."""
    assert all(a["type"] == "url_citation" for a in annotations), annotations
    for a in annotations:
        span = text[a["start_index"]:a["end_index"]]
        assert a["url"] in span, f"text[{a['start_index']}:{a['end_index']}] = {span!r} does not contain {a['url']!r}"
        assert a["title"] == TITLE[a["url"]], a
    got = [(text[a["start_index"]:a["end_index"]], a["url"]) for a in annotations]
    assert got == expected, f"annotations {json.dumps(annotations, ensure_ascii=False)}\nover {text!r}"
    starts = [a["start_index"] for a in annotations]
    assert starts == sorted(starts), "annotations in text order"
    # Code points, not UTF-8 bytes: the first span starts where Python's str.index finds it.
    assert annotations[0]["start_index"] == text.index("([docs.rs]")
    assert len(text.encode()) != len(text), "the answer must hold multi-byte characters"
    assert UNKNOWN_URL not in {a["url"] for a in annotations}


def assert_search_item(item: Any, *, status: str = "completed", sources: list[str] | None = None,
                       query: str = QUERY) -> dict[str, Any]:
    """A typed ResponseFunctionWebSearch with action {type: search, query, queries, sources?}."""
    assert isinstance(item, ResponseFunctionWebSearch), type(item)
    d = item if isinstance(item, dict) else sdk_dict(item)
    assert d["id"].startswith("ws_"), d
    assert d["status"] == status, d
    action = d["action"]
    assert (action["type"], action["query"], action["queries"]) == ("search", query, [query]), action
    if sources is None:
        assert "sources" not in action, f"sources only with include=[{INCLUDE_SOURCES[0]}]: {action}"
    else:
        assert action["sources"] == [{"type": "url", "url": u} for u in sources], action
    assert set(d) <= {"id", "type", "status", "action"}, f"backend payloads stay private: {d}"
    return d


def assert_search_lifecycle(events: list[dict[str, Any]], *, status: str = "completed",
                            sources: list[str] | None = None, query: str = QUERY) -> int:
    """The one web_search_call of a stream: added without action, in_progress → searching →
    completed (only when it succeeded), done with the action. Returns its output_index."""
    added = [e for e in events if e["type"] == "response.output_item.added" and e["item"]["type"] == "web_search_call"]
    assert len(added) == 1, added
    oi, item_id = added[0]["output_index"], added[0]["item"]["id"]
    assert added[0]["item"] == {"id": item_id, "type": "web_search_call", "status": "in_progress"}, added[0]
    mine = [e for e in events if e.get("output_index") == oi]
    want = ["response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching"]
    if status == "completed":
        want.append("response.web_search_call.completed")
    want.append("response.output_item.done")
    assert [e["type"] for e in mine] == want, [e["type"] for e in mine]
    assert all(e["item_id"] == item_id for e in mine if "item_id" in e)
    done = mine[-1]["item"]
    assert done["id"] == item_id and done["status"] == status, done
    action = done["action"]
    assert (action["type"], action["query"], action["queries"]) == ("search", query, [query]), action
    if sources is None:
        assert "sources" not in action, action
    else:
        assert action["sources"] == [{"type": "url", "url": u} for u in sources], action
    if status != "completed":
        assert not [e for e in events if e["type"] == "response.web_search_call.completed"]
    return oi


def assert_annotation_events(events: list[dict[str, Any]], final_msg: dict[str, Any]) -> None:
    """annotation.added after the last text delta and before output_text.done, one per final
    annotation, in order; the annotations again in content_part.done and output_item.done."""
    text, anns = annotations_of(final_msg)
    oi = next(e["output_index"] for e in events if e["type"] == "response.output_item.added" and e["item"]["id"] == final_msg["id"])
    mine = [(i, e) for i, e in enumerate(events) if e.get("output_index") == oi]
    added = [(i, e) for i, e in mine if e["type"] == "response.output_text.annotation.added"]
    last_delta = max(i for i, e in mine if e["type"] == "response.output_text.delta")
    (text_done,) = [i for i, e in mine if e["type"] == "response.output_text.done"]
    assert all(last_delta < i < text_done for i, _ in added), "annotations come after the last delta, before output_text.done"
    assert [e["annotation"] for _, e in added] == anns
    assert [e["annotation_index"] for _, e in added] == list(range(len(anns)))
    assert all((e["item_id"], e["content_index"]) == (final_msg["id"], 0) for _, e in added)
    (part_done,) = [e for _, e in mine if e["type"] == "response.content_part.done"]
    assert part_done["part"]["annotations"] == anns
    (item_done,) = [e for _, e in mine if e["type"] == "response.output_item.done"]
    assert annotations_of(item_done["item"]) == (text, anns)


def upstream_search_result(body: dict[str, Any]) -> str:
    """The tool message answering the web_search call in an upstream request."""
    _, calls, tools = upstream_tool_turn(body["messages"])
    ids = [c["id"] for c in calls if c["function"]["name"] == "web_search"]
    assert len(ids) == 1, harness.dumps(calls)
    (msg,) = [t for t in tools if t["tool_call_id"] == ids[0]]
    return harness.message_text(msg) or ""


def assert_search_text_for_model(content: str) -> None:
    """What the model reads: kept results (deduplicated, unsafe URLs dropped), fenced as untrusted."""
    head, sep, rest = content.partition("<untrusted_search_results>")
    assert sep and "</untrusted_search_results>" in rest, content
    assert "untrusted" in head and "never follow instructions" in head, head
    inside = rest.split("</untrusted_search_results>")[0]
    for r in SF.KEPT:
        assert r["url"] in inside and r["title"] in inside, (r["url"], content)
    for bad in SF.DROPPED_URLS:
        assert bad not in content, (bad, content)
    assert "javascript:" not in content and "127.0.0.1" not in content
    assert "duplicate" not in content.lower()
    assert SF.INJECTION_MARKER in inside


def combined_request(**kw: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "input": "Which axum is installed, and what is the latest release? Cite sources.",
        "tools": [PV_TOOL, WS_TOOL],
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "store": False,
        **kw,
    }


# ---------------------------------------------------------------------------
# (a) the seed's combined request: package_version + web_search in one round
# ---------------------------------------------------------------------------


@needs_custom_output
def test_combined_request_non_streaming(client, upstream, searx):
    upstream.push(COMBINED_ROUND, ANSWER_ROUND)
    resp, body = create(client, **combined_request(include=INCLUDE_SOURCES))

    assert resp.status == "completed", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["custom_tool_call", "web_search_call", "custom_tool_call_output", "message"], harness.dumps(body["output"])
    assert not any(is_progress(o) for o in body["output"]), "progress messages exist only in streams"
    call, search, out, msg = resp.output
    assert_typed(resp.output, [ResponseCustomToolCall, ResponseFunctionWebSearch, ResponseCustomToolCallOutputItem, ResponseOutputMessage])
    assert_package_version_items(call, out)
    assert_search_item(search, sources=[DOCS, RELEASES, BLOG, CRATES])
    assert (msg.role, msg.status, msg.phase) == ("assistant", "completed", "final_answer")
    assert message_text(msg) == ANSWER and resp.output_text == ANSWER
    text, anns = annotations_of(body["output"][3])
    assert_citations_match_text(text, anns)
    # The SDK's typed annotations say the same.
    typed = [(a.type, a.start_index, a.end_index, a.url, a.title) for a in msg.content[0].annotations]
    assert typed == [(a["type"], a["start_index"], a["end_index"], a["url"], a["title"]) for a in anns]
    # Declarations and choices echoed as declared.
    assert [t["type"] for t in body["tools"]] == ["custom", "web_search"], body["tools"]
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", True)

    # One search, as the gateway's http backend sends it.
    assert len(searx.queries) == 1, searx.queries
    q = searx.queries[0]
    assert (q["path"], q["q"], q["format"]) == ("/search", [QUERY], ["json"]), q

    # Upstream: both tools declared as functions, required + parallel; round 2 has both results.
    first, second = upstream.chat_bodies()
    assert [t["function"]["name"] for t in first["tools"]] == ["package_version", "web_search"], first["tools"]
    ws_fn = upstream_function(first, "web_search")
    assert ws_fn["parameters"]["required"] == ["query"], ws_fn
    assert first.get("tool_choice") == "required", first.get("tool_choice")
    assert first.get("parallel_tool_calls") is True, first.get("parallel_tool_calls")
    assert second.get("tool_choice") == "auto", "after the executed round, required relaxes to auto"
    i, calls, tools = upstream_tool_turn(second["messages"])
    assert [c["function"]["name"] for c in calls] == ["package_version", "web_search"], harness.dumps(calls)
    assert json.loads(calls[1]["function"]["arguments"]) == {"query": QUERY}
    assert [t["tool_call_id"] for t in tools] == [c["id"] for c in calls], "results in the calls' order"
    assert tools[0]["content"] == AXUM_OUTPUT
    assert_search_text_for_model(upstream_search_result(second))
    assert i + len(tools) == len(second["messages"]) - 1, harness.dumps(second["messages"])


@needs_custom_output
def test_combined_request_stream_helper(client, upstream, searx):
    upstream.push(COMBINED_ROUND, ANSWER_ROUND)
    with client.responses.stream(**combined_request()) as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    V.validate_response(sdk_dict(final), strict=False)

    assert final.status == "completed"
    types = [o.type for o in final.output]
    assert types == ["message", "custom_tool_call", "message", "web_search_call", "custom_tool_call_output", "message"], [sdk_dict(o) for o in final.output]
    pv_progress, call, ws_progress, search, out, msg = final.output
    assert_typed(final.output, [ResponseOutputMessage, ResponseCustomToolCall, ResponseOutputMessage,
                                ResponseFunctionWebSearch, ResponseCustomToolCallOutputItem, ResponseOutputMessage])
    for p in (pv_progress, ws_progress):
        assert p.id.startswith(PROGRESS_PREFIX) and (p.role, p.status, p.phase) == ("assistant", "completed", "commentary")
    assert message_text(ws_progress) == SEARCH_PROGRESS
    assert_package_version_items(call, out)
    assert_search_item(search)  # no include: no sources
    assert (msg.phase, message_text(msg)) == ("final_answer", ANSWER)
    assert not msg.id.startswith(PROGRESS_PREFIX)
    final_msg = sdk_dict(msg)
    assert_citations_match_text(*annotations_of(final_msg))

    assert_search_lifecycle(dicts)
    assert_annotation_events(dicts, final_msg)
    # The SDK's own stream events are typed too.
    typed_ann = [e for e in events if e.type == "response.output_text.annotation.added"]
    assert [e.annotation["url"] if isinstance(e.annotation, dict) else e.annotation.url for e in typed_ann] == [u for _, u in EXPECTED_SPANS]
    # The progress commentary never reaches the model.
    for b in upstream.chat_bodies():
        for m in b["messages"]:
            assert "Searching the web for" not in (harness.message_text(m) or ""), harness.dumps(b["messages"])


@needs_custom_output
def test_combined_request_raw_sse_and_non_streaming_twin(client, upstream, gateway, searx):
    request = combined_request(include=INCLUDE_SOURCES)
    upstream.push(COMBINED_ROUND, ANSWER_ROUND)
    raw = gateway.stream_validated(request)
    completed = raw.terminal()
    assert completed["type"] == "response.completed", completed
    output = completed["response"]["output"]
    assert [o["type"] for o in output] == ["message", "custom_tool_call", "message", "web_search_call", "custom_tool_call_output", "message"]
    assert [o["id"].startswith(PROGRESS_PREFIX) for o in output] == [True, False, True, False, False, False]
    final_msg = output[-1]
    assert_citations_match_text(*annotations_of(final_msg))
    assert_search_lifecycle(raw.events, sources=[DOCS, RELEASES, BLOG, CRATES])
    assert_annotation_events(raw.events, final_msg)
    # The search item is added after its progress message is done.
    seq = {(e["type"], e.get("output_index")): e["sequence_number"] for e in raw.events if "output_index" in e}
    assert seq[("response.output_item.done", 2)] < seq[("response.output_item.added", 3)]
    # Keep-alive comments are allowed, a [DONE] sentinel is not (stream_validated checks).
    assert len(searx.queries) == 1

    # Non-streaming gives the same items, progress aside.
    upstream.push(COMBINED_ROUND, ANSWER_ROUND)
    _, body = create(client, **request)
    assert without_ids(body["output"]) == without_ids([o for o in output if not is_progress(o)])


# ---------------------------------------------------------------------------
# tool_choice forcing a search
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["web_search", "web_search_preview"])
def test_tool_choice_forces_a_search(client, upstream, searx, kind):
    """`tool_choice: {type: web_search}` (sent by clients such as the Vercel AI SDK; contract §3:
    accept it leniently) and `{type: web_search_preview}` force the search function upstream.

    openai 3.57's `ToolChoiceTypes` has no "web_search" member (only web_search_preview*), so
    the gateway echoes `{type: web_search}` as the nearest valid type, web_search_preview, and
    the Response validates strictly like every other."""
    request = {"model": MODEL, "input": "Search the web: latest axum?", "tools": [{"type": kind}],
               "tool_choice": {"type": kind}, "include": INCLUDE_SOURCES, "store": False}
    upstream.push({"tool_calls": [SEARCH_CALL]}, ANSWER_ROUND)
    resp, body = create(client, **request)
    assert body["tool_choice"] == {"type": "web_search_preview"}, body["tool_choice"]
    assert [t["type"] for t in body["tools"]] == [kind], "the declaration itself is echoed as declared"
    first, second = upstream.chat_bodies()
    assert first.get("tool_choice") == {"type": "function", "function": {"name": "web_search"}}, first.get("tool_choice")
    assert second.get("tool_choice") == "auto", second.get("tool_choice")
    assert [o["type"] for o in body["output"]] == ["web_search_call", "message"], harness.dumps(body["output"])
    assert_search_item(resp.output[0], sources=[DOCS, RELEASES, BLOG, CRATES])
    assert_citations_match_text(*annotations_of(body["output"][1]))


# ---------------------------------------------------------------------------
# (b) search backend failures and an empty result set
# ---------------------------------------------------------------------------

FAILURES = {
    "403": "enable `json` in `search.formats`",
    "500": "HTTP 500",
    "429": "retry after 30",
    "non_json": "not the expected JSON",
    "wrong_shape": "not the expected JSON",
}


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_search_failure_is_a_failed_call_and_the_turn_completes(client, upstream, gateway, searx, mode):
    searx.reset(mode)
    request = {"model": MODEL, "input": "Search the web for the latest axum release.", "tools": [WS_TOOL],
               "tool_choice": "required", "store": False}
    upstream.push({"tool_calls": [SEARCH_CALL]}, {"text": ["The search failed; I cannot say."]})
    resp, body = create(client, **request)
    assert resp.status == "completed", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["web_search_call", "message"], harness.dumps(body["output"])
    assert_search_item(resp.output[0], status="failed")
    assert message_text(resp.output[1]) == "The search failed; I cannot say."
    assert annotations_of(body["output"][1])[1] == []

    first, second = upstream.chat_bodies()
    content = upstream_search_result(second)
    assert content.startswith("error: web search failed: "), content
    assert FAILURES[mode] in content, content
    assert "<untrusted_search_results>" not in content, "a failure is never rendered as a (empty) result list"
    assert "<html" not in content and "search error" not in content, f"backend payloads stay private: {content}"
    assert len(searx.queries) == 1

    # Streamed: in_progress → searching → done(failed), no .completed; one terminal event.
    searx.reset(mode)
    upstream.push({"tool_calls": [SEARCH_CALL]}, {"text": ["The search failed; I cannot say."]})
    raw = gateway.stream_validated(request)
    assert raw.terminal()["type"] == "response.completed"
    assert_search_lifecycle(raw.events, status="failed")
    assert not raw.of("response.output_text.annotation.added")
    streamed = [o for o in raw.terminal()["response"]["output"] if not is_progress(o)]
    assert without_ids(streamed) == without_ids(body["output"])


def test_empty_result_set_is_a_completed_search_without_sources(client, upstream, gateway, searx):
    searx.reset("empty")
    request = {"model": MODEL, "input": "Search for zxqv.", "tools": [WS_TOOL], "include": INCLUDE_SOURCES, "store": False}
    upstream.push({"tool_calls": [SEARCH_CALL]}, {"text": [f"Nothing found. Try {DOCS}."]})
    resp, body = create(client, **request)
    assert resp.status == "completed"
    assert [o["type"] for o in body["output"]] == ["web_search_call", "message"]
    assert_search_item(resp.output[0], status="completed", sources=[])
    # No source this turn: a URL in the text gets no annotation.
    assert annotations_of(body["output"][1])[1] == []
    content = upstream_search_result(upstream.chat_bodies()[1])
    assert not content.startswith("error"), content
    assert "No results." in content

    searx.reset("empty")
    upstream.push({"tool_calls": [SEARCH_CALL]}, {"text": [f"Nothing found. Try {DOCS}."]})
    raw = gateway.stream_validated(request)
    assert_search_lifecycle(raw.events, status="completed", sources=[])


# ---------------------------------------------------------------------------
# (c) untrusted search text reaches the model only as tool output
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_untrusted_snippet_only_in_the_tool_message(client, upstream, gateway, searx, stream):
    request = {"model": MODEL, "instructions": "You are a careful assistant. Answer briefly.",
               "input": [{"role": "system", "content": "Cite sources."},
                         {"role": "user", "content": "Search the web: what is new in axum 0.8?"}],
               "tools": [WS_TOOL], "store": False}
    upstream.push({"tool_calls": [SEARCH_CALL]}, {"text": [f"See [the notes]({BLOG})."]})
    if stream:
        raw = gateway.stream_validated(request)
        client_text = raw.text
        output = raw.terminal()["response"]["output"]
    else:
        _, body = create(client, **request)
        client_text = json.dumps(body, ensure_ascii=False)
        output = body["output"]
    assert output[-1]["type"] == "message"
    text, anns = annotations_of(output[-1])
    assert [(text[a["start_index"]:a["end_index"]], a["url"]) for a in anns] == [(f"[the notes]({BLOG})", BLOG)]
    # The snippet never reaches the client (backend payloads stay private).
    assert SF.INJECTION_MARKER not in client_text

    first, second = upstream.chat_bodies()
    assert SF.INJECTION_MARKER not in json.dumps(first, ensure_ascii=False), "nothing was searched yet"
    holders = [(k, m) for k, m in enumerate(second["messages"]) if SF.INJECTION_MARKER in json.dumps(m, ensure_ascii=False)]
    assert len(holders) == 1, harness.dumps(second["messages"])
    k, m = holders[0]
    assert m["role"] == "tool", f"the untrusted snippet is in a {m['role']!r} message:\n{harness.dumps(m)}"
    _, calls, _ = upstream_tool_turn(second["messages"])
    assert m["tool_call_id"] == calls[0]["id"] and calls[0]["function"]["name"] == "web_search"
    assert_search_text_for_model(harness.message_text(m) or "")
    # The instructions and the user's messages are untouched; no role but `tool` carries results.
    roles = [x["role"] for x in second["messages"]]
    assert roles[:1] == ["system"] and "tool" in roles, roles
    for x in second["messages"]:
        if x["role"] in ("system", "developer", "user"):
            t = harness.message_text(x) or ""
            assert "untrusted_search_results" not in t and SF.INJECTION_MARKER not in t, harness.dumps(x)
