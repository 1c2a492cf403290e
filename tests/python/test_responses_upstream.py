"""The gateway's main cases on an upstream that speaks /v1/responses (issue 16).

A second gateway runs with `RESPONSES_GATEWAY_UPSTREAM__API=responses` in front of the same
scripted upstream, which answers `POST /v1/responses` from the same scripts in the Responses
event format. The official SDK must see exactly what it sees on a chat upstream: the
gateway's own items and events (validated like elsewhere), its tools executed by the gateway,
and continuations by `previous_response_id` and by replaying the items. What the upstream
received is checked in the Responses shape: input items, `instructions`, function tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

import harness
import search_fixture as SF
from test_responses_sdk import MODEL, WEATHER_TOOL, create, sdk_dict, validate_sdk_events

pytestmark = pytest.mark.usefixtures("upstream", "searx")


def responses_gateway_client(upstream_server: harness.Upstream, search_server: SF.SearchFixture, logs: Path, **env: str):
    """Yields a client of a gateway on the upstream's `/v1/responses`, with `env` added."""
    env = {"RESPONSES_GATEWAY_UPSTREAM__API": "responses", **search_server.gateway_env(), **env}
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url, logs, extra_env=env)
    c = openai.OpenAI(base_url=gw.api_base, api_key="test", max_retries=0, timeout=60)
    yield c
    c.close()
    gw.close()
    gw.proc.stop()


@pytest.fixture(scope="module")
def rclient(upstream_server: harness.Upstream, search_server: SF.SearchFixture, tmp_path_factory: pytest.TempPathFactory):
    """A client of a gateway whose upstream API is `responses`."""
    yield from responses_gateway_client(upstream_server, search_server, tmp_path_factory.mktemp("responses-upstream"))


def bodies(upstream: harness.Upstream) -> list[dict[str, Any]]:
    out = upstream.chat_bodies()
    for b in out:
        assert "input" in b and "messages" not in b, f"a Responses request: {b}"
        assert b["stream"] is True and b["store"] is False, b
    return out


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return [i["type"] for i in items]


def test_text_and_stream(rclient, upstream):
    upstream.push({"text": ["Hel", "lo"]})
    resp, _ = create(rclient, model=MODEL, input="hi", instructions="Be brief.")
    assert resp.status == "completed" and resp.output_text == "Hello"
    (sent,) = bodies(upstream)
    assert sent["instructions"] == "Be brief."
    assert sent["input"] == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]

    # 20 ms apart: each chunk arrives on its own and is its own delta (chunks that arrive
    # together leave as one, issue 34).
    upstream.push({"text": ["a", "b", "c"], "reasoning_content": ["think"], "token_delay_ms": 20})
    with rclient.responses.stream(model=MODEL, input="hi") as stream:
        events = list(stream)
        final = stream.get_final_response()
    dicts = validate_sdk_events(events)
    assert [e["type"] for e in dicts].count("response.output_text.delta") == 3
    assert [o.type for o in final.output] == ["reasoning", "message"]
    assert final.output_text == "abc"


def test_function_round_trip_by_previous_response_id_and_by_replay(rclient, upstream):
    upstream.push({"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}]})
    first, _ = create(rclient, model=MODEL, input="Weather in Paris?", tools=[WEATHER_TOOL])
    (call,) = first.output
    assert call.type == "function_call" and call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    (sent,) = bodies(upstream)
    assert [t["name"] for t in sent["tools"]] == ["get_weather"] and sent["tools"][0]["type"] == "function"

    upstream.reset()
    upstream.push({"text": ["Sunny."]})
    out = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}
    second, _ = create(rclient, model=MODEL, previous_response_id=first.id, input=[out], tools=[WEATHER_TOOL])
    assert second.output_text == "Sunny."
    (sent,) = bodies(upstream)
    assert kinds(sent["input"]) == ["message", "function_call", "function_call_output"]
    assert sent["input"][1]["call_id"] == call.call_id and sent["input"][2]["output"] == "sunny, 21 C"

    upstream.reset()
    upstream.push({"text": ["Still sunny."]})
    replay = [{"role": "user", "content": "Weather in Paris?"}, sdk_dict(call), out]
    third, _ = create(rclient, model=MODEL, input=replay, tools=[WEATHER_TOOL], store=False)
    assert third.output_text == "Still sunny."
    (sent,) = bodies(upstream)
    assert kinds(sent["input"]) == ["message", "function_call", "function_call_output"]


def test_mixed_round_runs_the_server_tool_and_returns_the_client_call(rclient, upstream):
    pv = {"type": "custom", "name": "package_version"}
    upstream.push({"tool_calls": [
        {"name": "package_version", "arguments": json.dumps({"input": "axum"})},
        {"name": "get_weather", "arguments": json.dumps({"city": "Bern"})},
    ]})
    resp, _ = create(rclient, model=MODEL, input="axum version, and the weather in Bern?", tools=[pv, WEATHER_TOOL])
    assert [o.type for o in resp.output] == ["custom_tool_call", "custom_tool_call_output", "function_call"]
    assert resp.output[1].output.startswith("axum "), resp.output[1]
    upstream.reset()
    upstream.push({"text": ["Done."]})
    out = {"type": "function_call_output", "call_id": resp.output[2].call_id, "output": "cold"}
    resp2, _ = create(rclient, model=MODEL, previous_response_id=resp.id, input=[out], tools=[pv, WEATHER_TOOL])
    assert resp2.output_text == "Done."
    (sent,) = bodies(upstream)
    assert kinds(sent["input"]) == ["message", "function_call", "function_call", "function_call_output", "function_call_output"]
    outputs = [i["output"] for i in sent["input"] if i["type"] == "function_call_output"]
    assert outputs[0].startswith("axum ") and outputs[1] == "cold"


def test_web_search_runs_in_the_gateway(rclient, upstream, searx):
    query = "axum latest release"
    docs = SF.KEPT[0]["url"]
    upstream.push({"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": query})}]},
                  {"text": [f"See {docs} for more."]})
    resp, _ = create(rclient, model=MODEL, input="What is new in axum?", tools=[{"type": "web_search"}],
                     include=["web_search_call.action.sources"])
    ws = [o for o in resp.output if o.type == "web_search_call"]
    assert len(ws) == 1 and ws[0].status == "completed" and ws[0].action.query == query
    assert docs in [s.url for s in ws[0].action.sources]
    msg = [o for o in resp.output if o.type == "message"][-1]
    ann = msg.content[0].annotations
    assert [a.type for a in ann] == ["url_citation"] and ann[0].url == docs
    first, second = bodies(upstream)
    assert first["tools"][0]["type"] == "function" and first["tools"][0]["name"] == "web_search"
    results = [i for i in second["input"] if i["type"] == "function_call_output"]
    assert docs in results[0]["output"] and "untrusted" in results[0]["output"]


def test_file_search_runs_in_the_gateway(rclient, upstream):
    doc = "# Cafés\n\nCafé Schober, opened in 1842, is the oldest café in Zürich.\n"
    f = rclient.files.create(file=("cafés.md", doc.encode()), purpose="assistants")
    vs = rclient.vector_stores.create(name="cafés")
    vsf = rclient.vector_stores.files.create_and_poll(vector_store_id=vs.id, file_id=f.id)
    assert vsf.status == "completed", vsf.last_error
    try:
        upstream.push({"tool_calls": [{"name": "file_search", "arguments": json.dumps({"queries": ["oldest café"]})}]},
                      {"text": ["Café Schober【", "1】."]})
        with rclient.responses.stream(model=MODEL, input="Which café is the oldest?",
                                      tools=[{"type": "file_search", "vector_store_ids": [vs.id]}]) as stream:
            events = list(stream)
            final = stream.get_final_response()
        validate_sdk_events(events)
        fs = [o for o in final.output if o.type == "file_search_call"]
        assert len(fs) == 1 and fs[0].status == "completed" and fs[0].queries == ["oldest café"]
        msg = [o for o in final.output if o.type == "message"][-1]
        assert msg.content[0].text == "Café Schober."
        (ann,) = msg.content[0].annotations
        assert ann.type == "file_citation" and ann.file_id == f.id
        _, second = bodies(upstream)
        results = [i for i in second["input"] if i["type"] == "function_call_output"]
        assert "【1†cafés.md】" in results[0]["output"] and "Schober" in results[0]["output"]
    finally:
        rclient.vector_stores.delete(vs.id)
        rclient.files.delete(f.id)


def test_upstream_failure_is_one_failed_terminal(rclient, upstream):
    upstream.push({"http_status": 500, "error_body": json.dumps({"error": {"message": "boom"}})})
    with pytest.raises(openai.InternalServerError) as e:
        rclient.responses.create(model=MODEL, input="x")
    assert e.value.status_code == 502
    upstream.push({"text": ["a", "b", "c", "d"], "fault": {"kind": "disconnect", "after_chunks": 4}})
    stream = rclient.responses.create(model=MODEL, input="x", stream=True)
    with pytest.raises(openai.APIError):
        for _ in stream:
            pass


@pytest.fixture(scope="module")
def nclient(upstream_server: harness.Upstream, search_server: SF.SearchFixture, tmp_path_factory: pytest.TempPathFactory):
    """A client of a gateway on a Responses upstream that renders file_search and web_search
    natively (`upstream.native_tools`): the gateway still runs every search."""
    yield from responses_gateway_client(upstream_server, search_server, tmp_path_factory.mktemp("native-tools"),
                                        RESPONSES_GATEWAY_UPSTREAM__NATIVE_TOOLS='["file_search", "web_search"]')


def test_native_file_search_is_declared_natively_and_run_by_the_gateway(nclient, upstream):
    doc = "# Cafés\n\nCafé Schober, opened in 1842, is the oldest café in Zürich.\n"
    f = nclient.files.create(file=("cafés.md", doc.encode()), purpose="assistants")
    vs = nclient.vector_stores.create(name="cafés")
    vsf = nclient.vector_stores.files.create_and_poll(vector_store_id=vs.id, file_id=f.id)
    assert vsf.status == "completed", vsf.last_error
    try:
        upstream.push({"tool_calls": [{"name": "file_search", "hosted": "file_search",
                                       "arguments": json.dumps({"queries": ["oldest café"]})}]},
                      {"text": ["Café Schober【", "1】."]})
        with nclient.responses.stream(model=MODEL, input="Which café is the oldest?", include=["file_search_call.results"],
                                      tools=[{"type": "file_search", "vector_store_ids": [vs.id]}]) as stream:
            events = list(stream)
            final = stream.get_final_response()
        validate_sdk_events(events)
        fs = [o for o in final.output if o.type == "file_search_call"]
        assert len(fs) == 1 and fs[0].status == "completed" and fs[0].queries == ["oldest café"]
        assert fs[0].results and fs[0].results[0].file_id == f.id
        msg = [o for o in final.output if o.type == "message"][-1]
        assert msg.content[0].text == "Café Schober."
        (ann,) = msg.content[0].annotations
        assert ann.type == "file_citation" and ann.file_id == f.id
        first, second = bodies(upstream)
        assert first["tools"] == [{"type": "file_search", "vector_store_ids": [vs.id], "max_num_results": 20}]
        assert kinds(second["input"]) == ["message", "file_search_call"]
        typed = second["input"][1]
        assert typed["queries"] == ["oldest café"] and typed["status"] == "completed"
        assert typed["results"][0]["file_id"] == f.id and typed["results"][0]["text"].startswith("【1†cafés.md】")
    finally:
        nclient.vector_stores.delete(vs.id)
        nclient.files.delete(f.id)


def test_native_web_search_is_declared_natively_and_run_by_the_gateway(nclient, upstream, searx):
    query = "axum latest release"
    docs = SF.KEPT[0]["url"]
    upstream.push({"tool_calls": [{"name": "web_search", "hosted": "web_search", "arguments": json.dumps({"query": query})}]},
                  {"text": [f"See {docs} for more."]})
    resp, _ = create(nclient, model=MODEL, input="What is new in axum?", tools=[{"type": "web_search"}])
    ws = [o for o in resp.output if o.type == "web_search_call"]
    assert len(ws) == 1 and ws[0].status == "completed" and ws[0].action.query == query
    msg = [o for o in resp.output if o.type == "message"][-1]
    assert [a.type for a in msg.content[0].annotations] == ["url_citation"]
    first, second = bodies(upstream)
    assert first["tools"] == [{"type": "web_search", "search_context_size": "medium"}]
    assert kinds(second["input"]) == ["message", "web_search_call"]
    assert docs in [s["url"] for s in second["input"][1]["action"]["sources"]]
    assert searx.queries[-1]["q"] == [query], "the gateway ran the search"
