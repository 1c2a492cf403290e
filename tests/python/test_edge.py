"""The edge with real clients (issue 28): one keep-alive connection of Python's
`http.client` reused across error answers (405, 404, 400, 401, 403, 413, 415, 429), each
followed by a normal request, 50 rounds; a client that leaves a turn stops it; the OpenAI
SDK refused from another origin."""

from __future__ import annotations

import http.client
import json
import socket
import time

import openai
import pytest

import harness

GOOD = "sk-edge-good-0123456789"
LIMITED = "sk-edge-limited-0123456789"
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def edge(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    # Every key may send 1000 requests at once, then one a minute: the limited key spends
    # its burst first, the good key never does.
    env = {
        "RESPONSES_GATEWAY_LIMITS__REQUESTS_PER_MINUTE": "1",
        "RESPONSES_GATEWAY_LIMITS__BURST": "1000",
        "RESPONSES_GATEWAY_SERVER__MAX_BODY_BYTES": str(MAX_BODY),
    }
    gw = harness.start_keyed_gateway(upstream_server.base_url, tmp_path_factory.mktemp("edge"),
                                     [("p", GOOD), ("p", LIMITED)], env)
    yield gw
    gw.close()
    gw.proc.stop()


class Conn:
    """One `http.client` connection; notes the local port of each socket it used (a new
    port is a new connection)."""

    def __init__(self, port: int):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.sockets: list[int] = []

    def send(self, method: str, path: str, key: str, body: bytes | None = None,
             content_type: str = "application/json", headers: dict[str, str] | None = None):
        h = {"Authorization": f"Bearer {key}", **(headers or {})}
        if body is not None:
            h["Content-Type"] = content_type
        self.c.request(method, path, body=body, headers=h)
        port = self.c.sock.getsockname()[1] if self.c.sock is not None else None
        if port is not None and (not self.sockets or self.sockets[-1] != port):
            self.sockets.append(port)
        r = self.c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def close(self) -> None:
        self.c.close()


def shaped(status: int, data: bytes) -> dict:
    body = json.loads(data)
    e = body["error"]
    assert {"message", "type", "param", "code"} <= set(e), body
    return e


def test_one_connection_survives_every_error_answer(edge: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    conn = Conn(edge.port)
    try:
        # Spend the limited key's burst (404s are counted too, and cost nothing).
        for _ in range(1100):
            status, _, _ = conn.send("GET", "/v1/nope", LIMITED)
            if status == 429:
                break
        assert status == 429
        small = json.dumps({"model": "m", "input": "x"}).encode()
        normal = json.dumps({"metadata": {"round": "r"}}).encode()
        closes_expected = 0
        for round_no in range(50):
            big = b" " * (MAX_BODY + 1) if round_no % 10 else b" " * (2 << 20)
            steps = [
                ("PUT", "/v1/responses", GOOD, small, "application/json", 405),
                ("POST", "/v1/nope", GOOD, small, "application/json", 404),
                ("POST", "/v1/responses", GOOD, b'{"model": "m", "input": ', "application/json", 400),
                ("POST", "/v1/conversations", "sk-wrong-key-0123456789", small, "application/json", 401),
                ("POST", "/v1/conversations", GOOD, small, "application/json", 403),
                ("POST", "/v1/conversations", GOOD, big, "application/json", 413),
                ("POST", "/v1/responses", GOOD, small, "text/plain", 415),
                ("POST", "/v1/conversations", LIMITED, small, "application/json", 429),
            ]
            for method, path, key, body, kind, want in steps:
                extra = {"Origin": "https://evil.example"} if want == 403 else None
                status, headers, data = conn.send(method, path, key, body, kind, extra)
                assert status == want, f"round {round_no} {method} {path}: {status} {data[:300]!r}"
                shaped(status, data)
                if headers.get("connection", "").lower() == "close":
                    # Only a body too large to drain closes the connection, and says so.
                    assert want == 413 and len(big) > (1 << 20), (round_no, want, headers)
                    closes_expected += 1
                if want == 429:
                    assert int(headers["retry-after"]) >= 1
                # The normal request that follows, on the same connection.
                status, _, data = conn.send("POST", "/v1/conversations", GOOD, normal)
                assert status == 200, f"round {round_no} after {want}: {status} {data[:300]!r}"
                assert json.loads(data)["object"] == "conversation"
        # A new socket only after each answer that said `Connection: close`.
        assert closes_expected == 5
        assert len(conn.sockets) == 1 + closes_expected, conn.sockets
    finally:
        conn.close()
    assert upstream_server.requests() == [], "no refused request reached the upstream"


def test_a_client_that_leaves_stops_its_turn(gateway: harness.Gateway, upstream: harness.Upstream):
    """A non-streamed `store: true` turn whose client closes its socket: the upstream's
    stream is dropped (a model server stops generating), and the conversation keeps the
    partial answer as `incomplete`. Background mode is how a turn outlives its client."""
    conv = gateway.http.post("/v1/conversations", json={}).json()["id"]
    before = upstream.http.get("/_control/stats").json()["cut_streams"]
    upstream.push({"text": ["word "] * 3000, "token_delay_ms": 10})
    body = json.dumps({"model": "m", "input": "write a lot", "conversation": conv}).encode()
    s = socket.create_connection(("127.0.0.1", gateway.port))
    s.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    deadline = time.monotonic() + 20
    while not upstream.requests() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.requests(), "the turn started"
    time.sleep(0.3)
    s.close()
    deadline = time.monotonic() + 20
    items: list = []
    while time.monotonic() < deadline:
        items = gateway.http.get(f"/v1/conversations/{conv}/items", params={"order": "asc"}).json()["data"]
        if len(items) >= 2:
            break
        time.sleep(0.1)
    assert len(items) >= 2, items
    assert items[1]["role"] == "assistant" and items[1]["status"] == "incomplete", items[1]
    assert upstream.http.get("/_control/stats").json()["cut_streams"] == before + 1


def test_the_sdk_from_another_origin_is_refused(gateway: harness.Gateway, upstream: harness.Upstream):
    """A browser page of another site (its `Origin`) gets 403 before anything runs; the
    page served by the gateway (the playground) is its own origin."""
    other = openai.OpenAI(base_url=gateway.api_base, api_key="test", max_retries=0,
                          default_headers={"Origin": "https://evil.example"})
    with pytest.raises(openai.PermissionDeniedError) as e:
        other.responses.create(model="m", input="x")
    assert e.value.code == "origin_not_allowed"
    assert upstream.requests() == []
    own = openai.OpenAI(base_url=gateway.api_base, api_key="test", max_retries=0,
                        default_headers={"Origin": gateway.base_url})
    upstream.push({"text": ["fine"]})
    assert own.responses.create(model="m", input="x", store=False).output_text == "fine"
