"""MCP approvals, continuations, `tool_choice` and operator servers through the official openai
SDK, against the real MCP server of mcp_server.py (issue 18 "Approvals", "Listing",
"Security", operator servers).

A declaration without `require_approval` needs approval for every call, as at OpenAI: the turn
ends `completed` with an `mcp_approval_request`, nothing runs; the client answers with an
`mcp_approval_response` through `previous_response_id` or after the replayed output items.
Approved: the call runs once (an `mcp_call` with `approval_request_id`) and the history's
listing is reused (no second `tools/list`); denied: nothing runs and the model is told. The
module's gateway also configures the same server as the operator's `ops`, with a bearer token
from an environment variable that must reach the server and nothing else.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import ResponseOutputMessage
from openai.types.responses.response_output_item import McpApprovalRequest, McpCall, McpListTools

import harness
import mcp_server as M
from test_mcp_sdk import (  # noqa: F401  (fixtures)
    DONE, ECHO_ARGS, LABEL, MODEL, McpEnv, call_round, expect_400, mcp_create, mcp_environment, mcp_server,
    mcp_stream, sdk_dict, tool_result_for_model,
)

pytest.importorskip("mcp", reason="the official MCP SDK (`mcp`, pinned in requirements.txt) is not installed")

OPS_TOKEN = "ops-tok-91d3e7c2"  # the operator's bearer token, from OPS_MCP_TOKEN


def approval_decl(url: str, **kw: Any) -> dict[str, Any]:
    """A declaration without require_approval: "always", as at OpenAI."""
    return {"type": "mcp", "server_label": LABEL, "server_url": url, **kw}


@pytest.fixture(scope="module")
def approvals_env(mcp_server: M.McpServerProc, upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    ops = {
        "RESPONSES_GATEWAY_MCP__SERVERS__OPS__URL": mcp_server.url,
        "RESPONSES_GATEWAY_MCP__SERVERS__OPS__AUTHORIZATION_ENV": "OPS_MCP_TOKEN",
        "OPS_MCP_TOKEN": OPS_TOKEN,
    }
    logs = tmp_path_factory.mktemp("mcp-approvals-gateway")
    with mcp_environment(mcp_server, upstream_server, logs, "mcp-approvals-gateway", **ops) as env:
        yield env


@pytest.fixture
def env(approvals_env: McpEnv, upstream: harness.Upstream) -> McpEnv:
    approvals_env.server.reset()
    return approvals_env


def replayable(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A response's output items as a client replays them (store: false)."""
    return [dict(i) for i in body["output"]]


def test_approval_round_trip_through_previous_response_id(env: McpEnv, upstream):
    tools = [approval_decl(env.server.url)]
    upstream.push(call_round("demo__echo", ECHO_ARGS))
    first, body = mcp_create(env.client, model=MODEL, input="Echo 'hello mcp'.", tools=tools)
    assert first.status == "completed", harness.dumps(body)
    listing, request = first.output
    assert isinstance(listing, McpListTools) and listing.error is None, sdk_dict(listing)
    assert isinstance(request, McpApprovalRequest), sdk_dict(request)
    assert request.id.startswith("mcpr_") and (request.server_label, request.name) == (LABEL, "echo"), sdk_dict(request)
    assert json.loads(request.arguments) == ECHO_ARGS
    assert env.server.rpc("tools/call") == [], "nothing runs before the approval"

    upstream.push(DONE)
    answer = [{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}]
    second, body = mcp_create(env.client, model=MODEL, previous_response_id=first.id, input=answer, tools=tools)
    assert [o["type"] for o in body["output"]] == ["mcp_call", "message"], harness.dumps(body["output"])
    call, msg = second.output
    assert isinstance(call, McpCall) and call.approval_request_id == request.id, sdk_dict(call)
    assert (call.name, call.status, call.output) == ("echo", "completed", "hello mcp"), sdk_dict(call)
    assert isinstance(msg, ResponseOutputMessage)
    (rpc,) = env.server.rpc("tools/call")
    assert rpc["params"]["arguments"] == ECHO_ARGS
    assert len(env.server.rpc("tools/list")) == 1, "the continuation reused the listing"
    assert "hello mcp" in tool_result_for_model(upstream.chat_bodies()[1], "demo__echo")

    # Answered already (a retry from the same response, or on the turn that ran it), or never
    # asked: 400, nothing runs again.
    expect_400(env.client, "input[0].approval_request_id", model=MODEL, previous_response_id=first.id, input=answer, tools=tools)
    expect_400(env.client, "input[0].approval_request_id", model=MODEL, previous_response_id=second.id, input=answer, tools=tools)
    unknown = [{"type": "mcp_approval_response", "approval_request_id": "mcpr_unknown", "approve": True}]
    expect_400(env.client, "input[0].approval_request_id", model=MODEL, previous_response_id=first.id, input=unknown, tools=tools)
    assert len(env.server.rpc("tools/call")) == 1


def test_approval_streamed_with_replayed_items(env: McpEnv, upstream):
    tools = [approval_decl(env.server.url)]
    user = {"role": "user", "content": "Echo 'hello mcp'."}
    upstream.push(call_round("demo__echo", ECHO_ARGS))
    events, ev = mcp_stream(env.client, model=MODEL, input=[user], tools=tools, store=False)
    assert ev[-1]["type"] == "response.completed", [e["type"] for e in ev]
    done = ev[-1]["response"]
    assert [o["type"] for o in done["output"]] == ["mcp_list_tools", "mcp_approval_request"]
    req_events = [e for e in ev if e.get("item", {}).get("type") == "mcp_approval_request"]
    assert [e["type"] for e in req_events] == ["response.output_item.added", "response.output_item.done"], "no sub-events"
    request = events[-1].response.output[1]
    assert isinstance(request, McpApprovalRequest), sdk_dict(request)

    upstream.push(DONE)
    answer = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
    _, ev2 = mcp_stream(env.client, model=MODEL, input=[user, *replayable(done), answer], tools=tools, store=False)
    kinds = [e["type"] for e in ev2]
    assert "response.mcp_list_tools.in_progress" not in kinds, "the replayed listing is reused"
    assert kinds.index("response.mcp_call.in_progress") < kinds.index("response.mcp_call.completed") < kinds.index("response.output_text.delta")
    final = ev2[-1]["response"]
    call = next(o for o in final["output"] if o["type"] == "mcp_call")
    assert call["approval_request_id"] == request.id and call["output"] == "hello mcp", call
    assert len(env.server.rpc("tools/call")) == 1

    # The whole history replayed again, now with the call that ran: it does not run again.
    upstream.push(DONE)
    follow = {"role": "user", "content": "thanks"}
    again, _ = mcp_create(env.client, model=MODEL, input=[user, *replayable(done), answer, *replayable(final), follow], tools=tools, store=False)
    assert [o.type for o in again.output] == ["message"]
    assert len(env.server.rpc("tools/call")) == 1, "a replayed approved call is not run twice"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_denied_call_never_runs_and_the_model_is_told(env: McpEnv, upstream, stream: bool):
    tools = [approval_decl(env.server.url)]
    upstream.push(call_round("demo__echo", ECHO_ARGS))
    first, _ = mcp_create(env.client, model=MODEL, input="Echo.", tools=tools)
    request = first.output[1]
    upstream.push({"text": ["Understood, not echoing."]})
    answer = [{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": False, "reason": "not today"}]
    if stream:
        _, ev = mcp_stream(env.client, model=MODEL, previous_response_id=first.id, input=answer, tools=tools)
        output = ev[-1]["response"]["output"]
    else:
        _, body = mcp_create(env.client, model=MODEL, previous_response_id=first.id, input=answer, tools=tools)
        output = body["output"]
    assert [o["type"] for o in output] == ["message"], output
    assert env.server.rpc("tools/call") == []
    told = tool_result_for_model(upstream.chat_bodies()[1], "demo__echo")
    assert "not approve" in told and "not today" in told, told


def test_approved_call_on_a_server_gone_is_a_failed_item(env: McpEnv, upstream):
    """The approval reuses the listing, so the connection is made at the call: the server is
    gone by then (its URL now refuses connections): a failed mcp_call, the turn completes."""
    tools = [approval_decl(env.down.url)]
    listing = {"type": "mcp_list_tools", "id": "mcpl_replayed", "server_label": LABEL, "error": None,
               "tools": [{"name": "echo", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
    request = {"type": "mcp_approval_request", "id": "mcpr_replayed", "server_label": LABEL, "name": "echo",
               "arguments": json.dumps(ECHO_ARGS)}
    answer = {"type": "mcp_approval_response", "approval_request_id": "mcpr_replayed", "approve": True}
    upstream.push(DONE)
    resp, body = mcp_create(env.client, model=MODEL, input=[{"role": "user", "content": "Echo."}, listing, request, answer],
                            tools=tools, store=False)
    assert resp.status == "completed", harness.dumps(body)
    call = resp.output[0]
    assert isinstance(call, McpCall) and call.status == "failed" and call.approval_request_id == "mcpr_replayed", sdk_dict(call)
    assert call.error is not None and call.output is None
    assert tool_result_for_model(upstream.chat_bodies()[0], "demo__echo").startswith("error:")


def test_tool_choice_forces_an_mcp_tool(env: McpEnv, upstream):
    decl = approval_decl(env.server.url, require_approval="never")
    upstream.push(call_round("demo__echo", ECHO_ARGS), DONE)
    choice = {"type": "mcp", "server_label": LABEL, "name": "echo"}
    resp, body = mcp_create(env.client, model=MODEL, input="Echo.", tools=[decl], tool_choice=choice)
    assert body["tool_choice"] == choice
    first = upstream.chat_bodies()[0]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "demo__echo"}}, first.get("tool_choice")
    expect_400(env.client, "tool_choice", model=MODEL, input="x", tools=[decl], tool_choice={"type": "mcp", "server_label": "nope"})


def test_operator_server_by_label_with_its_token_from_the_environment(env: McpEnv, upstream):
    tools = [{"type": "mcp", "server_label": "ops", "require_approval": "never"}]
    upstream.push(call_round("ops__echo", ECHO_ARGS), DONE)
    resp, body = mcp_create(env.client, model=MODEL, input="Echo.", tools=tools)
    assert [o.type for o in resp.output] == ["mcp_list_tools", "mcp_call", "message"], harness.dumps(body)
    assert resp.output[1].output == "hello mcp"
    assert body["tools"] == [{"type": "mcp", "server_label": "ops", "require_approval": "never"}] or \
        "server_url" not in body["tools"][0], body["tools"]
    reqs = [r for r in env.server.requests() if r["method"] == "POST"]
    assert reqs and all(r["headers"].get("authorization") == f"Bearer {OPS_TOKEN}" for r in reqs), [r["headers"] for r in reqs]
    text = json.dumps(body) + json.dumps(upstream.requests())
    assert OPS_TOKEN not in text and env.server.url not in text, "the operator's token and URL are never shown"
    stored = env.gw.http.get(f"/v1/responses/{resp.id}")
    assert OPS_TOKEN not in stored.text and env.server.url not in stored.text
    assert OPS_TOKEN not in env.gw.proc.log_path.read_text("utf-8", "replace")
    for f in (env.logs / "gateway-home").rglob("*"):
        if f.is_file():
            assert OPS_TOKEN.encode() not in f.read_bytes(), f"the token leaked into {f}"
    expect_400(env.client, "tools[0].server_url", model=MODEL, input="x",
               tools=[{"type": "mcp", "server_label": "ops", "server_url": env.server.url}])


def test_approval_in_a_conversation(env: McpEnv, upstream):
    """A conversation keeps the listing and the request: the answer names only the request."""
    tools = [approval_decl(env.server.url)]
    conv = env.client.conversations.create()
    upstream.push(call_round("demo__echo", ECHO_ARGS))
    first, _ = mcp_create(env.client, model=MODEL, conversation=conv.id, input="Echo.", tools=tools)
    request = first.output[1]
    assert isinstance(request, McpApprovalRequest), sdk_dict(request)
    upstream.push(DONE)
    answer = [{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}]
    second, body = mcp_create(env.client, model=MODEL, conversation=conv.id, input=answer, tools=tools)
    assert [o["type"] for o in body["output"]] == ["mcp_call", "message"], harness.dumps(body["output"])
    assert second.output[0].approval_request_id == request.id and second.output[0].output == "hello mcp"
    assert len(env.server.rpc("tools/list")) == 1 and len(env.server.rpc("tools/call")) == 1
    # The conversation now holds the answer: answering again is a 400.
    expect_400(env.client, "input[0].approval_request_id", model=MODEL, conversation=conv.id, input=answer, tools=tools)
