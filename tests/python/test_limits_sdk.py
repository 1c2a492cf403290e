"""[limits] with the official SDK (issue 20 "Limits"): a key's requests per minute and
concurrent streams, the upstream's in-flight slots, and the size ceilings. A refusal is 429
`rate_limit_exceeded` with `Retry-After` (the SDK's RateLimitError) or a 400 naming the field,
and never reaches the upstream or the store. Each key has its own budget, so every test uses
keys of its own."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

import harness

KEYS = {name: f"sk-limits-{name}-0123456789" for name in ("rate", "other", "stream", "queued", "sizes")}


@pytest.fixture(scope="module")
def limited(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    env = {
        "RESPONSES_GATEWAY_LIMITS__REQUESTS_PER_MINUTE": "5",
        "RESPONSES_GATEWAY_LIMITS__CONCURRENT_STREAMS": "1",
        "RESPONSES_GATEWAY_LIMITS__UPSTREAM_MAX_IN_FLIGHT": "1",
        "RESPONSES_GATEWAY_LIMITS__UPSTREAM_QUEUE": "0",
        "RESPONSES_GATEWAY_LIMITS__MAX_INPUT_ITEMS": "3",
        "RESPONSES_GATEWAY_LIMITS__MAX_TOOLS": "2",
        "RESPONSES_GATEWAY_LIMITS__MAX_OUTPUT_TOKENS": "100",
    }
    gw = harness.start_keyed_gateway(upstream_server.base_url, tmp_path_factory.mktemp("limits"),
                                     list(KEYS.items()), env)
    yield gw
    gw.close()
    gw.proc.stop()


def client(gw: harness.Gateway, name: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.api_base, api_key=KEYS[name], max_retries=0, timeout=30)


def assert_429(e: pytest.ExceptionInfo[openai.RateLimitError], setting: str) -> None:
    assert e.value.status_code == 429
    assert e.value.code == "rate_limit_exceeded"
    assert setting in e.value.message
    retry = e.value.response.headers.get("retry-after")
    assert retry is not None and int(retry) >= 1, retry
    for key in KEYS.values():
        assert key not in e.value.response.text


def test_requests_per_minute_per_key(limited: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    with client(limited, "rate") as c:
        for _ in range(5):
            c.models.list()
        with pytest.raises(openai.RateLimitError) as e:
            c.models.list()
        assert_429(e, "limits.requests_per_minute")
        # 5 per minute: the next request is about 12 s away.
        assert 1 <= int(e.value.response.headers["retry-after"]) <= 12
        upstream_server.push({"text": ["never"]})
        with pytest.raises(openai.RateLimitError):
            c.responses.create(model="m", input="hi")
    assert upstream_server.requests() == [], "a refused request reached the upstream"
    # Another key has its own budget.
    with client(limited, "other") as o:
        assert o.models.list() is not None


def test_concurrent_streams_and_upstream_slots(limited: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    # A slow answer (30 tokens, 100 ms apart) holds the key's one stream slot and the
    # upstream's one slot while it runs.
    upstream_server.push({"text": ["tok "] * 30, "token_delay_ms": 100})
    with client(limited, "stream") as s, client(limited, "queued") as q:
        stream = s.responses.create(model="m", input="slow", stream=True)
        events = iter(stream)
        assert next(events).type == "response.created"
        with pytest.raises(openai.RateLimitError) as e:
            s.responses.create(model="m", input="second stream", stream=True)
        assert_429(e, "limits.concurrent_streams")
        # Another key gets no upstream slot (the queue holds 0): refused at once, not stored.
        with pytest.raises(openai.RateLimitError) as e:
            q.responses.create(model="m", input="wants the upstream")
        assert_429(e, "limits.upstream_max_in_flight")
        rest = [ev.type for ev in events]
        assert rest[-1] == "response.completed"
        assert len(upstream_server.requests()) == 1
        # The slots are free again.
        upstream_server.push({"text": ["now"]})
        assert q.responses.create(model="m", input="wants the upstream").output_text == "now"


def test_size_ceilings(limited: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    fn = lambda n: {"type": "function", "name": f"f{n}", "parameters": {"type": "object", "properties": {}}}
    msg = {"type": "message", "role": "user", "content": "hi"}
    with client(limited, "sizes") as c:
        cases = [
            ("tools", "limits.max_tools", dict(input="hi", tools=[fn(1), fn(2), fn(3)])),
            ("input", "limits.max_input_items", dict(input=[msg] * 4)),
            ("max_output_tokens", "limits.max_output_tokens", dict(input="hi", max_output_tokens=101)),
        ]
        for param, setting, kw in cases:
            with pytest.raises(openai.BadRequestError) as e:
                c.responses.create(model="m", **kw)
            assert e.value.param == param, e.value.body
            assert e.value.code == "invalid_value"
            assert setting in e.value.message, e.value.message
        # At the ceilings the request goes through.
        upstream_server.push({"text": ["ok"]})
        r = c.responses.create(model="m", input=[msg] * 3, tools=[fn(1), fn(2)], max_output_tokens=100)
        assert r.output_text == "ok"
    assert len(upstream_server.requests()) == 1, "a refused request reached the upstream"


def test_default_output_cap(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    """limits.default_max_output_tokens: the cap of a request that names none. The SDK sees it
    in the Response; the upstream gets it as max_tokens; a turn that spends it is incomplete
    (the SDK's stream ends with response.incomplete); a request's own cap is kept."""
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url,
                               tmp_path_factory.mktemp("default-cap"),
                               extra_env={"RESPONSES_GATEWAY_LIMITS__DEFAULT_MAX_OUTPUT_TOKENS": "64"})
    try:
        with openai.OpenAI(base_url=gw.api_base, api_key="unused", max_retries=0, timeout=30) as c:
            upstream_server.reset()
            upstream_server.push({"text": ["short"], "usage": {"completion_tokens": 5}})
            r = c.responses.create(model="m", input="hi")
            assert (r.status, r.max_output_tokens, r.output_text) == ("completed", 64, "short")
            assert upstream_server.chat_bodies()[0]["max_tokens"] == 64
            upstream_server.reset()
            upstream_server.push({"text": ["on", " and", " on"], "usage": {"completion_tokens": 64}, "finish_reason": "length"})
            with c.responses.stream(model="m", input="ramble") as s:
                events = list(s)
            assert events[-1].type == "response.incomplete", [e.type for e in events]
            cut = events[-1].response
            assert (cut.max_output_tokens, cut.incomplete_details.reason) == (64, "max_output_tokens")
            assert c.responses.retrieve(cut.id).max_output_tokens == 64, "stored with the cap"
            upstream_server.reset()
            upstream_server.push({"text": ["longer"], "usage": {"completion_tokens": 100}})
            r = c.responses.create(model="m", input="hi", max_output_tokens=200)
            assert (r.status, r.max_output_tokens) == ("completed", 200)
            assert upstream_server.chat_bodies()[0]["max_tokens"] == 200
    finally:
        gw.close()
        gw.proc.stop()


def test_health_is_not_rate_limited(limited: harness.Gateway):
    base = limited.api_base.removesuffix("/v1")
    for _ in range(10):
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200


@pytest.fixture(scope="module")
def slots(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    """No keys (one shared budget), one upstream slot without a queue, one stream, two
    background workers, no rate."""
    env = {
        "RESPONSES_GATEWAY_LIMITS__CONCURRENT_STREAMS": "1",
        "RESPONSES_GATEWAY_LIMITS__UPSTREAM_MAX_IN_FLIGHT": "1",
        "RESPONSES_GATEWAY_LIMITS__UPSTREAM_QUEUE": "0",
        "RESPONSES_GATEWAY_BACKGROUND__WORKERS": "2",
        "RESPONSES_GATEWAY_BACKGROUND__POLL_MS": "50",
    }
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url,
                               tmp_path_factory.mktemp("slots"), extra_env=env)
    yield gw
    gw.close()
    gw.proc.stop()


def test_background_runs_take_upstream_slots_and_followers_stream_slots(slots: harness.Gateway,
                                                                         upstream_server: harness.Upstream):
    """A background request is queued even while the one upstream slot is taken (it does not
    wait for it); its worker takes the slot when it runs, so two background runs never use
    the upstream at once. A follower (GET ?stream=true) is one of the caller's streams."""
    upstream_server.reset()
    upstream_server.push({"text": ["a "] * 20, "token_delay_ms": 100}, {"text": ["b"]})
    with openai.OpenAI(base_url=slots.api_base, api_key="unused", max_retries=0, timeout=30) as c, \
            openai.OpenAI(base_url=slots.api_base, api_key="unused", max_retries=0, timeout=30) as f:
        first = c.responses.create(model="m", input="one", background=True)
        second = c.responses.create(model="m", input="two", background=True)
        deadline = time.monotonic() + 30
        while c.responses.retrieve(first.id).status == "queued" and c.responses.retrieve(second.id).status == "queued":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        assert len(upstream_server.requests()) == 1, "two background runs used the one upstream slot at once"
        running = first if c.responses.retrieve(first.id).status == "in_progress" else second
        follower = f.responses.retrieve(running.id, stream=True)
        next(iter(follower))
        with pytest.raises(openai.RateLimitError) as e:
            f.responses.retrieve(running.id, stream=True)
        assert_429(e, "limits.concurrent_streams")
        follower.close()
        for r in (first, second):
            deadline = time.monotonic() + 30
            while c.responses.retrieve(r.id).status != "completed":
                assert time.monotonic() < deadline
                time.sleep(0.05)
