#!/usr/bin/env python3
"""Record real llama.cpp chat-completions response bodies as parser test data.

Writes, byte for byte as llama.cpp sent them (HTTP framing removed):
  llamacpp_text.sse       streamed plain answer (max_tokens 40, ends on "length")
  llamacpp_tool_call.sse  streamed get_weather tool call
  llamacpp_tool_call.json non-streamed get_weather tool call
All requests: temperature 0, streams with stream_options.include_usage = true.

Usage: record.py --base-url http://127.0.0.1:PORT [--out crates/gateway/tests/integration/data]
Uses only the standard library.
"""

import argparse
import http.client
import json
import os
import sys
import urllib.parse

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
WEATHER_PROMPT = "What's the weather in Paris? Use the tool."


def post(base_url: str, body: dict) -> bytes:
    u = urllib.parse.urlsplit(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)
    path = u.path.rstrip("/") + "/chat/completions"
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if resp.status != 200:
        sys.exit(f"record.py: {path} answered {resp.status}: {data[:500]!r}")
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True, help="llama.cpp OpenAI base URL, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--out", default="crates/gateway/tests/integration/data")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    common = {"model": "smollm2", "temperature": 0}
    stream = {"stream": True, "stream_options": {"include_usage": True}}
    jobs = {
        "llamacpp_text.sse": {
            **common, **stream, "max_tokens": 40,
            "messages": [{"role": "user", "content": "Describe Paris in two sentences."}],
        },
        "llamacpp_tool_call.sse": {
            **common, **stream,
            "messages": [{"role": "user", "content": WEATHER_PROMPT}],
            "tools": [WEATHER_TOOL],
        },
        "llamacpp_tool_call.json": {
            **common,
            "messages": [{"role": "user", "content": WEATHER_PROMPT}],
            "tools": [WEATHER_TOOL],
        },
    }
    for name, body in jobs.items():
        data = post(args.base_url, body)
        path = os.path.join(args.out, name)
        with open(path, "wb") as f:
            f.write(data)
        print(f"record.py: wrote {path} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
