"""The JSON log (`--log-format json`, RUST_LOG=debug) of a gateway holding every kind of
credential: an upstream API key (upstream.api_key_env), an inbound [auth] key, a web_search
backend key and, when a PostgreSQL server answers, a store URL with a password. Requests
through the official SDK and raw HTTP: a gateway tool round trip, a stream, a wrong key
(401), upstream 500 and 401 (whose error body quotes the upstream key), a malformed
`traceparent`, an invalid client `x-request-id`. Then, over the whole log:

* every line on stdout and stderr is one JSON object;
* every answer carries `x-request-id` (the client's when valid, else a generated one), and
  the lines of one request carry its id;
* each request has its `request` line (method, route, path, status, duration_ms) and each
  turn its `turn` line (response_id, model, status, duration_ms, upstream_ms, tool_ms, rounds);
* no credential appears anywhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import openai
import pytest

import harness
import search_fixture as SF

MODEL = "scripted-model"
UPSTREAM_KEY = "sk-upstream-logsecret-5b1e0c"
INBOUND_KEY = "sk-inbound-logsecret-93ad41"
WRONG_KEY = "sk-wrong-logsecret-000111"
SEARCH_KEY = "search-logsecret-7f20aa"
PG_PASSWORD = "secretpw-logs-4d2c"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def postgres_store() -> tuple[dict[str, str], str | None, Any]:
    """A fresh database on the test PostgreSQL server, reached through a URL with a password:
    the admin URL's own, or an added one (the machine's server trusts 127.0.0.1). Returns the
    gateway's store settings, the password to look for, and a cleanup; SQLite (no password)
    when no server answers."""
    admin = os.environ.get("RESPONSES_GATEWAY_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    if not shutil.which("psql"):
        return {}, None, lambda: None
    name = f"rg_logs_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["psql", admin, "-Atqc", f'CREATE DATABASE "{name}"'], capture_output=True, timeout=30)
    if made.returncode != 0:
        return {}, None, lambda: None
    u = urlsplit(admin)
    password = u.password or PG_PASSWORD
    netloc = f"{u.username or 'postgres'}:{password}@{u.hostname}" + (f":{u.port}" if u.port else "")
    url = urlunsplit((u.scheme, netloc, f"/{name}", u.query, ""))

    def drop() -> None:
        subprocess.run(["psql", admin, "-Atqc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
                       capture_output=True, timeout=30)

    env = {"RESPONSES_GATEWAY_STORE__BACKEND": "postgres", "RESPONSES_GATEWAY_STORE__URL_ENV": "GW_LOGS_PG_URL",
           "GW_LOGS_PG_URL": url}
    return env, password, drop


def request_id_of(line: dict[str, Any]) -> str | None:
    """The request id a log line carries: its own field, or its request span's."""
    if isinstance(line.get("request_id"), str):
        return line["request_id"]
    for span in line.get("spans") or []:
        if isinstance(span, dict) and isinstance(span.get("request_id"), str):
            return span["request_id"]
    return None


def test_json_log_with_request_ids_and_no_secrets(upstream_server: harness.Upstream, search_server: SF.SearchFixture,
                                                 tmp_path: Path):
    upstream_server.reset()
    search_server.reset()
    keys = tmp_path / "keys"
    keys.write_text(f"team-logs {INBOUND_KEY}\n")
    store_env, pg_password, drop_db = postgres_store()
    env = {
        **search_server.gateway_env(),
        **store_env,
        "RUST_LOG": "debug",
        "RESPONSES_GATEWAY_AUTH__KEYS_FILE": str(keys),
        "RESPONSES_GATEWAY_UPSTREAM__API_KEY_ENV": "GW_LOGS_UPSTREAM_KEY",
        "GW_LOGS_UPSTREAM_KEY": UPSTREAM_KEY,
        "RESPONSES_GATEWAY_WEB_SEARCH__HTTP__API_KEY_ENV": "GW_LOGS_SEARCH_KEY",
        "GW_LOGS_SEARCH_KEY": SEARCH_KEY,
    }
    secrets = [UPSTREAM_KEY, INBOUND_KEY, WRONG_KEY, SEARCH_KEY] + ([pg_password] if pg_password else [])
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url, tmp_path,
                               extra_env=env, extra_args=["--log-format", "json"])
    # request id → what the log must say of it: the request line's status, and for a turn
    # the Response's id (None: a turn that failed) and status.
    expected: dict[str, dict[str, Any]] = {}
    try:
        client = openai.OpenAI(base_url=gw.api_base, api_key=INBOUND_KEY, max_retries=0, timeout=60)
        raw_http = httpx.Client(base_url=gw.base_url, timeout=60, headers={"Authorization": f"Bearer {INBOUND_KEY}"})

        # A gateway tool round trip (the search backend gets its key, the upstream its own).
        upstream_server.push({"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": "axum"})}]},
                             {"text": ["Found ", "it."]})
        raw = client.responses.with_raw_response.create(model=MODEL, input="search axum", tools=[{"type": "web_search"}],
                                                        extra_headers={"x-request-id": "logs-tool-1"})
        r = raw.parse()
        assert raw.headers["x-request-id"] == "logs-tool-1"
        assert r.status == "completed"
        expected["logs-tool-1"] = {"status": 200, "response_id": r.id, "turn": "completed", "rounds": 2, "tool": True}
        assert search_server.queries and search_server.queries[0]["authorization"] == f"Bearer {SEARCH_KEY}"
        assert upstream_server.requests()[0]["authorization"] == f"Bearer {UPSTREAM_KEY}"

        # A stream: the turn runs in its own task, its line still carries the request's id.
        upstream_server.push({"text": ["streamed ", "answer"]})
        with client.responses.with_streaming_response.create(model=MODEL, input="hi", stream=True,
                                                             extra_headers={"x-request-id": "logs-stream-1"}) as s:
            assert s.headers["x-request-id"] == "logs-stream-1"
            body = s.read().decode()
        done = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")][-1]
        assert done["type"] == "response.completed", done
        expected["logs-stream-1"] = {"status": 200, "response_id": done["response"]["id"], "turn": "completed"}

        # A wrong key: 401 before anything runs, with an id all the same.
        with openai.OpenAI(base_url=gw.api_base, api_key=WRONG_KEY, max_retries=0, timeout=30) as wrong:
            with pytest.raises(openai.AuthenticationError) as e:
                wrong.responses.create(model=MODEL, input="hi", extra_headers={"x-request-id": "logs-401"})
        assert e.value.response.headers["x-request-id"] == "logs-401"
        expected["logs-401"] = {"status": 401}

        # Upstream 500 (several copies: a retry must not turn into a success) → 502.
        upstream_server.reset()
        upstream_server.push([{"http_status": 500, "error_body": '{"error":{"message":"exploded","type":"server_error"}}'}] * 3)
        with pytest.raises(openai.APIStatusError) as e:
            client.responses.create(model=MODEL, input="hi", extra_headers={"x-request-id": "logs-up500"})
        assert e.value.status_code == 502
        expected["logs-up500"] = {"status": 502, "response_id": None, "turn": "failed"}

        # Upstream 401 whose message quotes the upstream key (as some servers do).
        leaky = json.dumps({"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}", "type": "invalid_request_error",
                                      "code": "invalid_api_key"}})
        upstream_server.reset()
        upstream_server.push([{"http_status": 401, "error_body": leaky}] * 3)
        with pytest.raises(openai.APIStatusError) as e:
            client.responses.create(model=MODEL, input="hi", extra_headers={"x-request-id": "logs-up401"})
        assert UPSTREAM_KEY not in e.value.response.text
        expected["logs-up401"] = {"status": e.value.status_code, "response_id": None, "turn": "failed"}

        # A malformed traceparent is ignored; an invalid client id is replaced.
        upstream_server.reset()
        upstream_server.push({"text": ["fine"]})
        resp = raw_http.post("/v1/responses", json={"model": MODEL, "input": "hi"},
                             headers={"traceparent": "00-not-a-trace-01", "x-request-id": "logs-bad-traceparent"})
        assert resp.status_code == 200, resp.text
        expected["logs-bad-traceparent"] = {"status": 200, "response_id": resp.json()["id"], "turn": "completed"}
        resp = raw_http.get("/v1/models", headers={"x-request-id": "has a space"})
        generated = resp.headers["x-request-id"]
        assert UUID_RE.match(generated), generated
        expected[generated] = {"status": resp.status_code}
        resp = raw_http.get("/healthz", headers={"x-request-id": "x" * 129})
        assert UUID_RE.match(resp.headers["x-request-id"]), resp.headers
        client.close()
        raw_http.close()
    finally:
        gw.close()
        gw.proc.stop()
        drop_db()

    text = (tmp_path / "gateway.log").read_text(errors="replace")
    for secret in secrets:
        assert secret not in text, "a credential appeared in the gateway's log"
    lines = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"log line {n} is not JSON: {line[:300]}")
        assert isinstance(obj, dict), line
        assert {"timestamp", "level", "target"} <= obj.keys(), line
        lines.append(obj)
    assert any(obj.get("level") == "DEBUG" for obj in lines), "RUST_LOG=debug was in force"

    by_id: dict[str, list[dict[str, Any]]] = {}
    for obj in lines:
        rid = request_id_of(obj)
        if rid is not None:
            by_id.setdefault(rid, []).append(obj)
    for rid, want in expected.items():
        mine = by_id.get(rid, [])
        requests = [o for o in mine if o.get("message") == "request"]
        assert len(requests) == 1, (rid, mine)
        req = requests[0]
        assert req["request_id"] == rid and req["status"] == want["status"], req
        assert req["method"] in ("GET", "POST") and req["route"].startswith("/v1/") and req["path"].startswith("/v1/"), req
        assert isinstance(req["duration_ms"], (int, float)) and req["duration_ms"] >= 0, req
        turns = [o for o in mine if o.get("message") == "turn"]
        if "turn" not in want:
            assert not turns, (rid, turns)
            continue
        assert len(turns) == 1, (rid, mine)
        turn = turns[0]
        assert turn["status"] == want["turn"], turn
        assert turn["model"] == MODEL, turn
        if want["response_id"] is not None:
            assert turn["response_id"] == want["response_id"], turn
        assert turn["response_id"].startswith("resp_"), turn
        for key in ("duration_ms", "upstream_ms", "tool_ms"):
            assert isinstance(turn[key], (int, float)) and turn[key] >= 0, (key, turn)
        assert turn["upstream_ms"] + turn["tool_ms"] <= turn["duration_ms"] + 0.01, turn
        assert turn["rounds"] == want.get("rounds", 1), turn
        if want.get("tool"):
            assert turn["tool_ms"] > 0, turn
        # Lines logged inside the turn (its span) carry the request's id too.
        assert all(request_id_of(o) == rid for o in mine)
