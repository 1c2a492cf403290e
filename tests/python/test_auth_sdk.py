"""API keys ([auth]) with the official SDK: a gateway with keys from a key file and from an
environment variable accepts `OpenAI(api_key=…)` with a configured key, refuses a wrong or
missing one with 401 `invalid_api_key` (openai.AuthenticationError) before anything reaches
the upstream or the store, keeps /healthz and /readyz open, and never logs a key."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

import harness

FILE_KEY = "sk-file-key-0123456789abcdef"
ENV_KEY = "sk-env-key-fedcba9876543210"
WRONG_KEY = "sk-wrong-key-000000000000"


@pytest.fixture(scope="module")
def keyed(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    """A gateway of its own, with one key in a file (project team-a) and one in a variable."""
    logs = tmp_path_factory.mktemp("auth")
    keys = logs / "keys"
    keys.write_text(f"# project key\nteam-a {FILE_KEY}\n")
    env = {
        "RESPONSES_GATEWAY_AUTH__KEYS_FILE": str(keys),
        "RESPONSES_GATEWAY_AUTH__KEYS": '[{env="GW_TEST_CLIENT_KEY", project="team-b"}]',
        "GW_TEST_CLIENT_KEY": ENV_KEY,
        "RUST_LOG": "debug",
    }
    bin_path = harness.binary("GATEWAY_BIN", "responses-gateway")
    gw = harness.start_gateway(bin_path, upstream_server.base_url, logs, extra_env=env)
    yield gw
    gw.close()
    gw.proc.stop()
    log = Path(logs / "gateway.log").read_text(errors="replace")
    for key in (FILE_KEY, ENV_KEY, WRONG_KEY):
        assert key not in log, "a key appeared in the gateway's log"


def client(gw: harness.Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.api_base, api_key=key, max_retries=0, timeout=30)


@pytest.mark.parametrize("key", [FILE_KEY, ENV_KEY])
def test_configured_key_is_accepted(keyed: harness.Gateway, upstream_server: harness.Upstream, key: str):
    upstream_server.reset()
    upstream_server.push({"text": ["Hello", " there."]})
    with client(keyed, key) as c:
        r = c.responses.create(model="m", input="hi")
        assert r.output_text == "Hello there."
        assert c.responses.retrieve(r.id).id == r.id
        upstream_server.push({"text": ["streamed"]})
        with c.responses.stream(model="m", input="hi") as s:
            final = s.get_final_response()
        assert final.output_text == "streamed"


def test_wrong_key_is_an_authentication_error(keyed: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    upstream_server.push({"text": ["never sent"]})
    with client(keyed, WRONG_KEY) as c:
        with pytest.raises(openai.AuthenticationError) as e:
            c.responses.create(model="m", input="hi")
        assert e.value.status_code == 401
        assert e.value.code == "invalid_api_key"
        assert e.value.body == {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
        assert WRONG_KEY not in e.value.response.text
        for call in (lambda: c.models.list(), lambda: c.vector_stores.list(), lambda: c.files.list(),
                     lambda: c.conversations.create()):
            with pytest.raises(openai.AuthenticationError):
                call()
    assert upstream_server.requests() == [], "a refused request reached the upstream"


def test_missing_key_is_401_in_the_openai_shape(keyed: harness.Gateway):
    r = httpx.post(f"{keyed.api_base}/responses", json={"model": "m", "input": "hi"}, timeout=10)
    assert r.status_code == 401
    assert r.headers.get("www-authenticate") == "Bearer"
    body = r.json()
    assert body["error"]["code"] == "invalid_api_key"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["param"] is None
    # Another scheme is no key either.
    r = httpx.get(f"{keyed.api_base}/models", headers={"authorization": f"Basic {FILE_KEY}"}, timeout=10)
    assert r.status_code == 401


def test_health_and_playground_stay_open(keyed: harness.Gateway):
    base = keyed.api_base.removesuffix("/v1")
    assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
    assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
    assert httpx.get(f"{base}/", timeout=10).status_code == 200
