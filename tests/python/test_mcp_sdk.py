"""Gateway-owned MCP tools through the official openai SDK, against a real MCP server (issue 18).

mcp_server.py serves the official `mcp` SDK's `MCPServer` (FastMCP's 2.x name) over streamable
HTTP on 127.0.0.1 (tools `echo` readOnly, `slow`, `fail`, `nested`) and records what it
receives. This module starts it, a garbage HTTP server and a refusing port, and a gateway of its
own whose `[mcp]` settings allow `http://127.0.0.1:` URLs (loopback allowed). A declaration
`{"type": "mcp", "server_label": "demo", "server_url": URL, "require_approval": "never"}` then
gives, per turn: one `mcp_list_tools` item, the model offered `demo__<tool>` functions with the
server's input schemas, an `mcp_call` item per call the gateway executes, the output fenced as
untrusted for the model.

Covered: listing and calls non-streamed and streamed (typed items and events, event order,
contiguous sequence numbers), a tool error (`isError`), a nested schema, server down / garbage / silent /
gone between listing and calling, a call timeout, `allowed_tools` (list and filter forms),
secrets (`headers`, `authorization`) only ever reaching the MCP server, the operator allowlist
(no `[mcp]` config: 400 `tools[0].server_url` before any model call) and declaration 400s.

Until the gateway implements issue 18 these tests FAIL (never skip): a gateway that cannot start
with the `[mcp]` settings or refuses `type: mcp` makes each test that needs it fail with that
reason. `test_fixture_server_lists_its_tools` checks the fixture alone with the `mcp` SDK's own
client and passes regardless.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.responses import (
    ResponseMcpCallArgumentsDeltaEvent,
    ResponseMcpCallArgumentsDoneEvent,
    ResponseMcpCallCompletedEvent,
    ResponseMcpCallFailedEvent,
    ResponseMcpCallInProgressEvent,
    ResponseMcpListToolsCompletedEvent,
    ResponseMcpListToolsFailedEvent,
    ResponseMcpListToolsInProgressEvent,
    ResponseOutputMessage,
)
from openai.types.responses.response_output_item import McpCall, McpListTools

import harness
import validate as V
import mcp_server as M
from test_responses_sdk import MODEL, create, sdk_dict, upstream_function, validate_sdk_events
from test_server_tools import message_text, upstream_tool_turn

pytest.importorskip("mcp", reason="the official MCP SDK (`mcp`, pinned in requirements.txt) is not installed")

needs_gateway_mcp = pytest.mark.gateway_mcp

LABEL = "demo"
FUNCTIONS = {f"{LABEL}__{t}": t for t in M.TOOL_NAMES}  # model-visible name -> MCP tool name
MCP_ENV = {
    "RESPONSES_GATEWAY_MCP__ALLOWED_URLS": '["http://127.0.0.1:"]',
    "RESPONSES_GATEWAY_MCP__ALLOW_PRIVATE": "true",
}
ECHO_ARGS = {"text": "hello mcp"}
NESTED_ARGS = {"config": {"name": "fixture", "limits": {"depth": 3, "labels": ["a", "b"]}, "values": [1, 2, 3, 4]}}
SECRET = "s3cret-7f2c9d41"  # the X-Secret header value (distinctive, so scanning logs finds only it)
TOKEN = "tok-5b8e0a63"  # the declaration's `authorization`


def decl(url: str, **kw: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": LABEL, "server_url": url, "require_approval": "never", **kw}


def call_round(fn: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": fn, "arguments": json.dumps(args)}]}


DONE = {"text": ["done"]}


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


def _register(name: str, proc: harness.Proc | None) -> None:
    """Have conftest's failure hook append this process's log (as for the session servers)."""
    servers = getattr(sys.modules.get("conftest"), "_SERVERS", None)
    if isinstance(servers, dict):
        if proc is None:
            servers.pop(name, None)
        else:
            servers[name] = proc


class McpEnv:
    """The MCP server, the fault fixtures and the MCP-enabled gateway of this module. The gateway
    is reached through `gw` / `client`, which fail the calling test when it did not start."""

    def __init__(self, server: M.McpServerProc, garbage: M.GarbageServer, down: M.DownPort, logs: Path,
                 gw: harness.Gateway | None, gw_error: str | None):
        self.server, self.garbage, self.down, self.logs = server, garbage, down, logs
        self._gw, self._gw_error = gw, gw_error
        self._client: openai.OpenAI | None = None

    @property
    def gw(self) -> harness.Gateway:
        if self._gw is None:
            pytest.fail("the gateway did not start with the [mcp] settings "
                        f"(issue 18 not implemented yet?):\n{self._gw_error}", pytrace=False)
        assert self._gw.proc.alive(), f"the MCP gateway died earlier:\n{self._gw.proc.tail()}"
        return self._gw

    @property
    def client(self) -> openai.OpenAI:
        gw = self.gw
        if self._client is None:
            self._client = openai.OpenAI(base_url=gw.api_base, api_key="test", max_retries=0, timeout=60)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._gw is not None:
            self._gw.close()
            self._gw.proc.stop()


def start_mcp_gateway(upstream: harness.Upstream, logs: Path, **extra: str) -> harness.Gateway:
    return harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream.base_url, logs,
                                 extra_env={**MCP_ENV, **extra}, attempts=1)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory):
    """mcp_server.py as a child process (its URL: `.url`)."""
    srv = M.McpServerProc(tmp_path_factory.mktemp("mcp-server"))
    _register("mcp-server", srv.proc)
    yield srv
    _register("mcp-server", None)
    srv.close()


@contextlib.contextmanager
def mcp_environment(mcp_server: M.McpServerProc, upstream_server: harness.Upstream, logs: Path, name: str, **extra: str):
    """The fault fixtures and an MCP-enabled gateway (with `extra` environment) as an McpEnv;
    a gateway that does not start is reported by every test that needs it."""
    garbage, down = M.GarbageServer(), M.DownPort()
    gw, err = None, None
    try:
        # The gateway's own crate at debug, so the secret scans also cover its debug logging.
        gw = start_mcp_gateway(upstream_server, logs, RUST_LOG="info,responses_gateway=debug", **extra)
    except Exception as e:  # noqa: BLE001  (reported by every test that needs it)
        err = f"{type(e).__name__}: {e}"
    env = McpEnv(mcp_server, garbage, down, logs, gw, err)
    if gw is not None:
        _register(name, gw.proc)
    try:
        yield env
    finally:
        _register(name, None)
        env.close()
        garbage.close()
        down.close()


@pytest.fixture(scope="module")
def mcp_env(mcp_server: M.McpServerProc, upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    with mcp_environment(mcp_server, upstream_server, tmp_path_factory.mktemp("mcp-gateway"), "mcp-gateway") as env:
        yield env


@pytest.fixture
def env(mcp_env: McpEnv, upstream: harness.Upstream) -> McpEnv:
    """The module's MCP environment with the MCP server's record and the upstream reset."""
    mcp_env.server.reset()
    return mcp_env


_DIRECT: dict[str, list[dict[str, Any]]] = {}


def direct_tools(url: str, mode: str = "legacy") -> list[dict[str, Any]]:
    """tools/list through the `mcp` SDK's own client (wire JSON: camelCase, no nulls).
    mode "legacy": the initialize handshake, as the gateway's rmcp client; "auto": the SDK's default."""
    import anyio
    from mcp import Client

    async def go() -> list[dict[str, Any]]:
        async with Client(url, mode=mode) as c:
            res = await c.list_tools()
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in res.tools]

    return anyio.run(go)


def server_schemas(server: M.McpServerProc) -> dict[str, dict[str, Any]]:
    """The fixture server's input schemas by tool name (listed once per module, by the SDK client)."""
    if server.url not in _DIRECT:
        _DIRECT[server.url] = direct_tools(server.url)
        server.reset()
    return {t["name"]: t["inputSchema"] for t in _DIRECT[server.url]}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _refuses_mcp(e: openai.APIStatusError) -> bool:
    body = e.body if isinstance(e.body, dict) else {}
    return body.get("code") == "unsupported_tool_type" or (
        str(body.get("param", "")).endswith(".type") and "mcp" in str(body.get("message", "")))


def mcp_create(client: openai.OpenAI, **kw: Any):
    """`create` (raw JSON validated) that fails the test with a clear reason when the gateway
    refuses `type: mcp` altogether."""
    try:
        return create(client, **kw)
    except openai.BadRequestError as e:
        if _refuses_mcp(e):
            pytest.fail(f"the gateway refuses `type: mcp` (issue 18 not implemented yet): {e.body}", pytrace=False)
        raise


def mcp_stream(client: openai.OpenAI, **kw: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """client.responses.create(stream=True): the SDK's typed events and their validated dicts."""
    try:
        stream = client.responses.create(stream=True, **kw)
    except openai.BadRequestError as e:
        if _refuses_mcp(e):
            pytest.fail(f"the gateway refuses `type: mcp` (issue 18 not implemented yet): {e.body}", pytrace=False)
        raise
    with stream:
        events = list(stream)
    return events, validate_sdk_events(events)


def raw_stream(env: McpEnv, body: dict[str, Any]) -> harness.RawStream:
    raw = env.gw.stream_raw(body)
    if raw.status_code == 400 and '"unsupported_tool_type"' in raw.text:
        pytest.fail(f"the gateway refuses `type: mcp` (issue 18 not implemented yet): {raw.text}", pytrace=False)
    assert raw.status_code == 200, f"streaming request: HTTP {raw.status_code}: {raw.text[:2000]}"
    assert not raw.problems, raw.problems
    V.validate_stream(raw.events)
    return raw


def expect_400(client: openai.OpenAI, param: str, **kw: Any) -> dict[str, Any]:
    with pytest.raises(openai.BadRequestError) as ei:
        client.responses.create(**kw)
    body = ei.value.body if isinstance(ei.value.body, dict) else {}
    assert ei.value.status_code == 400
    assert body.get("param") == param, f"400 should name {param!r}: {body}"
    assert body.get("type") == "invalid_request_error", body
    return body


def offered_functions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The functions an upstream chat request offers the model, by name."""
    return {t["function"]["name"]: t["function"] for t in body.get("tools") or [] if t.get("type") == "function"}


def tool_result_for_model(body: dict[str, Any], fn: str) -> str:
    """The `tool` message answering the one call of `fn` in an upstream request."""
    _, calls, tools = upstream_tool_turn(body["messages"])
    ids = [c["id"] for c in calls if c["function"]["name"] == fn]
    assert len(ids) == 1, harness.dumps(calls)
    (msg,) = [t for t in tools if t["tool_call_id"] == ids[0]]
    assert msg["role"] == "tool"
    return harness.message_text(msg) or ""


def assert_list_item(item: Any, names: set[str]) -> dict[str, Any]:
    """A typed, successful McpListTools of `demo` listing exactly `names` (schemas as the server's)."""
    assert isinstance(item, McpListTools), f"{type(item).__name__}: {sdk_dict(item)}"
    assert item.server_label == LABEL and item.error is None, sdk_dict(item)
    assert item.id, sdk_dict(item)
    by_name = {t.name: t for t in item.tools}
    assert set(by_name) == names and len(item.tools) == len(names), sdk_dict(item)
    return {n: sdk_dict(t) for n, t in by_name.items()}


def assert_failed_list_item(item: Any) -> None:
    assert isinstance(item, McpListTools), f"{type(item).__name__}: {sdk_dict(item)}"
    assert item.server_label == LABEL and item.tools == [], sdk_dict(item)
    assert isinstance(item.error, str) and item.error.strip(), f"a failed listing carries an error: {sdk_dict(item)}"


def the_item(events: list[dict[str, Any]], type_: str) -> int:
    """output_index of the one item of `type_` in a stream."""
    added = [e for e in events if e["type"] == "response.output_item.added" and e["item"]["type"] == type_]
    assert len(added) == 1, [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    return added[0]["output_index"]


def item_events(events: list[dict[str, Any]], oi: int) -> list[dict[str, Any]]:
    return [e for e in events if e.get("output_index") == oi]


def assert_no_secret(what: str, text: str) -> None:
    for s in (SECRET, TOKEN):
        assert s not in text, f"{s!r} leaked into {what}"


# ---------------------------------------------------------------------------
# the fixture itself (passes without the gateway)
# ---------------------------------------------------------------------------


def test_fixture_server_lists_its_tools(mcp_server: M.McpServerProc):
    """The MCP fixture, through the `mcp` SDK's own client, in both protocol eras."""
    import anyio
    from mcp import Client

    for mode in ("legacy", "auto"):
        tools = {t["name"]: t for t in direct_tools(mcp_server.url, mode)}
        assert set(tools) == set(M.TOOL_NAMES), tools
        assert tools["echo"]["annotations"] == {"readOnlyHint": True}
        for t in tools.values():
            assert t["inputSchema"]["type"] == "object" and t["description"], t
        nested = tools["nested"]["inputSchema"]
        assert nested["required"] == ["config"] and {"Config", "Limits"} <= set(nested["$defs"]), nested
        assert nested["$defs"]["Config"]["properties"]["values"]["items"] == {"type": "integer"}

    async def calls() -> dict[str, Any]:
        async with Client(mcp_server.url, mode="legacy") as c:
            return {
                "echo": await c.call_tool("echo", ECHO_ARGS),
                "fail": await c.call_tool("fail", {"reason": "nope"}),
                "nested": await c.call_tool("nested", NESTED_ARGS),
                "slow": await c.call_tool("slow", {"seconds": 0.05}),
            }

    mcp_server.reset()
    r = anyio.run(calls)
    assert not r["echo"].is_error and r["echo"].content[0].text == "hello mcp"
    assert r["fail"].is_error and "nope" in r["fail"].content[0].text
    assert json.loads(r["nested"].content[0].text) == {"name": "fixture", "depth": 3, "labels": ["a", "b"], "count": 4, "sum": 10}
    assert r["slow"].content[0].text == "slept"
    # The recorder saw the handshake and the calls.
    rpcs = [q["rpc"] for q in mcp_server.requests() if q["rpc"]]
    assert rpcs[:2] == ["initialize", "notifications/initialized"], rpcs
    assert rpcs.count("tools/call") == 4, rpcs


def test_fixture_fault_servers():
    """The garbage server answers 200 with non-MCP bytes; the down port refuses connections."""
    import httpx

    garbage, down = M.GarbageServer(), M.DownPort()
    try:
        for kind in M.GARBAGE:
            r = httpx.post(garbage.url(kind), json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}, timeout=5)
            assert r.status_code == 200 and b"\x00" in r.content
        with pytest.raises(httpx.ConnectError):
            httpx.post(down.url, json={}, timeout=5)
    finally:
        garbage.close()
        down.close()


# ---------------------------------------------------------------------------
# the operator's allowlist
# ---------------------------------------------------------------------------


def test_without_mcp_config_a_server_url_is_refused_before_the_model(client, upstream, mcp_server):
    """The session gateway has no [mcp] settings: no request-given MCP server is allowed."""
    mcp_server.reset()
    body = expect_400(client, "tools[0].server_url", model=MODEL, input="hi", tools=[decl(mcp_server.url)])
    assert body.get("code") != "unsupported_tool_type", f"the gateway refuses `type: mcp` altogether: {body}"
    assert upstream.requests() == [], "refused before any model call"
    assert mcp_server.requests() == [], "refused before connecting"


@needs_gateway_mcp
def test_url_outside_the_allowlist_is_refused(env: McpEnv, upstream):
    """allowed_urls is ["http://127.0.0.1:"]: the same server named `localhost` is not allowed."""
    port = env.server.url.split(":")[2].split("/")[0]
    expect_400(env.client, "tools[0].server_url", model=MODEL, input="hi", tools=[decl(f"http://localhost:{port}/mcp")])
    assert upstream.requests() == [] and env.server.requests() == []


# ---------------------------------------------------------------------------
# listing and calling
# ---------------------------------------------------------------------------


@needs_gateway_mcp
def test_model_is_offered_prefixed_functions_with_the_server_schemas(env: McpEnv, upstream):
    schemas = server_schemas(env.server)
    upstream.push({"text": ["nothing to call"]})
    resp, body = mcp_create(env.client, model=MODEL, input="What tools do you have?", tools=[decl(env.server.url)])
    assert resp.status == "completed", harness.dumps(body)

    (first,) = upstream.chat_bodies()
    offered = offered_functions(first)
    assert set(offered) == set(FUNCTIONS), harness.dumps(first.get("tools"))
    for fn, tool in FUNCTIONS.items():
        assert upstream_function(first, fn)["parameters"] == schemas[tool], (fn, harness.dumps(offered[fn]))
    # Listed once for the turn, nothing called.
    assert len(env.server.rpc("tools/list")) == 1
    assert env.server.rpc("tools/call") == []
    assert [o["type"] for o in body["output"]] == ["mcp_list_tools", "message"], harness.dumps(body["output"])


@needs_gateway_mcp
def test_echo_call_non_streamed(env: McpEnv, upstream):
    schemas = server_schemas(env.server)
    upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
    resp, body = mcp_create(env.client, model=MODEL, input="Echo 'hello mcp'.", tools=[decl(env.server.url)], store=False)

    assert resp.status == "completed", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["mcp_list_tools", "mcp_call", "message"], harness.dumps(body["output"])
    listing, call, msg = resp.output

    tools = assert_list_item(listing, set(M.TOOL_NAMES))
    for name, t in tools.items():
        assert t["input_schema"] == schemas[name], (name, t)
    assert isinstance(tools["echo"]["annotations"], dict) and tools["echo"]["annotations"].get("readOnlyHint") is True, tools["echo"]
    assert tools["echo"]["description"] == "Return the given text unchanged."

    assert isinstance(call, McpCall), sdk_dict(call)
    assert (call.server_label, call.name, call.status) == (LABEL, "echo", "completed"), sdk_dict(call)
    assert json.loads(call.arguments) == ECHO_ARGS
    assert call.output == "hello mcp" and call.error is None, sdk_dict(call)
    assert call.id and call.id != listing.id

    assert isinstance(msg, ResponseOutputMessage) and message_text(msg) == "done" and resp.output_text == "done"

    # The model's second round reads the output as untrusted data.
    first, second = upstream.chat_bodies()
    assert set(offered_functions(first)) == set(FUNCTIONS)
    result = tool_result_for_model(second, "demo__echo")
    assert "hello mcp" in result and "untrusted" in result.lower(), result

    # The gateway really asked the server: one listing, one call with the model's arguments.
    assert len(env.server.rpc("tools/list")) == 1
    (rpc,) = env.server.rpc("tools/call")
    assert rpc["params"]["name"] == "echo" and rpc["params"]["arguments"] == ECHO_ARGS, rpc


_MCP_EVENT_CLASSES = {
    "response.mcp_list_tools.in_progress": ResponseMcpListToolsInProgressEvent,
    "response.mcp_list_tools.completed": ResponseMcpListToolsCompletedEvent,
    "response.mcp_list_tools.failed": ResponseMcpListToolsFailedEvent,
    "response.mcp_call.in_progress": ResponseMcpCallInProgressEvent,
    "response.mcp_call_arguments.delta": ResponseMcpCallArgumentsDeltaEvent,
    "response.mcp_call_arguments.done": ResponseMcpCallArgumentsDoneEvent,
    "response.mcp_call.completed": ResponseMcpCallCompletedEvent,
    "response.mcp_call.failed": ResponseMcpCallFailedEvent,
}


@needs_gateway_mcp
def test_echo_call_streamed(env: McpEnv, upstream):
    upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
    events, ev = mcp_stream(env.client, model=MODEL, input="Echo 'hello mcp'.", tools=[decl(env.server.url)], store=False)

    assert [e["sequence_number"] for e in ev] == list(range(len(ev))), "sequence_number contiguous from 0"
    assert ev[-1]["type"] == "response.completed", [e["type"] for e in ev]
    for typed in events:
        cls = _MCP_EVENT_CLASSES.get(typed.type)
        if cls is not None:
            assert isinstance(typed, cls), f"{typed.type}: {type(typed).__name__}"

    li, ci = the_item(ev, "mcp_list_tools"), the_item(ev, "mcp_call")
    mi = the_item(ev, "message")
    assert li < ci < mi

    mine = item_events(ev, li)
    assert [e["type"] for e in mine] == [
        "response.output_item.added", "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed", "response.output_item.done",
    ], [e["type"] for e in mine]
    added, done = mine[0]["item"], mine[-1]["item"]
    assert added["type"] == "mcp_list_tools" and added["server_label"] == LABEL and added["tools"] == [], added
    assert {t["name"] for t in done["tools"]} == set(M.TOOL_NAMES) and done.get("error") is None, done
    assert all("input_schema" in t for t in done["tools"]), done

    mine = item_events(ev, ci)
    types = [e["type"] for e in mine]
    n_deltas = types.count("response.mcp_call_arguments.delta")
    assert n_deltas >= 1 and types == [
        "response.output_item.added", "response.mcp_call.in_progress",
        *["response.mcp_call_arguments.delta"] * n_deltas,
        "response.mcp_call_arguments.done", "response.mcp_call.completed", "response.output_item.done",
    ], types
    added, done = mine[0]["item"], mine[-1]["item"]
    assert (added["type"], added["server_label"], added["name"], added["status"], added["arguments"]) == (
        "mcp_call", LABEL, "echo", "in_progress", ""), added
    assert not added.get("output"), added
    deltas = "".join(e["delta"] for e in mine if e["type"] == "response.mcp_call_arguments.delta")
    args_done = next(e for e in mine if e["type"] == "response.mcp_call_arguments.done")
    assert deltas == args_done["arguments"] == done["arguments"] and json.loads(deltas) == ECHO_ARGS
    assert (done["status"], done["output"], done.get("error")) == ("completed", "hello mcp", None), done
    # The list item ended before the call began.
    assert ev.index(item_events(ev, li)[-1]) < ev.index(mine[0])

    final = ev[-1]["response"]
    assert [o["type"] for o in final["output"]] == ["mcp_list_tools", "mcp_call", "message"]


@needs_gateway_mcp
def test_nested_schema_call(env: McpEnv, upstream):
    upstream.push(call_round("demo__nested", NESTED_ARGS), DONE)
    resp, body = mcp_create(env.client, model=MODEL, input="Summarize.", tools=[decl(env.server.url)], store=False)
    assert resp.status == "completed", harness.dumps(body)
    call = resp.output[1]
    assert isinstance(call, McpCall) and (call.name, call.status) == ("nested", "completed"), sdk_dict(call)
    assert json.loads(call.arguments) == NESTED_ARGS
    assert json.loads(call.output) == {"name": "fixture", "depth": 3, "labels": ["a", "b"], "count": 4, "sum": 10}
    (rpc,) = env.server.rpc("tools/call")
    assert rpc["params"]["arguments"] == NESTED_ARGS


@needs_gateway_mcp
def test_tool_error_is_a_failed_call_the_model_reads(env: McpEnv, upstream):
    upstream.push(call_round("demo__fail", {"reason": "nope"}), DONE)
    resp, body = mcp_create(env.client, model=MODEL, input="Try it.", tools=[decl(env.server.url)], store=False)

    assert resp.status == "completed" and resp.output_text == "done", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["mcp_list_tools", "mcp_call", "message"], harness.dumps(body["output"])
    call = resp.output[1]
    assert isinstance(call, McpCall), sdk_dict(call)
    assert (call.name, call.status, call.output) == ("fail", "failed", None), sdk_dict(call)
    err = body["output"][1]["error"]
    assert isinstance(err, dict) and err.get("type") == "mcp_tool_execution_error", body["output"][1]
    assert "nope" in json.dumps(err.get("content")), err
    assert call.error is not None and call.error.type == "mcp_tool_execution_error"

    _, second = upstream.chat_bodies()
    assert "nope" in tool_result_for_model(second, "demo__fail")

    # Streamed: .failed, never .completed, for that call.
    upstream.push(call_round("demo__fail", {"reason": "nope"}), DONE)
    raw = raw_stream(env, {"model": MODEL, "input": "Try it.", "tools": [decl(env.server.url)], "store": False})
    types = [e["type"] for e in item_events(raw.events, the_item(raw.events, "mcp_call"))]
    assert "response.mcp_call.failed" in types and "response.mcp_call.completed" not in types, types
    assert raw.terminal()["type"] == "response.completed"


# ---------------------------------------------------------------------------
# faults: a server down, answering garbage, going away, too slow
# ---------------------------------------------------------------------------


@needs_gateway_mcp
@pytest.mark.parametrize("kind", ["down", "garbage-html", "garbage-json", "garbage-sse"])
def test_unusable_server_fails_the_listing_not_the_turn(env: McpEnv, upstream, kind: str):
    url = env.down.url if kind == "down" else env.garbage.url(kind.split("-", 1)[1])
    hits_before = len(env.garbage.hits)
    upstream.push({"text": ["fine without tools"]})
    resp, body = mcp_create(env.client, model=MODEL, input="hi", tools=[decl(url)], store=False)

    assert resp.status == "completed" and resp.output_text == "fine without tools", harness.dumps(body)
    assert [o["type"] for o in body["output"]] == ["mcp_list_tools", "message"], harness.dumps(body["output"])
    assert_failed_list_item(resp.output[0])
    (first,) = upstream.chat_bodies()
    assert not [f for f in offered_functions(first) if f.startswith(f"{LABEL}__")], harness.dumps(first.get("tools"))
    if kind != "down":
        assert len(env.garbage.hits) > hits_before, "the gateway did contact the garbage server"

    upstream.push({"text": ["fine without tools"]})
    raw = raw_stream(env, {"model": MODEL, "input": "hi", "tools": [decl(url)], "store": False})
    types = [e["type"] for e in item_events(raw.events, the_item(raw.events, "mcp_list_tools"))]
    assert types == [
        "response.output_item.added", "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.failed", "response.output_item.done",
    ], types
    assert raw.terminal()["type"] == "response.completed"
    done = item_events(raw.events, the_item(raw.events, "mcp_list_tools"))[-1]["item"]
    assert done["tools"] == [] and isinstance(done.get("error"), str) and done["error"], done


@needs_gateway_mcp
def test_server_gone_between_listing_and_calling(env: McpEnv, upstream, tmp_path: Path):
    """A server that exits right after answering tools/list: the call fails, the turn completes."""
    srv = M.McpServerProc(tmp_path, name="mcp-server-gone")
    try:
        srv.exit_after_list()
        upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
        resp, body = mcp_create(env.client, model=MODEL, input="Echo.", tools=[decl(srv.url)], store=False)
        assert resp.status == "completed" and resp.output_text == "done", harness.dumps(body)
        assert [o["type"] for o in body["output"]] == ["mcp_list_tools", "mcp_call", "message"], harness.dumps(body["output"])
        assert_list_item(resp.output[0], set(M.TOOL_NAMES))
        call = resp.output[1]
        assert isinstance(call, McpCall) and (call.status, call.output) == ("failed", None), sdk_dict(call)
        assert call.error is not None, sdk_dict(call)
        assert not srv.proc.alive(), "the fixture server should have exited at the call"
    finally:
        srv.close()


@contextlib.contextmanager
def short_timeouts(env: McpEnv, upstream: harness.Upstream, logs: Path):
    """A client on a gateway of its own whose [mcp] connect and call timeouts are 500 ms."""
    env.gw  # noqa: B018  (fails here when the module's MCP gateway did not start)
    try:
        gw = start_mcp_gateway(upstream, logs, RESPONSES_GATEWAY_MCP__CALL_TIMEOUT_MS="500",
                               RESPONSES_GATEWAY_MCP__CONNECT_TIMEOUT_MS="500")
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the gateway did not start with [mcp] timeouts: {e}", pytrace=False)
    _register("mcp-gateway-timeout", gw.proc)
    client = openai.OpenAI(base_url=gw.api_base, api_key="test", max_retries=0, timeout=60)
    try:
        yield client, gw
    finally:
        _register("mcp-gateway-timeout", None)
        client.close()
        gw.close()
        gw.proc.stop()


@needs_gateway_mcp
def test_call_timeout_is_a_failed_call(env: McpEnv, upstream, tmp_path: Path):
    """[mcp] call_timeout_ms = 500 and a tool sleeping 5 s: the call fails, the turn goes on."""
    with short_timeouts(env, upstream, tmp_path) as (client, _):
        upstream.push(call_round("demo__slow", {"seconds": 5}), DONE)
        resp, body = mcp_create(client, model=MODEL, input="Be slow.", tools=[decl(env.server.url)], store=False)
        assert resp.status == "completed" and resp.output_text == "done", harness.dumps(body)
        call = resp.output[1]
        assert isinstance(call, McpCall) and (call.name, call.status, call.output) == ("slow", "failed", None), sdk_dict(call)
        assert call.error is not None and "500 ms" in json.dumps(sdk_dict(call.error)), sdk_dict(call)
        _, second = upstream.chat_bodies()
        assert tool_result_for_model(second, "demo__slow").strip(), "the model is told the call failed"


@needs_gateway_mcp
def test_a_server_that_never_answers_fails_its_listing(env: McpEnv, upstream, tmp_path: Path):
    """A server that takes the connection but never answers: the listing fails after the
    connect timeout (500 ms here), streamed and not; the turn goes on without its tools."""
    silent = M.SilentServer()
    try:
        with short_timeouts(env, upstream, tmp_path) as (client, gw):
            upstream.push({"text": ["fine without tools"]})
            resp, body = mcp_create(client, model=MODEL, input="hi", tools=[decl(silent.url)], store=False)
            assert resp.status == "completed" and resp.output_text == "fine without tools", harness.dumps(body)
            assert_failed_list_item(resp.output[0])
            assert "500 ms" in resp.output[0].error, resp.output[0].error
            upstream.push({"text": ["fine without tools"]})
            raw = gw.stream_raw({"model": MODEL, "input": "hi", "tools": [decl(silent.url)], "store": False})
            assert raw.status_code == 200 and not raw.problems, raw.text[:2000]
            kinds = [e["type"] for e in raw.events]
            assert "response.mcp_list_tools.failed" in kinds and kinds[-1] == "response.completed", kinds
    finally:
        silent.close()


# ---------------------------------------------------------------------------
# allowed_tools
# ---------------------------------------------------------------------------


@needs_gateway_mcp
@pytest.mark.parametrize("allowed, names", [
    (["echo"], {"echo"}),
    ({"tool_names": ["echo", "fail"]}, {"echo", "fail"}),
    ({"read_only": True}, {"echo"}),  # echo is the only tool annotated readOnlyHint
], ids=["list", "tool_names", "read_only"])
def test_allowed_tools_limit_what_is_listed_and_offered(env: McpEnv, upstream, allowed: Any, names: set[str]):
    upstream.push({"text": ["ok"]})
    resp, body = mcp_create(env.client, model=MODEL, input="hi", tools=[decl(env.server.url, allowed_tools=allowed)], store=False)
    assert resp.status == "completed", harness.dumps(body)
    assert_list_item(resp.output[0], names)
    (first,) = upstream.chat_bodies()
    assert set(offered_functions(first)) == {f"{LABEL}__{n}" for n in names}, harness.dumps(first.get("tools"))


# ---------------------------------------------------------------------------
# secrets
# ---------------------------------------------------------------------------


@needs_gateway_mcp
def test_headers_and_authorization_reach_only_the_server(env: McpEnv, upstream):
    secret_decl = decl(env.server.url, headers={"X-Secret": SECRET}, authorization=TOKEN)
    upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
    resp, body = mcp_create(env.client, model=MODEL, input="Echo.", tools=[secret_decl], store=True)
    assert resp.status == "completed" and resp.output[1].status == "completed", harness.dumps(body)

    # The echo leaves them out.
    (echoed,) = body["tools"]
    assert echoed["type"] == "mcp" and echoed["server_label"] == LABEL, echoed
    assert "headers" not in echoed and "authorization" not in echoed, echoed
    assert_no_secret("the response", json.dumps(body))

    # The MCP server got them on every request.
    reqs = [r for r in env.server.requests() if r["method"] == "POST"]
    assert any(r["rpc"] == "tools/call" for r in reqs), reqs
    for r in reqs:
        assert r["headers"].get("x-secret") == SECRET, (r["rpc"], r["headers"])
        assert r["headers"].get("authorization") == f"Bearer {TOKEN}", (r["rpc"], r["headers"])

    # Nowhere else: the model, the store, the stream, the logs, the gateway's files.
    assert_no_secret("the upstream requests", json.dumps(upstream.requests()))
    stored = env.gw.http.get(f"/v1/responses/{resp.id}")
    assert stored.status_code == 200, stored.text
    assert "headers" not in stored.json()["tools"][0] and "authorization" not in stored.json()["tools"][0]
    assert_no_secret("the stored response", stored.text)
    items = env.gw.http.get(f"/v1/responses/{resp.id}/input_items")
    assert_no_secret("the stored input items", items.text)

    upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
    raw = raw_stream(env, {"model": MODEL, "input": "Echo.", "tools": [secret_decl], "store": False})
    assert_no_secret("the stream", raw.text)

    assert_no_secret("the gateway log", env.gw.proc.log_path.read_text("utf-8", "replace"))
    for f in (env.logs / "gateway-home").rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in (SECRET, TOKEN):
                assert s.encode() not in data, f"{s!r} leaked into {f}"


# ---------------------------------------------------------------------------
# declaration validation
# ---------------------------------------------------------------------------


@needs_gateway_mcp
@pytest.mark.parametrize("tools, param", [
    (lambda url: [{"type": "mcp", "server_url": url, "require_approval": "never"}], "tools[0].server_label"),
    (lambda url: [{"type": "mcp", "server_label": LABEL, "require_approval": "never"}], "tools[0].server_url"),
    (lambda url: [decl(url), decl(url)], "tools[1].server_label"),
    (lambda url: [decl(url, require_approval="sometimes")], "tools[0].require_approval"),
    (lambda url: [decl(url, allowed_tools="echo")], "tools[0].allowed_tools"),
    (lambda url: [decl(url, allowed_tools=5)], "tools[0].allowed_tools"),
], ids=["no-server_label", "no-server_url", "duplicate-server_label", "bad-require_approval",
        "allowed_tools-string", "allowed_tools-number"])
def test_bad_declaration_is_a_400_naming_the_field(env: McpEnv, upstream, tools, param: str):
    body = expect_400(env.client, param, model=MODEL, input="hi", tools=tools(env.server.url))
    assert body.get("code") != "unsupported_tool_type", f"the gateway refuses `type: mcp` altogether: {body}"
    assert upstream.requests() == [], "refused before any model call"
    assert env.server.requests() == [], "refused before connecting"


@needs_gateway_mcp
def test_background_with_mcp_credentials_is_refused(env: McpEnv, upstream):
    """A background request is stored for its worker: one whose MCP tool carries headers or an
    authorization is refused (400 naming the tool) instead of storing them."""
    d = {**decl(env.server.url), "authorization": "tok-background-1"}
    expect_400(env.client, "tools[0]", model=MODEL, input="x", tools=[d], background=True)
    assert not upstream.requests()
