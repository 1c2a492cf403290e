"""Streamed background responses, resume from the durable event log, and crash safety
(issue 19): `background: true, stream: true` streams the run's events; a client that leaves
does not stop it; `GET /v1/responses/{id}?stream=true&starting_after=N` (the SDK's
`responses.retrieve(id, stream=True, starting_after=N)`) sends exactly the bytes the first
stream sent after event N, then the live ones; a finished run replays its log; N past the end,
or a response without a log, is a 400 naming `starting_after`; DELETE removes the log.

With PostgreSQL (scripts/test.sh's store pass), two gateway processes share the database:
a resume and a cancel sent to B reach the run on A, and after A is killed with SIGKILL a
restarted replica marks its run failed within the lease. On SQLite one process does the same
(the crash test restarts it on the same data directory)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import openai
import pytest

import harness

POSTGRES = os.environ.get("RESPONSES_GATEWAY_STORE__BACKEND") == "postgres"
LEASE_MS = "1500"


def start(upstream: harness.Upstream, logs: Path, workers: int, data: Path | None = None) -> harness.Gateway:
    env = {
        "RESPONSES_GATEWAY_BACKGROUND__WORKERS": str(workers),
        "RESPONSES_GATEWAY_BACKGROUND__POLL_MS": "50",
        "RESPONSES_GATEWAY_BACKGROUND__LEASE_MS": LEASE_MS,
    }
    if data is not None:
        env["RESPONSES_GATEWAY_SERVER__DATA_DIR"] = str(data)
    return harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream.base_url, logs, extra_env=env)


@pytest.fixture(scope="module")
def gw(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    g = start(upstream_server, tmp_path_factory.mktemp("bg-resume"), workers=1)
    yield g
    g.close()
    g.proc.stop()


def frames(body: bytes) -> list[bytes]:
    """The SSE frames of a body, keep-alive comments left out."""
    return [f + b"\n\n" for f in body.split(b"\n\n") if f and not f.startswith(b":")]


def seq_of(frame: bytes) -> int:
    data = frame.split(b"\ndata: ", 1)[1]
    return json.loads(data)["sequence_number"]


def raw_stream(gw: harness.Gateway, method: str, path: str, **kw) -> tuple[int, bytes]:
    with httpx.stream(method, f"{gw.api_base}{path}", timeout=60, **kw) as r:
        return r.status_code, r.read()


def slow(n: int, delay: int = 50) -> dict:
    return {"text": [f"t{i} " for i in range(n)], "token_delay_ms": delay}


def test_stream_then_resume_byte_identical(gw: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    upstream_server.push(slow(12))
    status, body = raw_stream(gw, "POST", "/responses",
                              json={"model": "m", "input": "go", "background": True, "stream": True})
    assert status == 200
    first = frames(body)
    seqs = [seq_of(f) for f in first]
    assert seqs == list(range(len(first))), seqs
    assert first[-1].startswith(b"event: response.completed\n")
    rid = json.loads(first[0].split(b"\ndata: ", 1)[1])["response"]["id"]
    for n in (0, 3, len(first) // 2, len(first) - 2):
        status, again = raw_stream(gw, "GET", f"/responses/{rid}?stream=true&starting_after={n}")
        assert status == 200
        assert frames(again) == first[n + 1:], f"resume after {n} differs"
    # The whole log, and the SDK's typed resume.
    status, whole = raw_stream(gw, "GET", f"/responses/{rid}?stream=true")
    assert frames(whole) == first
    with openai.OpenAI(base_url=gw.api_base, api_key="unused", max_retries=0) as c:
        events = list(c.responses.retrieve(rid, stream=True, starting_after=5))
        assert [e.sequence_number for e in events] == list(range(6, len(first)))
        assert events[-1].type == "response.completed"
        assert events[-1].response.output_text.startswith("t0 t1")
        # After the terminal event: nothing. Past the end, or a foreground response (no
        # log): 400 naming starting_after.
        assert list(c.responses.retrieve(rid, stream=True, starting_after=len(first) - 1)) == []
        for bad_id, n in ((rid, len(first)), (rid, 10_000)):
            with pytest.raises(openai.BadRequestError) as e:
                list(c.responses.retrieve(bad_id, stream=True, starting_after=n))
            assert e.value.param == "starting_after"
        upstream_server.push({"text": ["fg"]})
        fg = c.responses.create(model="m", input="hi")
        with pytest.raises(openai.BadRequestError) as e:
            list(c.responses.retrieve(fg.id, stream=True, starting_after=0))
        assert e.value.param == "starting_after"
        # DELETE removes the response and its log.
        c.responses.delete(rid)
        with pytest.raises(openai.NotFoundError):
            list(c.responses.retrieve(rid, stream=True, starting_after=0))


def test_disconnect_does_not_stop_the_run_and_resume_continues(gw: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    upstream_server.push(slow(30, delay=60))
    seen: list[bytes] = []
    with httpx.stream("POST", f"{gw.api_base}/responses", timeout=60,
                      json={"model": "m", "input": "go", "background": True, "stream": True}) as r:
        buf = b""
        for chunk in r.iter_bytes():
            buf += chunk
            *done, buf = buf.split(b"\n\n")
            seen += [f + b"\n\n" for f in done if f and not f.startswith(b":")]
            if len(seen) >= 6:
                break  # the client leaves mid-run
    rid = json.loads(seen[0].split(b"\ndata: ", 1)[1])["response"]["id"]
    last = seq_of(seen[-1])
    status, rest = raw_stream(gw, "GET", f"/responses/{rid}?stream=true&starting_after={last}")
    assert status == 200
    rest_frames = frames(rest)
    assert [seq_of(f) for f in rest_frames] == list(range(last + 1, last + 1 + len(rest_frames)))
    assert rest_frames[-1].startswith(b"event: response.completed\n")
    with openai.OpenAI(base_url=gw.api_base, api_key="unused", max_retries=0) as c:
        done = c.responses.retrieve(rid)
        assert done.status == "completed"
        assert done.output_text == "".join(f"t{i} " for i in range(30))


@pytest.mark.skipif(not POSTGRES, reason="two replicas need the shared PostgreSQL store (the store pass)")
def test_two_replicas_resume_and_cancel(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    a = start(upstream_server, tmp_path_factory.mktemp("replica-a"), workers=1)
    b = start(upstream_server, tmp_path_factory.mktemp("replica-b"), workers=0)
    try:
        upstream_server.reset()
        upstream_server.push(slow(16))
        status, body = raw_stream(a, "POST", "/responses", json={"model": "m", "input": "go", "background": True, "stream": True})
        first = frames(body)
        rid = json.loads(first[0].split(b"\ndata: ", 1)[1])["response"]["id"]
        for n in (0, 4, len(first) - 2):
            status, again = raw_stream(b, "GET", f"/responses/{rid}?stream=true&starting_after={n}")
            assert status == 200 and frames(again) == first[n + 1:], f"B's resume after {n} differs"
        # A streamed background request sent to B (no workers) runs on A: B's stream starts
        # from B's memory, then follows A's log from the store, every event once and in order,
        # and the same bytes as A's copy.
        upstream_server.push(slow(8))
        status, body_b = raw_stream(b, "POST", "/responses", json={"model": "m", "input": "go", "background": True, "stream": True})
        got_b = frames(body_b)
        assert status == 200 and [seq_of(f) for f in got_b] == list(range(len(got_b)))
        assert got_b[-1].startswith(b"event: response.completed\n"), got_b[-1][:60]
        rid_b = json.loads(got_b[0].split(b"\ndata: ", 1)[1])["response"]["id"]
        status, from_a = raw_stream(a, "GET", f"/responses/{rid_b}?stream=true")
        assert status == 200 and frames(from_a) == got_b
        # A live follow on B of a run on A, then a cancel sent to B.
        upstream_server.push(slow(100, delay=100))
        with openai.OpenAI(base_url=a.api_base, api_key="unused", max_retries=0) as ca, \
                openai.OpenAI(base_url=b.api_base, api_key="unused", max_retries=0, timeout=60) as cb:
            run = ca.responses.create(model="m", input="long", background=True)
            deadline = time.monotonic() + 30
            while cb.responses.retrieve(run.id).status != "in_progress":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            # Resume on B right after A's stream delivered an event: B's copy of the log may
            # lag by a batch, and it waits for the event instead of refusing it.
            with httpx.stream("GET", f"{a.api_base}/responses/{run.id}?stream=true", timeout=60) as ra:
                seen = []
                for line in ra.iter_lines():
                    if line.startswith("data: "):
                        seen.append(json.loads(line[6:])["sequence_number"])
                        if len(seen) >= 4:
                            break
            resumed = cb.responses.retrieve(run.id, stream=True, starting_after=seen[-1])
            assert next(iter(resumed)).sequence_number == seen[-1] + 1
            resumed.close()
            live = cb.responses.retrieve(run.id, stream=True)
            got = []
            for ev in live:
                got.append(ev)
                if ev.type == "response.output_text.delta" and len(got) > 6:
                    break
            cancelled = cb.responses.cancel(run.id)
            assert cancelled.status == "cancelled", cancelled.status
            assert ca.responses.retrieve(run.id).status == "cancelled"
            tail = list(cb.responses.retrieve(run.id, stream=True, starting_after=got[-1].sequence_number))
            assert tail[-1].response.status == "cancelled"
    finally:
        for g in (a, b):
            g.close()
            g.proc.stop()


def test_killed_replica_run_is_failed_within_the_lease(upstream_server: harness.Upstream,
                                                        tmp_path_factory: pytest.TempPathFactory):
    logs = tmp_path_factory.mktemp("crash")
    data = logs / "data"
    a = start(upstream_server, logs, workers=1, data=data)
    upstream_server.reset()
    upstream_server.push(slow(200, delay=100))
    with openai.OpenAI(base_url=a.api_base, api_key="unused", max_retries=0) as ca:
        run = ca.responses.create(model="m", input="long", background=True)
        deadline = time.monotonic() + 30
        while ca.responses.retrieve(run.id).status != "in_progress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
    a.proc.p.kill()  # SIGKILL: no shutdown, the lease is left to expire
    a.proc.p.wait(timeout=10)
    a.close()
    # Another replica (PostgreSQL), or the same one restarted on its data (SQLite).
    b = start(upstream_server, tmp_path_factory.mktemp("crash-b"), workers=1, data=data)
    try:
        with openai.OpenAI(base_url=b.api_base, api_key="unused", max_retries=0) as cb:
            started = time.monotonic()
            while (r := cb.responses.retrieve(run.id)).status == "in_progress":
                assert time.monotonic() - started < 3 * int(LEASE_MS) / 1000 + 5, "the dead replica's run stayed in_progress"
                time.sleep(0.1)
            assert r.status == "failed"
            assert r.error is not None and "stopped" in r.error.message
            events = list(cb.responses.retrieve(run.id, stream=True))
            assert events[-1].type == "response.failed"
            assert [e.sequence_number for e in events] == list(range(len(events)))
    finally:
        b.close()
        b.proc.stop()


def test_in_progress_shows_the_output_so_far(gw: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    upstream_server.push(slow(40, delay=100))
    with openai.OpenAI(base_url=gw.api_base, api_key="unused", max_retries=0) as c:
        run = c.responses.create(model="m", input="long", background=True)
        stream = c.responses.retrieve(run.id, stream=True)
        for ev in stream:
            if ev.type == "response.output_text.delta" and ev.sequence_number > 8:
                break
        now = c.responses.retrieve(run.id)
        assert now.status == "in_progress"
        assert now.output_text.startswith("t0 t1 t2"), now.output_text
        c.responses.cancel(run.id)


def test_a_stream_waiting_for_a_queued_run_ends_when_it_is_cancelled(gw: harness.Gateway, upstream_server: harness.Upstream):
    """The one worker is busy; a streamed background request waits in the queue; cancelling
    it ends that stream with a terminal event (status cancelled)."""
    upstream_server.reset()
    upstream_server.push(slow(60, delay=100))
    with openai.OpenAI(base_url=gw.api_base, api_key="unused", max_retries=0, timeout=60) as c:
        busy = c.responses.create(model="m", input="long", background=True)
        deadline = time.monotonic() + 30
        while c.responses.retrieve(busy.id).status != "in_progress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        waiting = c.responses.create(model="m", input="waits", background=True, stream=True)
        events = iter(waiting)
        # The stream starts at once, while the run waits for the busy worker.
        got = [next(events), next(events)]
        assert [e.type for e in got] == ["response.created", "response.queued"]
        assert got[0].response.status == "queued" and got[0].response.background is True
        rid = got[0].response.id
        assert c.responses.retrieve(rid).status == "queued"
        assert c.responses.cancel(rid).status == "cancelled"
        got += list(events)
        assert [e.type for e in got] == ["response.created", "response.queued", "response.incomplete"], [e.type for e in got]
        assert got[-1].response.status == "cancelled"
        c.responses.cancel(busy.id)
