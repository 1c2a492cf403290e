#!/usr/bin/env python3
"""The quickstart's steps that talk to the gateway, through its public API with the official
openai SDK (scripts/quickstart.sh runs them in the quickstart venv).

  stack.py seed  --base-url URL --doc PATH   uploads PATH (POST /v1/files), creates a vector
                                             store with it (POST /v1/vector_stores), waits
                                             until it is indexed; prints the store's id
  stack.py check --base-url URL --store ID   one request through the whole stack: a search
                                             of the store, a streamed and a plain answer of
                                             the real model; exit 0 when all work
"""

from __future__ import annotations

import argparse
import sys
import time

from openai import OpenAI

MODEL = "smollm2"


def seed(client: OpenAI, doc: str) -> str:
    with open(doc, "rb") as f:
        uploaded = client.files.create(file=f, purpose="assistants")
    store = client.vector_stores.create(name="quickstart", file_ids=[uploaded.id])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        store = client.vector_stores.retrieve(store.id)
        if store.file_counts.completed == 1:
            return store.id
        if store.file_counts.failed:
            sys.exit(f"stack.py: indexing {doc} failed")
        time.sleep(0.2)
    sys.exit(f"stack.py: {doc} was not indexed within 60 s")


def check(client: OpenAI, store: str) -> None:
    hits = client.vector_stores.search(store, query="capybara mascot")
    assert hits.data, "the seeded store found nothing"
    print(f"check: vector store search -> {hits.data[0].filename} (score {hits.data[0].score:.3f})")
    # The terminal event's Response: `completed`, or `incomplete` when the small model's
    # answer runs past max_output_tokens (the SDK's get_final_response() takes only the
    # former).
    final = None
    with client.responses.stream(model=MODEL, input="Say hello in five words.", max_output_tokens=40) as s:
        for event in s:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    assert final is not None, "the stream ended without a terminal event"
    assert final.status in ("completed", "incomplete"), final.status
    assert final.output_text.strip(), "the streamed answer is empty"
    print(f"check: streamed answer ({final.status}): {final.output_text.strip()!r}")
    r = client.responses.create(model=MODEL, input="What is 2 + 2?", max_output_tokens=40)
    assert r.output_text.strip(), "the answer is empty"
    print(f"check: answer ({r.status}): {r.output_text.strip()!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["seed", "check"])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--doc")
    ap.add_argument("--store")
    args = ap.parse_args()
    client = OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=120)
    if args.step == "seed":
        print(seed(client, args.doc))
    else:
        check(client, args.store)


if __name__ == "__main__":
    main()
