"""Process and HTTP helpers for the end-to-end suite: start/stop the scripted
upstream and the gateway, drive the upstream's control API, stream raw SSE."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import validate as V

ROOT = Path(__file__).resolve().parents[2]


def target_dir() -> Path:
    t = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return t if t.is_absolute() else ROOT / t


def binary(env_var: str, name: str) -> Path:
    p = os.environ.get(env_var)
    path = (Path(p) if p else target_dir() / "debug" / name).resolve()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"{name} binary not found at {path} (set {env_var} or run tests/python/run.sh, which builds it)"
        )
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A child process whose stdout/stderr go to a log file (stdout lines also to a queue)."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "ab", buffering=0)
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.p = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL, env=env,
            cwd=str(cwd) if cwd else None, start_new_session=True,
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for raw in iter(self.p.stdout.readline, b""):
            self._log.write(raw)
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def wait_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no stdout line starting with {prefix!r} within {timeout}s\n{self.tail()}")
            try:
                line = self.lines.get(timeout=min(left, 0.2))
            except queue.Empty:
                if self.p.poll() is not None:
                    raise RuntimeError(f"{self.name} exited with {self.p.returncode} before printing {prefix!r}\n{self.tail()}")
                continue
            if line.startswith(prefix):
                return line

    def alive(self) -> bool:
        return self.p.poll() is None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def tail(self, since: int = 0, max_bytes: int = 6000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, 2)
                end = f.tell()
                start = max(since, end - max_bytes)
                f.seek(start)
                data = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return ("…\n" if start > since else "") + data

    def stop(self) -> None:
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(timeout=10)
        self._reader.join(timeout=2)
        self._log.close()


class Upstream:
    """The scripted upstream and its control API."""

    def __init__(self, proc: Proc, base_url: str):
        self.proc = proc
        self.base_url = base_url.rstrip("/")  # http://127.0.0.1:PORT
        self.http = httpx.Client(base_url=self.base_url, timeout=10)

    def reset(self) -> None:
        self.http.post("/_control/reset").raise_for_status()

    def push(self, *scripts: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Queue scripts, FIFO, one per upstream chat request."""
        flat: list[dict[str, Any]] = []
        for s in scripts:
            flat.extend(s if isinstance(s, list) else [s])
        body: Any = flat[0] if len(flat) == 1 else flat
        r = self.http.post("/_control/scripts", json=body)
        assert r.status_code < 300, f"pushing scripts failed: {r.status_code} {r.text}"

    def requests(self) -> list[dict[str, Any]]:
        """What the upstream received: [{"body": chat request JSON, "authorization": ...}]."""
        r = self.http.get("/_control/requests")
        r.raise_for_status()
        return r.json()

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests()]

    def close(self) -> None:
        self.http.close()


@dataclass
class RawStream:
    status_code: int
    headers: httpx.Headers
    text: str
    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def types(self) -> list[str]:
        return [e.get("type") for e in self.events]

    def of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == type_]

    def terminal(self) -> dict[str, Any]:
        return self.events[-1]


class Gateway:
    def __init__(self, proc: Proc, port: int):
        self.proc = proc
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.api_base = f"{self.base_url}/v1"
        self.http = httpx.Client(base_url=self.base_url, timeout=60, headers={"Authorization": "Bearer test"})

    def post_responses(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post("/v1/responses", json=body)

    def stream_raw(self, body: dict[str, Any], deadline_s: float = 60.0) -> RawStream:
        """POST /v1/responses with stream:true and collect the raw SSE text."""
        body = {**body, "stream": True}
        chunks: list[str] = []
        problems: list[str] = []
        t0 = time.monotonic()
        with self.http.stream("POST", "/v1/responses", json=body) as r:
            status, headers = r.status_code, r.headers
            for chunk in r.iter_text():
                chunks.append(chunk)
                if time.monotonic() - t0 > deadline_s:
                    problems.append(f"stream did not end within {deadline_s}s")
                    break
        text = "".join(chunks)
        raw = RawStream(status_code=status, headers=headers, text=text, problems=problems)
        if status == 200:
            ctype = headers.get("content-type", "")
            if not ctype.startswith("text/event-stream"):
                raw.problems.append(f"content-type is {ctype!r}, not text/event-stream")
            parsed = V.parse_sse(text)
            raw.comments = parsed.comments
            raw.events, p = V.sse_json_events(parsed)
            raw.problems.extend(p)
        return raw

    def stream_validated(self, body: dict[str, Any]) -> RawStream:
        """Raw stream that must be HTTP 200 SSE, framed right, every event valid, invariants held."""
        raw = self.stream_raw(body)
        assert raw.status_code == 200, f"streaming request: HTTP {raw.status_code}: {raw.text[:2000]}"
        assert not raw.problems, "SSE framing problems:\n- " + "\n- ".join(raw.problems)
        V.validate_stream(raw.events)
        return raw

    def close(self) -> None:
        self.http.close()


def start_upstream(binary_path: Path, log_dir: Path, listen: str = "127.0.0.1:0") -> Upstream:
    proc = Proc("scripted-upstream", [str(binary_path), "--listen", listen], log_dir / "upstream.log")
    try:
        line = proc.wait_line("LISTENING ", timeout=30)
    except Exception:
        proc.stop()
        raise
    return Upstream(proc, line.split(" ", 1)[1].strip())


def start_gateway(binary_path: Path, upstream_url: str, log_dir: Path, extra_env: dict[str, str] | None = None,
                  attempts: int = 3, extra_args: list[str] | None = None) -> Gateway:
    home = log_dir / "gateway-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ)
    # Keep whatever the gateway writes by default (store, config lookups) inside the test dir.
    env.update({
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "RESPONSES_GATEWAY_SERVER__KEEPALIVE_INTERVAL_MS": "1000",
    })
    env.setdefault("RUST_LOG", "info")
    env.update(extra_env or {})
    last_err: Exception | None = None
    for _ in range(attempts):
        port = free_port()
        argv = [str(binary_path), "serve", "--upstream-url", f"{upstream_url}/v1", "--listen", f"127.0.0.1:{port}",
                *(extra_args or [])]
        proc = Proc("responses-gateway", argv, log_dir / "gateway.log", env=env, cwd=home)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not proc.alive():
                last_err = RuntimeError(f"gateway exited with {proc.p.returncode} during start-up\n{proc.tail()}")
                break
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    return Gateway(proc, port)
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            last_err = TimeoutError(f"gateway: GET /healthz != 200 within 60s\n{proc.tail()}")
        proc.stop()
    assert last_err is not None
    raise last_err


def start_keyed_gateway(upstream_url: str, log_dir: Path, keys: list[tuple[str, str]],
                        extra_env: dict[str, str] | None = None) -> Gateway:
    """A gateway of its own with an [auth] key file of `(project, key)` pairs."""
    key_file = log_dir / "keys"
    key_file.write_text("".join(f"{project} {key}\n" for project, key in keys))
    env = {"RESPONSES_GATEWAY_AUTH__KEYS_FILE": str(key_file), **(extra_env or {})}
    return start_gateway(binary("GATEWAY_BIN", "responses-gateway"), upstream_url, log_dir, extra_env=env)


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or [])


def message_text(msg: dict[str, Any]) -> str | None:
    """Text of a chat message whose content is a string or a list of text parts."""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return None


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)
