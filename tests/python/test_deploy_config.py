"""The deployment files (docs/deployment.md) against the real gateway, without Docker.

The gateway service's environment in compose.yaml, interpolated as `docker compose` does, plus
the Dockerfile's ENV, must be a configuration `responses-gateway check-config` accepts (an
unknown or misspelt RESPONSES_GATEWAY_* variable is an error there) and must mean what
compose.yaml says; the image's HEALTHCHECK command must pass against a running gateway.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

import harness

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"

# What a user puts into .env (placeholders, as in .env.example).
DOTENV = {"POSTGRES_PASSWORD": "pw-placeholder", "SEARXNG_SECRET": "secret-placeholder"}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation: `$$`, `${VAR}`, `${VAR:-default}`, `${VAR:?error}` and
    `${VAR:+replacement}` (the word may hold balanced braces and nested `${...}`)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        if not text.startswith("${", i):
            out.append(text[i])
            i += 1
            continue
        depth, j = 1, i + 2
        while depth:
            if j >= len(text):
                raise ValueError(f"unclosed ${{ in {text!r}")
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        expr = text[i + 2 : j - 1]
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?|:\+)(.*))?", expr, re.S)
        if not m:
            raise ValueError(f"unsupported interpolation ${{{expr}}}")
        name, op, word = m.groups()
        value = env.get(name, "")
        if op is None:
            out.append(value)
        elif op == ":-":
            out.append(value or interpolate(word, env))
        elif op == ":?":
            if not value:
                raise ValueError(f"required variable {name}: {word}")
            out.append(value)
        else:
            out.append(interpolate(word, env) if value else "")
        i = j
    return "".join(out)


def compose_env(dotenv: dict[str, str]) -> dict[str, str]:
    """The gateway service's environment as compose passes it to the container."""
    service = yaml.safe_load(COMPOSE.read_text())["services"]["gateway"]
    env: dict[str, str] = {}
    for name, value in service["environment"].items():
        if value is None:  # passed through from .env when set there
            if name in dotenv:
                env[name] = dotenv[name]
            continue
        env[name] = interpolate(str(value), dotenv)
    return env


def dockerfile_env() -> dict[str, str]:
    """The ENV of the Dockerfile's last stage (KEY=VALUE pairs, continuation lines joined)."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    final = text[text.rindex("\nFROM ") :]
    env: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def check_config(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`responses-gateway check-config` with only `env` (and PATH, HOME) in its environment."""
    gateway = harness.binary("GATEWAY_BIN", "responses-gateway")
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), **env}
    return subprocess.run([str(gateway), "check-config"], env=full, capture_output=True, text=True, timeout=60)


def loaded(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    r = check_config(env, tmp_path)
    assert r.returncode == 0, f"check-config refused the compose configuration:\n{r.stderr}"
    return json.loads(r.stdout)


@pytest.mark.parametrize("client_key", [None, "sk-test-client-key"], ids=["open", "with-key"])
def test_compose_environment_is_the_configuration_it_claims(client_key: str | None, tmp_path: Path) -> None:
    dotenv = dict(DOTENV)
    if client_key:
        dotenv["GATEWAY_API_KEY"] = client_key
    env = {**dockerfile_env(), **compose_env(dotenv)}
    assert all(k.startswith("RESPONSES_GATEWAY_") for k in dockerfile_env())
    c = loaded(env, tmp_path)
    assert c["server"]["listen"] == "0.0.0.0:8080"
    assert c["server"]["data_dir"] == "/var/lib/responses-gateway"
    assert c["upstream"]["url"] == "http://host.docker.internal:8000/v1"
    assert c["upstream"]["api"] == "chat"
    assert c["upstream"]["api_key_env"] == "UPSTREAM_API_KEY"
    assert c["store"]["backend"] == "postgres"
    assert c["store"]["url_env"] == "GATEWAY_DATABASE_URL"
    assert env["GATEWAY_DATABASE_URL"] == "postgres://gateway:pw-placeholder@postgres:5432/gateway"
    assert c["web_search"]["backend"] == "http"
    assert c["web_search"]["http"]["url"] == "http://searxng:8080/search"
    assert c["metrics"]["enabled"] is True
    if client_key:
        assert [k["env"] for k in c["auth"]["keys"]] == ["GATEWAY_API_KEY"]
        assert env["GATEWAY_API_KEY"] == client_key
    else:
        assert c["auth"]["keys"] == []
        assert "GATEWAY_API_KEY" not in env


def test_a_misspelt_setting_would_be_caught(tmp_path: Path) -> None:
    env = {**dockerfile_env(), **compose_env(DOTENV), "RESPONSES_GATEWAY_STORE__BACKNED": "postgres"}
    r = check_config(env, tmp_path)
    assert r.returncode != 0 and "backned" in r.stderr.lower(), r.stderr


def test_compose_needs_the_secrets_from_dotenv() -> None:
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        compose_env({})


def test_env_example_lists_every_compose_variable() -> None:
    used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", COMPOSE.read_text()))
    listed = set(re.findall(r"^#?\s*([A-Z_][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.M))
    assert used <= listed, f"not in .env.example: {sorted(used - listed)}"
    assert listed <= used, f"in .env.example but unused by compose.yaml: {sorted(listed - used)}"


def test_searxng_settings_enable_json() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    mount = next(v for v in services["searxng"]["volumes"] if v.split(":")[1] == "/etc/searxng/settings.yml")
    settings = yaml.safe_load((ROOT / mount.split(":")[0]).read_text())
    assert "json" in settings["search"]["formats"]


def test_dockerfile_healthcheck_passes_against_the_gateway(gateway: harness.Gateway) -> None:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    m = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])\s*$", text, re.M)
    assert m, "no HEALTHCHECK ... CMD [...] in the Dockerfile"
    argv = json.loads(m.group(1))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env["RESPONSES_GATEWAY_SERVER__LISTEN"] = f"0.0.0.0:{gateway.port}"
    assert subprocess.run(argv, env=env, timeout=10).returncode == 0
    env["RESPONSES_GATEWAY_SERVER__LISTEN"] = f"0.0.0.0:{harness.free_port()}"
    assert subprocess.run(argv, env=env, timeout=10, stderr=subprocess.DEVNULL).returncode != 0
