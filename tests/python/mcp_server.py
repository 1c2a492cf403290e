"""A real MCP server (the official `mcp` SDK) for the MCP suite (test_mcp_sdk.py, issue 18),
and the fault fixtures next to it.

Run as a script, it serves an `MCPServer` (mcp 2.x's name for FastMCP) over streamable HTTP at
`/mcp` on 127.0.0.1, on a socket it binds itself (port 0 unless `--port`), and prints
`MCP_LISTENING http://127.0.0.1:PORT/mcp` once that socket listens. Tools:

* `echo(text)`      returns `text`; annotated `readOnlyHint: true`;
* `slow(seconds)`   sleeps, then returns "slept";
* `fail(reason)`    raises `ToolError(reason)`: the result has `isError: true`, `reason` as its text;
* `nested(config)`  `config` is a pydantic model with a nested object and a list of ints; returns
                    a JSON summary of it.

Every HTTP request to `/mcp` is recorded (method, headers, body, the JSON-RPC method) and served
as JSON by `GET /_control/requests`; `POST /_control/reset` forgets them. `POST
/_control/exit_after_list` makes the process exit, without answering, when a `tools/call`
arrives after it has answered a `tools/list` (a server that goes away between listing and
calling; deterministic, whatever the timing of the call).

Imported (by the tests), the module gives the test side: `McpServerProc` (the script as a child
process), `GarbageServer` (200 with non-MCP bytes to every request), `DownPort` (a port that
refuses connections) and `SilentServer` (a port that never answers). The `mcp` package is imported only when the script runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

LISTENING = "MCP_LISTENING "
TOOL_NAMES = ("echo", "slow", "fail", "nested")


class Limits(BaseModel):
    depth: int = Field(description="how deep")
    labels: list[str] = Field(default_factory=list, description="free-form labels")


class Config(BaseModel):
    """`nested`'s argument: a nested object and a list of ints."""

    name: str = Field(description="a name")
    limits: Limits = Field(description="a nested object")
    values: list[int] = Field(description="a list of integers")


# ---------------------------------------------------------------------------
# the server (script side)
# ---------------------------------------------------------------------------


def build_server():
    """The MCPServer with the four tools."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("gateway-test-fixture", instructions="Test fixture for responses-gateway", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the given text unchanged."""
        return text

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for the given number of seconds, then answer "slept"."""
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail, with the given reason."""
        raise ToolError(reason)

    @server.tool()
    def nested(config: Config) -> str:
        """Summarize a nested configuration object as JSON."""
        return json.dumps({
            "name": config.name,
            "depth": config.limits.depth,
            "labels": config.limits.labels,
            "count": len(config.values),
            "sum": sum(config.values),
        }, sort_keys=True)

    return server


class Recorder:
    """ASGI wrapper: records requests to the MCP app, serves /_control/*."""

    def __init__(self, app: Any):
        self.app = app
        self.requests: list[dict[str, Any]] = []
        self.exit_after_list = False
        self.listed = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith("/_control/"):
            await self.control(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for k, v in scope["headers"]:
            name, value = k.decode("latin-1").lower(), v.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        entry: dict[str, Any] = {"method": scope["method"], "path": scope["path"], "headers": headers, "body": "", "rpc": None, "status": None}
        self.requests.append(entry)
        chunks: list[bytes] = []

        async def recv() -> dict[str, Any]:
            msg = await receive()
            if msg["type"] == "http.request":
                chunks.append(msg.get("body", b""))
                if not msg.get("more_body"):
                    entry["body"] = b"".join(chunks).decode("utf-8", "replace")
                    try:
                        doc = json.loads(entry["body"])
                    except ValueError:
                        doc = None
                    if isinstance(doc, dict):
                        entry["rpc"] = doc.get("method")
                    if self.exit_after_list and self.listed and entry["rpc"] == "tools/call":
                        print("exiting at tools/call after tools/list, as asked", file=sys.stderr, flush=True)
                        os._exit(0)
            return msg

        async def snd(msg: dict[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                entry["status"] = msg["status"]
            await send(msg)
            if (msg["type"] == "http.response.body" and not msg.get("more_body") and self.exit_after_list
                    and entry["rpc"] == "tools/list"):
                self.listed = True

        await self.app(scope, recv, snd)

    async def control(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:  # drain the body
            msg = await receive()
            if msg["type"] != "http.request" or not msg.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        status, body = 200, {"ok": True}
        if path == "/_control/requests" and method == "GET":
            body = self.requests
        elif path == "/_control/reset" and method == "POST":
            self.requests = []
            self.exit_after_list = False
        elif path == "/_control/exit_after_list" and method == "POST":
            self.exit_after_list = True
        else:
            status, body = 404, {"error": f"no control endpoint {method} {path}"}
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    import uvicorn

    server = build_server()
    # host="127.0.0.1" keeps the SDK's DNS-rebinding protection (Host must be 127.0.0.1:*, localhost:*).
    app = Recorder(server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)  # connections queue until uvicorn serves (after the app's lifespan started)
    port = sock.getsockname()[1]
    print(f"{LISTENING}http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


# ---------------------------------------------------------------------------
# the test side
# ---------------------------------------------------------------------------


class McpServerProc:
    """mcp_server.py as a child process (harness.Proc), with its control API."""

    def __init__(self, log_dir: Path, name: str = "mcp-server"):
        import harness
        import httpx

        self.proc = harness.Proc(name, [sys.executable, str(Path(__file__).resolve())], log_dir / f"{name}.log")
        try:
            line = self.proc.wait_line(LISTENING, timeout=60)
        except Exception:
            self.proc.stop()
            raise
        self.url = line[len(LISTENING):].strip()  # http://127.0.0.1:PORT/mcp
        self.base_url = self.url.rsplit("/mcp", 1)[0]
        self.http = httpx.Client(base_url=self.base_url, timeout=10)

    def requests(self) -> list[dict[str, Any]]:
        """Every request to /mcp since the last reset: {method, path, headers, body, rpc, status}."""
        r = self.http.get("/_control/requests")
        r.raise_for_status()
        return r.json()

    def rpc(self, method: str) -> list[dict[str, Any]]:
        """The JSON-RPC messages of `method` received since the last reset (parsed bodies)."""
        return [json.loads(r["body"]) for r in self.requests() if r["rpc"] == method]

    def reset(self) -> None:
        self.http.post("/_control/reset").raise_for_status()

    def exit_after_list(self) -> None:
        self.http.post("/_control/exit_after_list").raise_for_status()

    def close(self) -> None:
        self.http.close()
        self.proc.stop()


GARBAGE = {
    # path -> (content type, body): bytes no MCP client can read as a JSON-RPC answer
    "/html": ("text/html; charset=utf-8", b"<!doctype html><html><body><h1>It works!</h1>\x00\xff\xfe</body></html>"),
    "/json": ("application/json", b'{"jsonrpc": "2.0", "oops": [1, 2,\x00\xff truncated'),
    "/sse": ("text/event-stream", b"event: bogus\ndata: \x00\xffnot json at all\n\n"),
}


class _GarbageHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        if n:
            self.rfile.read(n)
        self.server.hits.append((self.command, self.path))  # type: ignore[attr-defined]
        ctype, body = GARBAGE.get(self.path.split("?")[0], GARBAGE["/html"])
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet)
        pass


class GarbageServer:
    """HTTP 200 with non-MCP bytes to every request (stdlib server in a thread).
    `url(kind)`: `http://127.0.0.1:PORT/<kind>` for kind in GARBAGE ("html", "json", "sse")."""

    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _GarbageHandler)
        self.httpd.daemon_threads = True
        self.httpd.hits = []  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, kind: str = "html") -> str:
        return f"http://127.0.0.1:{self.port}/{kind}"

    @property
    def hits(self) -> list[tuple[str, str]]:
        return self.httpd.hits  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class DownPort:
    """A loopback port bound but never listening: connecting is refused, and no other process
    can take the port while this object holds it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def close(self) -> None:
        self.sock.close()


class SilentServer:
    """A loopback port that listens (the kernel completes TCP handshakes) but never accepts nor
    answers: a server too slow to answer at all."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def close(self) -> None:
        self.sock.close()


if __name__ == "__main__":
    main()
