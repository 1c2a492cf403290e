"""Background responses with the official SDK (issue 19, first part): `background: true` is
answered at once with status `queued`, a worker runs it, `responses.retrieve` shows
`queued` / `in_progress` and then the stored result; `responses.cancel` cancels a queued run
at once and a running one through its worker, is idempotent, answers a finished background
response unchanged, refuses a foreground one (400) and an unknown id (404). A full queue is a
429. One worker and a queue of two make every state reachable. Run on SQLite and again on
PostgreSQL by scripts/test.sh's store pass."""

from __future__ import annotations

import time

import openai
import pytest

import harness
import search_fixture


@pytest.fixture(scope="module")
def bg(upstream_server: harness.Upstream, search_server: search_fixture.SearchFixture,
       tmp_path_factory: pytest.TempPathFactory):
    env = {
        **search_server.gateway_env(),
        "RESPONSES_GATEWAY_BACKGROUND__WORKERS": "1",
        "RESPONSES_GATEWAY_BACKGROUND__MAX_QUEUED": "2",
        "RESPONSES_GATEWAY_BACKGROUND__POLL_MS": "50",
    }
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url,
                               tmp_path_factory.mktemp("background"), extra_env=env)
    yield gw
    gw.close()
    gw.proc.stop()


@pytest.fixture
def client(bg: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    with openai.OpenAI(base_url=bg.api_base, api_key="unused", max_retries=0, timeout=30) as c:
        yield c


def wait_status(c: openai.OpenAI, rid: str, want: set[str], timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        r = c.responses.retrieve(rid)
        if r.status in want:
            return r
        assert time.monotonic() < deadline, f"{rid} stayed {r.status}, wanted {want}"
        time.sleep(0.05)


def slow(n: int = 40) -> dict:
    """An answer of n tokens, 100 ms apart: it keeps the one worker busy for n/10 s."""
    return {"text": ["tok "] * n, "token_delay_ms": 100}


def test_background_runs_to_completion(client: openai.OpenAI, upstream_server: harness.Upstream):
    upstream_server.push({"text": ["Done ", "later."]})
    r = client.responses.create(model="m", input="take your time", background=True)
    assert r.background is True
    assert r.status in ("queued", "in_progress")
    assert r.output == []
    done = wait_status(client, r.id, {"completed"})
    assert done.id == r.id and done.background is True
    assert done.output_text == "Done later."
    # It is stored like any response: it can be continued.
    upstream_server.push({"text": ["Again."]})
    follow = client.responses.create(model="m", input="more", previous_response_id=r.id)
    assert follow.output_text == "Again."


def test_cancel_running_and_queued(client: openai.OpenAI, upstream_server: harness.Upstream):
    upstream_server.push(slow())
    running = client.responses.create(model="m", input="long", background=True)
    wait_status(client, running.id, {"in_progress"})
    queued = client.responses.create(model="m", input="waits", background=True)
    assert client.responses.retrieve(queued.id).status == "queued"
    # Its input items are listed already; it cannot be deleted while queued, nor can a
    # turn continue from it.
    assert [i.type for i in client.responses.input_items.list(queued.id).data] == ["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.delete(queued.id)
    assert e.value.code == "response_in_progress"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="m", input="next", previous_response_id=queued.id)
    assert e.value.code == "previous_response_not_finished" and e.value.param == "previous_response_id"
    # A queued run is cancelled at once and never runs.
    c = client.responses.cancel(queued.id)
    assert c.status == "cancelled" and c.id == queued.id
    assert client.responses.retrieve(queued.id).status == "cancelled"
    # A running one stops, and is stored cancelled with what it had so far.
    c = client.responses.cancel(running.id)
    assert c.status == "cancelled", c.status
    stored = client.responses.retrieve(running.id)
    assert stored.status == "cancelled"
    assert len(upstream_server.requests()) == 1, "the cancelled queued run reached the upstream"
    # Idempotent.
    assert client.responses.cancel(running.id).status == "cancelled"
    assert client.responses.cancel(queued.id).status == "cancelled"
    # Both can be deleted now, the one that never ran too.
    for rid in (queued.id, running.id):
        client.responses.delete(rid)
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(rid)


def test_cancel_finished_foreground_and_unknown(client: openai.OpenAI, upstream_server: harness.Upstream):
    upstream_server.push({"text": ["quick"]})
    r = client.responses.create(model="m", input="hi", background=True)
    wait_status(client, r.id, {"completed"})
    # A finished background response is answered unchanged.
    assert client.responses.cancel(r.id).status == "completed"
    upstream_server.push({"text": ["fg"]})
    fg = client.responses.create(model="m", input="hi")
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.cancel(fg.id)
    assert "background=true" in e.value.message
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_" + "0" * 48)


def test_bad_background_requests(client: openai.OpenAI, upstream_server: harness.Upstream):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="m", input="hi", background=True, store=False)
    assert e.value.param == "background"
    assert upstream_server.requests() == []


def test_full_queue_is_429(client: openai.OpenAI, upstream_server: harness.Upstream):
    upstream_server.push(slow(20))
    running = client.responses.create(model="m", input="long", background=True)
    wait_status(client, running.id, {"in_progress"})
    waiting = [client.responses.create(model="m", input=f"w{i}", background=True) for i in range(2)]
    with pytest.raises(openai.RateLimitError) as e:
        client.responses.create(model="m", input="one too many", background=True)
    assert "background.max_queued" in e.value.message
    assert e.value.response.headers.get("retry-after") == "1"
    for r in [running, *waiting]:
        client.responses.cancel(r.id)


def test_cancel_stops_a_running_tool_call(client: openai.OpenAI, upstream_server: harness.Upstream,
                                           search_server: search_fixture.SearchFixture):
    """The run's web search is slow at the backend; a cancel stops the call (the search item
    fails) instead of waiting for it, and no later round reaches the upstream."""
    search_server.reset("slow")
    try:
        upstream_server.push({"tool_calls": [{"name": "web_search", "arguments": '{"query": "weather"}'}]},
                             {"text": ["never"]})
        r = client.responses.create(model="m", input="search", tools=[{"type": "web_search"}], background=True)
        deadline = time.monotonic() + 30
        while not search_server.queries:
            assert time.monotonic() < deadline, "the search never started"
            time.sleep(0.05)
        c = client.responses.cancel(r.id)
        assert c.status == "cancelled"
        # Had the cancel waited for the search (it answers after 8 s), the item would be
        # completed.
        search = [i for i in c.output if i.type == "web_search_call"]
        assert search and search[0].status == "failed", search
        assert len(upstream_server.requests()) == 1, "a round after the cancel reached the upstream"
    finally:
        search_server.reset()


def test_background_turn_with_gateway_and_client_tools(client: openai.OpenAI, upstream_server: harness.Upstream,
                                                       search_server: search_fixture.SearchFixture):
    """A background turn runs web_search and file_search, then ends `completed` with the
    client's function call; the client answers it by previous_response_id in a new
    background turn."""
    search_server.reset()
    f = client.files.create(file=("notes.md", b"The team's office is in Ghent, next to the old harbour."),
                            purpose="assistants")
    vs = client.vector_stores.create(name="notes")
    client.vector_stores.files.create_and_poll(vector_store_id=vs.id, file_id=f.id)
    weather = {"type": "function", "name": "get_weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    tools = [{"type": "web_search"}, {"type": "file_search", "vector_store_ids": [vs.id]}, weather]
    upstream_server.push(
        {"tool_calls": [{"name": "web_search", "arguments": '{"query": "Ghent weather"}'},
                        {"name": "file_search", "arguments": '{"queries": ["office city"]}'}]},
        {"tool_calls": [{"name": "get_weather", "arguments": '{"city": "Ghent"}'}]},
    )
    r = client.responses.create(model="m", input="Weather at our office?", tools=tools, background=True)
    done = wait_status(client, r.id, {"completed", "failed", "incomplete"})
    assert done.status == "completed", done
    types = [i.type for i in done.output]
    assert "web_search_call" in types and "file_search_call" in types, types
    call = done.output[-1]
    assert call.type == "function_call" and call.name == "get_weather"
    # The gateway ran both searches; what the model read came back to it in round 2.
    assert search_server.queries and search_server.queries[0]["q"] == ["Ghent weather"]
    round2 = upstream_server.requests()[1]["body"]["messages"]
    assert any("old harbour" in str(m.get("content")) for m in round2), "file_search results not given to the model"
    upstream_server.push({"text": ["Sunny in Ghent."]})
    follow = client.responses.create(
        model="m", tools=tools, background=True, previous_response_id=r.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C, sunny"}],
    )
    final = wait_status(client, follow.id, {"completed", "failed", "incomplete"})
    assert final.status == "completed" and final.output_text == "Sunny in Ghent."
    last = upstream_server.requests()[-1]["body"]["messages"]
    assert any(m.get("role") == "tool" and "18C" in str(m.get("content")) for m in last)


def test_queued_runs_on_one_conversation_run_one_after_the_other(client: openai.OpenAI, upstream_server: harness.Upstream):
    """The one worker is busy; two background turns queued on one conversation both run,
    in order, each seeing the other's turn (the second waits for the conversation)."""
    conv = client.conversations.create()
    upstream_server.push(slow(10), {"text": ["first"]}, {"text": ["second"]})
    busy = client.responses.create(model="m", input="busy", background=True)
    wait_status(client, busy.id, {"in_progress"})
    q1 = client.responses.create(model="m", input="one", conversation=conv.id, background=True)
    q2 = client.responses.create(model="m", input="two", conversation=conv.id, background=True)
    assert wait_status(client, q1.id, {"completed", "failed"}).status == "completed"
    r2 = wait_status(client, q2.id, {"completed", "failed"})
    assert r2.status == "completed", r2.error
    texts = [str(m["content"]) for m in upstream_server.requests()[-1]["body"]["messages"] if m["role"] == "user"]
    assert "one" in texts[-2] and "two" in texts[-1], texts
