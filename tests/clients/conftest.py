"""Fixtures of the real-client suite: the same servers as tests/python (scripted upstream,
SearXNG-shaped search fixture, gateway with web_search on that fixture), loaded from
tests/python/conftest.py, plus an async OpenAI client for the Agents SDK and a `codex` runner.

Codex CLI comes from tests/clients/node_modules (run.sh runs `npm ci`), or $CODEX_BIN.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

HERE = Path(__file__).resolve().parent
PY_TESTS = HERE.parent / "python"
sys.path.insert(0, str(PY_TESTS))

import harness  # noqa: E402

# tests/python/conftest.py under another module name (this file is `conftest` too).
_spec = importlib.util.spec_from_file_location("sdk_fixtures", PY_TESTS / "conftest.py")
assert _spec and _spec.loader
_sdk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sdk)

server_logs = _sdk.server_logs
upstream_server = _sdk.upstream_server
search_server = _sdk.search_server
searx = _sdk.searx
gateway = _sdk.gateway
upstream = _sdk.upstream
pytest_runtest_makereport = _sdk.pytest_runtest_makereport


@pytest.fixture
def async_client(gateway: harness.Gateway):
    """An AsyncOpenAI client on the gateway (the Agents SDK is async); no retries, so a 5xx
    never consumes a second upstream script."""
    return openai.AsyncOpenAI(base_url=gateway.api_base, api_key="test", max_retries=0, timeout=60)


@dataclass
class CodexRun:
    """One `codex exec --json` run: its JSONL events and its exit code."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def items(self, type_: str) -> list[dict[str, Any]]:
        """The completed items of one type (`agent_message`, `command_execution`, …)."""
        return [e["item"] for e in self.events if e.get("type") == "item.completed" and e["item"].get("type") == type_]


class Codex:
    """Runs Codex CLI against the gateway as a user would: a model provider with
    `wire_api = "responses"` whose base_url is the gateway, everything else default."""

    def __init__(self, binary: Path, gateway: harness.Gateway, home: Path, workdir: Path):
        self.binary = binary
        self.home = home
        self.workdir = workdir
        home.mkdir(parents=True, exist_ok=True)
        workdir.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'model = "scripted-model"\n'
            'model_provider = "gateway"\n'
            "[model_providers.gateway]\n"
            'name = "responses-gateway"\n'
            f'base_url = "{gateway.api_base}"\n'
            'wire_api = "responses"\n'
            'env_key = "GATEWAY_TEST_KEY"\n'
        )

    def exec(self, prompt: str, *args: str, resume: bool = False, sandboxed: bool = False,
             timeout: float = 120) -> CodexRun:
        """`sandboxed`: Codex's default read-only sandbox; otherwise full access (the scripted
        model's commands are harmless echos, and CI machines may lack the sandbox's namespaces)."""
        argv = [str(self.binary), "exec", "--json", "--skip-git-repo-check", *args]
        if not sandboxed:
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        if resume:
            argv += ["resume", "--last"]
        argv.append(prompt)
        env = dict(os.environ, CODEX_HOME=str(self.home), GATEWAY_TEST_KEY="test-key", NO_COLOR="1")
        p = subprocess.run(argv, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        events = []
        for line in p.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                events.append(json.loads(line))
        return CodexRun(p.returncode, events, p.stderr)


@pytest.fixture
def codex(gateway: harness.Gateway, tmp_path: Path) -> Codex:
    default = HERE / "node_modules" / ".bin" / "codex"
    binary = Path(os.environ.get("CODEX_BIN", default))
    if not binary.exists():
        pytest.fail(f"Codex CLI not found at {binary}: run tests/clients/run.sh (it runs `npm ci`)", pytrace=False)
    return Codex(binary, gateway, tmp_path / "codex-home", tmp_path / "work")
