"""The Agents SDK's `HostedMCPTool` against the gateway, end to end (issue 18): the gateway
lists and calls a real MCP server (the official `mcp` SDK's, tests/python/mcp_server.py), and
the SDK sees the hosted MCP items as it would from OpenAI: without approval; with approval
answered by the tool's `on_approval_request` hook; and rejected through the run's
interruptions (`RunState.reject`), the SDK's own way to resume.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from agents import Agent, HostedMCPTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai.types.responses.response_output_item import McpApprovalRequest, McpCall, McpListTools

import harness
import mcp_server as M

set_tracing_disabled(True)

MCP_ENV = {
    "RESPONSES_GATEWAY_MCP__ALLOWED_URLS": '["http://127.0.0.1:"]',
    "RESPONSES_GATEWAY_MCP__ALLOW_PRIVATE": "true",
}
ECHO = {"text": "hello agents"}


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory):
    srv = M.McpServerProc(tmp_path_factory.mktemp("mcp-server"))
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def mcp_gateway(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    gw = harness.start_gateway(harness.binary("GATEWAY_BIN", "responses-gateway"), upstream_server.base_url,
                               tmp_path_factory.mktemp("mcp-gateway"), extra_env=MCP_ENV)
    yield gw
    gw.close()
    gw.proc.stop()


@pytest.fixture
def client(mcp_gateway: harness.Gateway, mcp_server: M.McpServerProc, upstream: harness.Upstream):
    mcp_server.reset()
    return openai.AsyncOpenAI(base_url=mcp_gateway.api_base, api_key="test", max_retries=0, timeout=60)


def mcp_agent(client: openai.AsyncOpenAI, url: str, **tool) -> Agent:
    config = {"type": "mcp", "server_label": "demo", "server_url": url, **tool.pop("config", {})}
    return Agent(name="assistant", instructions="Be brief.", model=OpenAIResponsesModel("scripted-model", client),
                 tools=[HostedMCPTool(tool_config=config, **tool)])


def echo_round() -> dict:
    return {"tool_calls": [{"name": "demo__echo", "arguments": json.dumps(ECHO)}]}


def raw_items(result, kind: str) -> list:
    return [i.raw_item for i in result.new_items if getattr(i.raw_item, "type", None) == kind
            or (isinstance(i.raw_item, dict) and i.raw_item.get("type") == kind)]


def test_hosted_mcp_tool_without_approval(client, mcp_server, upstream):
    upstream.push(echo_round(), {"text": ["Echoed."]})
    a = mcp_agent(client, mcp_server.url, config={"require_approval": "never"})
    result = asyncio.run(Runner.run(a, "Echo 'hello agents'."))
    assert result.final_output == "Echoed."
    (listing,) = raw_items(result, "mcp_list_tools")
    assert isinstance(listing, McpListTools) and {t.name for t in listing.tools} == set(M.TOOL_NAMES)
    (call,) = raw_items(result, "mcp_call")
    assert isinstance(call, McpCall) and (call.name, call.status, call.output) == ("echo", "completed", "hello agents")
    (rpc,) = mcp_server.rpc("tools/call")
    assert rpc["params"]["arguments"] == ECHO


def test_hosted_mcp_tool_with_an_approval_hook(client, mcp_server, upstream):
    seen = []

    def approve(request):
        seen.append(request.data)
        return {"approve": True}

    upstream.push(echo_round(), {"text": ["Approved and echoed."]})
    a = mcp_agent(client, mcp_server.url, config={"require_approval": "always"}, on_approval_request=approve)
    result = asyncio.run(Runner.run(a, "Echo 'hello agents'."))
    assert result.final_output == "Approved and echoed."
    (request,) = seen
    assert isinstance(request, McpApprovalRequest) and request.name == "echo" and json.loads(request.arguments) == ECHO
    (call,) = raw_items(result, "mcp_call")
    assert call.approval_request_id == request.id and call.output == "hello agents", call
    assert len(mcp_server.rpc("tools/call")) == 1, "the approved call ran once"
    assert len(mcp_server.rpc("tools/list")) == 1, "the SDK replayed the listing; the gateway reused it"
    # The SDK's second request replayed the items and answered the request.
    bodies = upstream.chat_bodies()
    assert len(bodies) == 2
    tool_msgs = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "hello agents" in tool_msgs[0]["content"]


def test_hosted_mcp_tool_rejected_through_interruptions(client, mcp_server, upstream):
    upstream.push(echo_round(), {"text": ["I did not echo it."]})
    a = mcp_agent(client, mcp_server.url)  # require_approval omitted: "always"; no hook
    calls_before_answer = []

    async def go():
        first = await Runner.run(a, "Echo 'hello agents'.")
        calls_before_answer.extend(mcp_server.rpc("tools/call"))
        assert len(first.interruptions) == 1, first.new_items
        state = first.to_state()
        state.reject(first.interruptions[0], rejection_message="not allowed today")
        return await Runner.run(a, state)

    second = asyncio.run(go())
    assert calls_before_answer == [], "nothing ran before the answer"
    assert second.final_output == "I did not echo it."
    assert mcp_server.rpc("tools/call") == [], "a rejected call never runs"
    tool_msgs = [m for m in upstream.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "not approve" in tool_msgs[0]["content"], tool_msgs
    assert "not allowed today" in tool_msgs[0]["content"], "the SDK's rejection message is the reason the model reads"
