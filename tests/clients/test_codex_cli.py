"""Codex CLI (the real `codex` binary, pinned in package.json) against the gateway.

Codex speaks the Responses API with `store: false` and replays the whole history on every
request; it declares its own function tools (`exec_command`, …), namespaced tools and, by
default, the hosted `web_search` tool, which the gateway owns (here: the SearXNG-shaped
fixture). Each test scripts the model, runs `codex exec --json` and checks both what Codex
reports and what reached the model server.
"""

from __future__ import annotations

import base64
import json

import harness
import pytest


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in harness.chat_messages(body) if m["role"] == "user" and isinstance(m["content"], str)]


def test_codex_prints_the_streamed_answer(codex, upstream):
    upstream.push({"text": ["Hello", " from", " the", " gateway."]})
    run = codex.exec("say hello")
    assert run.returncode == 0, run.stderr[-3000:]
    assert [m["text"] for m in run.items("agent_message")] == ["Hello from the gateway."]
    assert [e["type"] for e in run.events if e["type"].startswith("turn.")] == ["turn.started", "turn.completed"]
    (body,) = upstream.chat_bodies()
    assert body["stream"] is True
    assert user_texts(body)[-1] == "say hello"
    # Codex's own function tools reach the model as functions; its hosted web_search is the
    # gateway's, declared upstream by the gateway.
    names = {t["function"]["name"] for t in body["tools"]}
    assert {"exec_command", "web_search"} <= names


def test_sandboxed_codex_searches_on_a_searxng_backend(codex, upstream, searx):
    # Sandboxed (its default), Codex declares web_search with external_web_access: false
    # (cached results only). SearXNG answers from its engines' indexes and the gateway
    # fetches no page, so the gateway accepts it: a turn that searches completes.
    upstream.push(
        {"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": "axum 0.8 release"})}]},
        {"text": ["Axum", " 0.8", " is", " out."]},
    )
    run = codex.exec("what is new in axum?", sandboxed=True)
    assert run.returncode == 0, run.stderr[-3000:]
    searches = run.items("web_search")
    assert searches and searches[-1]["query"] == "axum 0.8 release"
    assert run.items("agent_message")[-1]["text"] == "Axum 0.8 is out."
    assert [q["q"] for q in searx.queries] == [["axum 0.8 release"]]
    first, _ = upstream.chat_bodies()
    assert "web_search" in {t["function"]["name"] for t in first["tools"]}


def test_codex_runs_the_command_the_model_calls(codex, upstream):
    upstream.push(
        {"tool_calls": [{"name": "exec_command", "arguments": json.dumps({"cmd": "echo codex-ok-42"})}]},
        {"text": ["The", " command", " printed", " codex-ok-42."]},
    )
    run = codex.exec("run the echo")
    assert run.returncode == 0, run.stderr[-3000:]
    (cmd,) = run.items("command_execution")
    assert cmd["exit_code"] == 0 and "codex-ok-42" in cmd["aggregated_output"]
    assert [m["text"] for m in run.items("agent_message")] == ["The command printed codex-ok-42."]
    first, second = upstream.chat_bodies()
    # The second request replays the call and carries Codex's output for it, under one call id.
    msgs = harness.chat_messages(second)
    call_msgs = [m for m in msgs if m["role"] == "assistant" and m.get("tool_calls")]
    assert len(call_msgs) == 1
    (call,) = call_msgs[0]["tool_calls"]
    assert call["function"]["name"] == "exec_command"
    assert json.loads(call["function"]["arguments"]) == {"cmd": "echo codex-ok-42"}
    (out,) = [m for m in msgs if m["role"] == "tool"]
    assert out["tool_call_id"] == call["id"]
    assert "codex-ok-42" in out["content"]
    assert len(harness.chat_messages(first)) < len(msgs)


def test_codex_default_web_search_runs_on_the_gateway(codex, upstream, searx):
    upstream.push(
        {"tool_calls": [{"name": "web_search", "arguments": json.dumps({"query": "axum 0.8 release"})}]},
        {"text": ["Axum", " 0.8", " is", " out."]},
    )
    run = codex.exec("what is new in axum?")
    assert run.returncode == 0, run.stderr[-3000:]
    searches = run.items("web_search")
    assert searches and searches[-1]["query"] == "axum 0.8 release"
    # The gateway's progress message (streams only) comes first, as commentary.
    assert [m["text"] for m in run.items("agent_message")] == ["Searching the web for “axum 0.8 release”",
                                                               "Axum 0.8 is out."]
    assert [q["q"] for q in searx.queries] == [["axum 0.8 release"]]
    _, second = upstream.chat_bodies()
    (out,) = [m for m in harness.chat_messages(second) if m["role"] == "tool"]
    assert "<untrusted_search_results>" in out["content"]

    # Codex replays the turn, progress message included; the model sees the call and the
    # answer, never the progress text.
    upstream.reset()
    upstream.push({"text": ["ok"]})
    run = codex.exec("thanks", resume=True)
    assert run.returncode == 0, run.stderr[-3000:]
    (body,) = upstream.chat_bodies()
    assert "Searching the web" not in json.dumps(body)
    assistant = [m for m in harness.chat_messages(body) if m["role"] == "assistant"]
    assert [m["content"] for m in assistant if m.get("content")] == ["Axum 0.8 is out."]
    assert [c["function"]["name"] for m in assistant for c in m.get("tool_calls") or []] == ["web_search"]


def test_codex_resume_hands_the_tool_turns_reasoning_back(codex, upstream):
    # Issue 30: Codex (store: false) asks for reasoning.encrypted_content and replays the sealed
    # items on resume; with upstream.reasoning_handback = "tool_rounds" (the default) the first
    # turn's reasoning goes back on that tool turn's assistant messages, in the field the server
    # used, and nowhere else (before issue 30 it was dropped).
    upstream.push(
        {"reasoning_content": ["SECRET", "-THOUGHT"],
         "tool_calls": [{"name": "exec_command", "arguments": json.dumps({"cmd": "echo first-turn"})}]},
        {"reasoning_content": ["more"], "text": ["First", " done."]},
    )
    run = codex.exec("first task", "-c", "model_reasoning_effort=high")
    assert run.returncode == 0, run.stderr[-3000:]
    assert [m["text"] for m in run.items("agent_message")] == ["First done."]
    bodies = upstream.chat_bodies()
    assert bodies[0]["reasoning_effort"] == "high"

    upstream.reset()
    upstream.push({"text": ["Second", " done."]})
    run = codex.exec("second task", "-c", "model_reasoning_effort=high", resume=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [m["text"] for m in run.items("agent_message")] == ["Second done."]
    (body,) = upstream.chat_bodies()
    msgs = harness.chat_messages(body)
    texts = user_texts(body)
    assert texts.index("first task") < texts.index("second task")
    assistant = [m for m in msgs if m["role"] == "assistant"]
    assert [m["content"] for m in assistant if m.get("content")] == ["First done."]
    calls = [m for m in assistant if m.get("tool_calls")]
    assert len(calls) == 1 and calls[0].get("reasoning_content") == "SECRET-THOUGHT", calls
    answer = next(m for m in assistant if m.get("content") == "First done.")
    assert answer.get("reasoning_content") == "more", answer
    assert json.dumps(body).count("SECRET-THOUGHT") == 1, "the reasoning goes back once, on its message"


@pytest.mark.parametrize("message, shown", [
    # Codex recognises `context_length_exceeded` and says so in its own words.
    ("This model's maximum context length is 4096 tokens.", "ran out of room in the model's context window"),
    ("unsupported value: 'tool_choice'", "unsupported value: 'tool_choice'"),
])
def test_codex_does_not_retry_a_request_the_model_server_refused(codex, upstream, message, shown):
    # The upstream's own 400 ends the turn: `response.error.code` is `invalid_prompt`, which
    # Codex treats as final (with `server_error` it reconnects up to five times).
    refusal = {"http_status": 400, "error_body": json.dumps({"error": {"message": message}})}
    upstream.push(refusal, refusal, refusal)
    run = codex.exec("a prompt")
    assert run.returncode != 0
    assert len(upstream.chat_bodies()) == 1
    failed = [e for e in run.events if e["type"] == "turn.failed"]
    assert len(failed) == 1 and shown in failed[0]["error"]["message"], run.events


def test_codex_view_image_reaches_the_model_as_an_image(codex, upstream):
    # Codex's view_image answers with an input_image; a chat tool message holds text only, so
    # the image follows the tool message as a user message.
    png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
    (codex.workdir / "dot.png").write_bytes(png)
    upstream.push(
        {"tool_calls": [{"name": "view_image", "arguments": json.dumps({"path": str(codex.workdir / "dot.png")})}]},
        {"text": ["A", " dot."]},
    )
    run = codex.exec("look at dot.png")
    assert run.returncode == 0, run.stderr[-3000:]
    assert [m["text"] for m in run.items("agent_message")] == ["A dot."]
    _, second = upstream.chat_bodies()
    msgs = harness.chat_messages(second)
    i = next(k for k, m in enumerate(msgs) if m["role"] == "tool")
    assert "[image: in the next user message]" in msgs[i]["content"]
    after = msgs[i + 1]
    assert after["role"] == "user"
    urls = [p["image_url"]["url"] for p in after["content"] if p["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png


def test_codex_over_the_websocket_runs_the_command_the_model_calls(codex, upstream, gateway):
    # The provider's WebSocket switch (`supports_websockets`): Codex opens one WebSocket to
    # /v1/responses and sends each request there as a `response.create` (a warm-up with
    # `generate: false` first when it sends one), continuing by previous_response_id.
    upstream.push(
        {"tool_calls": [{"name": "exec_command", "arguments": json.dumps({"cmd": "echo codex-ws-7"})}]},
        {"text": ["Done:", " codex-ws-7."]},
    )
    log_before = gateway.proc.log_size()
    run = codex.exec("run the echo", "-c", "model_providers.gateway.supports_websockets=true")
    assert run.returncode == 0, run.stderr[-3000:]
    (cmd,) = run.items("command_execution")
    assert cmd["exit_code"] == 0 and "codex-ws-7" in cmd["aggregated_output"]
    assert [m["text"] for m in run.items("agent_message")] == ["Done: codex-ws-7."]
    first, second = upstream.chat_bodies()
    msgs = harness.chat_messages(second)
    (out,) = [m for m in msgs if m["role"] == "tool"]
    assert "codex-ws-7" in out["content"]
    assert len(harness.chat_messages(first)) < len(msgs)
    # It went over the WebSocket: the gateway logged its response.create messages.
    log = gateway.proc.tail(since=log_before, max_bytes=60000)
    assert "websocket opened" in log and log.count("response.create request_id") >= 2, log[-3000:]
    # Codex 0.171 warms up (no round), then continues each turn from the previous response
    # kept on the connection (store: false).
    assert "rounds=0" in log and "previous_response_id=" in log and "store=false" in log, log[-3000:]


@pytest.fixture
def mcp_demo(tmp_path):
    """The official MCP SDK's server (tests/python/mcp_server.py), which Codex itself lists
    and calls (Codex's MCP servers are its own: the gateway sees function tools)."""
    import mcp_server as M

    srv = M.McpServerProc(tmp_path)
    yield srv
    srv.close()


def test_codex_with_a_catalog_model_defers_its_mcp_tools_behind_tool_search(codex, upstream, mcp_demo):
    # With a model of its catalog that supports tool search (gpt-5.5), Codex declares its MCP
    # servers' tools `defer_loading: true` in a namespace and its own client-executed
    # `tool_search` (BM25 over the deferred tools); with a model name it does not know (the
    # other tests' `scripted-model`) it declares them directly. The gateway hides the
    # deferred tools, returns the search to Codex, and loads what Codex's
    # tool_search_output names.
    with (codex.home / "config.toml").open("a") as f:
        f.write(f'[mcp_servers.demo]\nurl = "{mcp_demo.url}"\n')
    upstream.push(
        {"tool_calls": [{"name": "tool_search", "arguments": json.dumps({"query": "echo text"})}]},
        {"tool_calls": [{"name": "mcp__demo__echo", "arguments": json.dumps({"text": "codex-deferred-ok"})}]},
        {"text": ["Echoed."]},
    )
    run = codex.exec("echo codex-deferred-ok with the demo server", "-m", "gpt-5.5")
    assert run.returncode == 0, run.stderr[-3000:]
    (call,) = run.items("mcp_tool_call")
    assert (call["server"], call["tool"], call["status"]) == ("demo", "echo", "completed")
    assert run.items("agent_message")[-1]["text"] == "Echoed."
    first, second, third = upstream.chat_bodies()
    names = [{t["function"]["name"] for t in b["tools"]} for b in (first, second, third)]
    assert "tool_search" in names[0] and not any(n.startswith("mcp__demo__") for n in names[0])
    assert "mcp__demo__echo" in names[1] and "mcp__demo__echo" in names[2]
    tool_msgs = [m for m in harness.chat_messages(second) if m["role"] == "tool"]
    assert "mcp__demo__echo" in tool_msgs[-1]["content"]


def test_codex_with_an_unknown_model_declares_its_mcp_tools_directly(codex, upstream, mcp_demo):
    with (codex.home / "config.toml").open("a") as f:
        f.write(f'[mcp_servers.demo]\nurl = "{mcp_demo.url}"\n')
    upstream.push({"text": ["hi"]})
    run = codex.exec("say hi")
    assert run.returncode == 0, run.stderr[-3000:]
    (body,) = upstream.chat_bodies()
    names = {t["function"]["name"] for t in body["tools"]}
    assert "mcp__demo__echo" in names and "tool_search" not in names
