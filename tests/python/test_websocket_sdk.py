"""WebSocket mode (issue 27) with the official SDK's `client.responses.connect()`.

Every stream the socket carries is validated like an SSE stream (each event against the SDK's
and Open Responses' types, and the stream invariants), on a chat upstream and on a Responses
upstream. The gateway keeps each lane's latest `store: false` response in the connection's
memory, so a 20-call client tool loop continues by `previous_response_id` without storing
anything; what the upstream received shows the whole history each time.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

import harness
import search_fixture as SF
import validate as V
from test_responses_sdk import MODEL, WEATHER_TOOL
from test_responses_upstream import responses_gateway_client

pytestmark = pytest.mark.usefixtures("upstream", "searx")

TERMINAL = {"response.completed", "response.incomplete", "response.failed"}


@pytest.fixture(scope="module")
def rclient(upstream_server: harness.Upstream, search_server: SF.SearchFixture, tmp_path_factory: pytest.TempPathFactory):
    """A client of a gateway whose upstream API is `responses`."""
    yield from responses_gateway_client(upstream_server, search_server, tmp_path_factory.mktemp("ws-responses-upstream"))


@pytest.fixture(params=["chat", "responses"])
def any_client(request: pytest.FixtureRequest, client: openai.OpenAI) -> openai.OpenAI:
    """The gateway on a chat upstream, then the one on a Responses upstream."""
    return client if request.param == "chat" else request.getfixturevalue("rclient")


def receive(conn: Any, stream_id: str | None = None) -> list[dict[str, Any]]:
    """Reads messages until the terminal event (or a refusal's `error` event) of one response: each
    parsed by the SDK into its typed event, and returned as the JSON it was."""
    out: list[dict[str, Any]] = []
    while True:
        raw = conn.recv_bytes()
        event = json.loads(raw)
        typed = conn.parse_event(raw)
        assert typed.type == event["type"], (typed, event)
        assert event.get("stream_id") == stream_id, f"stream_id {event.get('stream_id')!r} != {stream_id!r}: {event}"
        out.append(event)
        # An `error` inside a response's stream (it has a sequence number) comes before its
        # `response.failed`; one without is the whole answer to a refused message.
        if event["type"] in TERMINAL or (event["type"] == "error" and "sequence_number" not in event):
            return out


def checked(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The stream checker on one response's events (as the SSE data payloads, without the
    WebSocket-only `stream_id`): every event valid, the invariants held. Its final Response."""
    plain = [{k: v for k, v in e.items() if k != "stream_id"} for e in events]
    V.validate_stream(plain)
    assert plain[-1]["type"] in TERMINAL, plain[-1]
    return plain[-1]["response"]


def test_text_answer(any_client, upstream):
    # 20 ms apart: each chunk arrives on its own and is its own delta (chunks that arrive
    # together leave as one, issue 34).
    upstream.push({"text": ["Hel", "lo", " there"], "token_delay_ms": 20})
    with any_client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="hi", instructions="Be brief.")
        events = receive(conn)
    final = checked(events)
    assert final["status"] == "completed"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["Hel", "lo", " there"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_streamed_function_call(any_client, upstream):
    upstream.push({"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": "Paris"}), "fragment_chars": 4}], "token_delay_ms": 20})
    with any_client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="Weather in Paris?", tools=[WEATHER_TOOL])
        events = receive(conn)
    final = checked(events)
    kinds = [e["type"] for e in events]
    assert kinds.count("response.function_call_arguments.delta") >= 2, kinds
    (call,) = final["output"]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"city": "Paris"}


def test_twenty_call_client_loop_continues_from_the_connection_with_store_false(client, gateway, upstream):
    calls = 20
    for i in range(calls):
        upstream.push({"tool_calls": [{"name": "get_weather", "arguments": json.dumps({"city": f"c{i}"})}]})
    upstream.push({"text": ["All", " done"]})
    ids = []
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="Check 20 cities.", tools=[WEATHER_TOOL], store=False)
        previous = None
        for i in range(calls + 1):
            if previous is not None:
                conn.response.create(
                    model=MODEL,
                    previous_response_id=previous["id"],
                    input=[{"type": "function_call_output", "call_id": previous["output"][0]["call_id"], "output": f"sunny {i}"}],
                    tools=[WEATHER_TOOL],
                    store=False,
                )
            final = checked(receive(conn))
            assert final["status"] == "completed", final
            ids.append(final["id"])
            previous = final
        assert previous["output"][-1]["content"][0]["text"] == "All done"
    bodies = upstream.chat_bodies()
    assert len(bodies) == calls + 1
    # The last request holds the whole loop: the user message, 20 calls and their outputs.
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last].count("tool") == calls, harness.dumps(last)
    assert sum(len(m.get("tool_calls") or []) for m in last) == calls
    assert harness.message_text(last[0]) == "Check 20 cities."
    # Nothing was stored.
    for rid in (ids[0], ids[-1]):
        assert gateway.http.get(f"/v1/responses/{rid}").status_code == 404


def test_an_error_event_leaves_the_connection_usable(client, upstream):
    upstream.push({"text": ["still here"]})
    with client.responses.connect() as conn:
        conn.send_raw("{not json")
        (err,) = receive(conn)
        assert err["type"] == "error" and err["status"] == 400 and err["error"]["code"] == "invalid_json", err
        conn.send({"type": "response.nope"})
        (err,) = receive(conn)
        assert err["error"]["code"] == "unknown_event_type" and err["error"]["param"] == "type", err
        conn.response.create(input="no model")
        (err,) = receive(conn)
        assert err["status"] == 400 and err["error"]["param"] == "model", err
        typed = conn.parse_event(json.dumps(err))
        assert typed.type == "error" and typed.error.param == "model"
        conn.response.create(model=MODEL, input="hi", background=True)
        (err,) = receive(conn)
        assert err["error"]["param"] == "background", err
        conn.response.create(model=MODEL, input="hi", previous_response_id="resp_unknown", store=False)
        (err,) = receive(conn)
        assert err["error"]["code"] == "previous_response_not_found", err
        conn.response.create(model=MODEL, input="hi")
        final = checked(receive(conn))
    assert final["output"][0]["content"][0]["text"] == "still here"


def test_two_responses_at_once_on_one_connection(client, upstream):
    # Lane "a" answers slowly; lane "b" starts while "a" runs and both finish.
    upstream.push({"text": ["a1", "a2", "a3", "a4"], "token_delay_ms": 150}, {"text": ["b1", "b2"]})
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="first", stream_id="a")
        # Until lane a streams (its upstream request has taken the first script).
        early: list[dict[str, Any]] = []
        while not early or early[-1]["type"] != "response.output_text.delta":
            early.append(json.loads(conn.recv_bytes()))
            assert early[-1]["stream_id"] == "a"
        conn.response.create(model=MODEL, input="second", stream_id="b")
        by_lane: dict[str, list[dict[str, Any]]] = {"a": early, "b": []}
        done: set[str] = set()
        order = []
        while done != {"a", "b"}:
            event = json.loads(conn.recv_bytes())
            lane = event["stream_id"]
            by_lane[lane].append(event)
            order.append(lane)
            if event["type"] in TERMINAL:
                done.add(lane)
    a, b = checked(by_lane["a"]), checked(by_lane["b"])
    assert a["output"][0]["content"][0]["text"] == "a1a2a3a4"
    assert b["output"][0]["content"][0]["text"] == "b1b2"
    assert order.index("b") < len(order) - 1 - order[::-1].index("a"), "b ran while a was running"


def test_a_second_create_on_the_default_lane_while_one_runs_is_an_error(client, upstream):
    upstream.push({"text": ["x1", "x2", "x3"], "token_delay_ms": 150}, {"text": ["next"]})
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="first")
        first = [json.loads(conn.recv_bytes())]
        conn.response.create(model=MODEL, input="second")
        rest = receive(conn)
        errors = [e for e in rest if e["type"] == "error"]
        assert len(errors) == 1 and errors[0]["error"]["code"] == "response_in_progress", errors
        events = first + [e for e in rest if e["type"] != "error"]
        if events[-1]["type"] not in TERMINAL:
            events += receive(conn)
        assert checked(events)["output"][0]["content"][0]["text"] == "x1x2x3"
        # Afterwards the default lane takes the next one.
        conn.response.create(model=MODEL, input="again")
        assert checked(receive(conn))["output"][0]["content"][0]["text"] == "next"


def test_warm_up_then_continue(client, upstream):
    with client.responses.connect() as conn:
        conn.send({"type": "response.create", "model": MODEL, "input": "Remember: blue.", "generate": False, "store": False,
                   "tools": [WEATHER_TOOL], "instructions": "Be brief."})
        warm = checked(receive(conn))
        assert warm["status"] == "completed" and warm["output"] == [], warm
        assert upstream.requests() == [], "a warm-up calls no model"
        upstream.push({"text": ["blue"]})
        conn.response.create(model=MODEL, input="Which colour?", previous_response_id=warm["id"], store=False)
        final = checked(receive(conn))
    assert final["previous_response_id"] == warm["id"]
    (body,) = upstream.chat_bodies()
    texts = [harness.message_text(m) for m in body["messages"] if m["role"] == "user"]
    assert texts == ["Remember: blue.", "Which colour?"], harness.dumps(body["messages"])


def test_stored_responses_continue_from_the_store_on_a_new_connection(client, upstream):
    upstream.push({"text": ["one"]}, {"text": ["two"]})
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="first", store=True)
        first = checked(receive(conn))
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="second", previous_response_id=first["id"], store=True)
        second = checked(receive(conn))
    assert client.responses.retrieve(second["id"]).output_text == "two"
    texts = [harness.message_text(m) for m in upstream.chat_bodies()[-1]["messages"]]
    assert texts == ["first", "one", "second"], texts


def test_a_failed_continuation_evicts_its_parent(client, upstream):
    upstream.push({"text": ["kept"]}, {"http_status": 400, "error_body": json.dumps({"error": {"message": "bad", "type": "invalid_request_error"}})})
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="first", store=False)
        first = checked(receive(conn))
        conn.response.create(model=MODEL, input="second", previous_response_id=first["id"], store=False)
        failed = receive(conn)
        assert failed[-1]["type"] == "response.failed", failed[-1]
        conn.response.create(model=MODEL, input="third", previous_response_id=first["id"], store=False)
        (err,) = receive(conn)
        assert err["error"]["code"] == "previous_response_not_found", err


def test_steering_is_refused_with_its_event(client, upstream):
    with client.responses.connect() as conn:
        conn.response.steer(input="also this", previous_response_id="resp_x")
        typed = conn.recv()
    assert typed.type == "response.steer.failed" and typed.error.code == "steering_not_supported"
    assert typed.steer.previous_response_id == "resp_x"


def test_threads_share_nothing_between_connections(client, upstream):
    # Two connections at once, each with its own store:false chain.
    upstream.push(*[{"text": ["same"]} for _ in range(4)])
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        with client.responses.connect() as conn:
            conn.response.create(model=MODEL, input=name, store=False)
            first = checked(receive(conn))
            conn.response.create(model=MODEL, input="again", previous_response_id=first["id"], store=False)
            results[name] = checked(receive(conn))
            # The other connection's response is not this one's to continue.
            results[name + "-first"] = first["id"]

    threads = [threading.Thread(target=run, args=(n,)) for n in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results["x"]["status"] == results["y"]["status"] == "completed"
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, input="z", previous_response_id=results["x-first"], store=False)
        (err,) = receive(conn)
        assert err["error"]["code"] == "previous_response_not_found"
