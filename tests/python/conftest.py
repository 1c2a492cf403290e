"""Session fixtures: the scripted upstream, the SearXNG-shaped search fixture, the gateway
(its web_search backend pointed at that fixture), an OpenAI client.

Binaries: $UPSTREAM_BIN / $GATEWAY_BIN, else target/debug/{scripted-upstream,responses-gateway}
(tests/python/run.sh builds them). Tests that need no server (test_validate_offline.py)
never start them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402
import search_fixture  # noqa: E402

_SERVERS: dict[str, harness.Proc] = {}
_LOG_MARKS: dict[str, dict[str, int]] = {}


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("servers")


@pytest.fixture(scope="session")
def upstream_server(server_logs: Path):
    try:
        bin_path = harness.binary("UPSTREAM_BIN", "scripted-upstream")
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    up = harness.start_upstream(bin_path, server_logs)
    _SERVERS["scripted-upstream"] = up.proc
    yield up
    up.close()
    up.proc.stop()


@pytest.fixture(scope="session")
def search_server():
    """The SearXNG-shaped fixture (search_fixture.py) the gateway's web_search backend points at."""
    srv = search_fixture.SearchFixture()
    yield srv
    srv.close()


@pytest.fixture
def searx(search_server: search_fixture.SearchFixture) -> search_fixture.SearchFixture:
    """The search fixture, reset (mode "ok", no recorded queries) before the test."""
    search_server.reset()
    return search_server


@pytest.fixture(scope="session")
def gateway(upstream_server: harness.Upstream, search_server: search_fixture.SearchFixture, server_logs: Path):
    try:
        bin_path = harness.binary("GATEWAY_BIN", "responses-gateway")
    except FileNotFoundError as e:
        pytest.fail(str(e), pytrace=False)
    # web_search runs on the http backend against the local SearXNG fixture (tests that
    # declare no web_search are unaffected).
    gw = harness.start_gateway(bin_path, upstream_server.base_url, server_logs, extra_env=search_server.gateway_env())
    _SERVERS["responses-gateway"] = gw.proc
    yield gw
    gw.close()
    gw.proc.stop()


@pytest.fixture
def upstream(upstream_server: harness.Upstream, gateway: harness.Gateway, request: pytest.FixtureRequest):
    """The scripted upstream, reset (empty script queue, no recorded requests) before the test."""
    assert gateway.proc.alive(), f"gateway died earlier:\n{gateway.proc.tail()}"
    upstream_server.reset()
    _LOG_MARKS[request.node.nodeid] = {name: p.log_size() for name, p in _SERVERS.items()}
    return upstream_server


@pytest.fixture(scope="session")
def client(gateway: harness.Gateway) -> openai.OpenAI:
    # max_retries=0: a retried 5xx would silently consume the next upstream script.
    c = openai.OpenAI(base_url=gateway.api_base, api_key="test", max_retries=0, timeout=60)
    yield c
    c.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed and item.nodeid in _LOG_MARKS:
        for name, proc in _SERVERS.items():
            tail = proc.tail(since=_LOG_MARKS[item.nodeid].get(name, 0))
            if tail.strip():
                rep.sections.append((f"{name} log during this test", tail))
