#!/usr/bin/env python3
"""The quickstart's steps that talk to the gateway, through its public API with the official
openai SDK (scripts/quickstart.sh runs them in the quickstart venv).

  stack.py seed  --base-url URL --doc PATH   uploads PATH (POST /v1/files), creates the vector
                                             store "quickstart" with it (POST /v1/vector_stores),
                                             waits until it is indexed; prints the store's id
  stack.py model --base-url URL              prints the first model the gateway lists
  stack.py snippet --base-url URL --model M  prints the SDK snippet the quickstart shows
  stack.py check --base-url URL --model M [--readme README.md]
                                             the whole stack: a search of the store, a streamed
                                             answer, then the printed snippet part by part (a
                                             plain answer, a call of the gateway's
                                             package_version tool, a file_search), each timed;
                                             with --readme also README's Python examples (its
                                             URL's port swapped for this gateway's). Exit 0
                                             when all work
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import time
import traceback

from openai import OpenAI

STORE_NAME = "quickstart"
# The snippet's head and its parts, as printed (BASE and MODEL filled in). The check runs
# exactly this text, part by part, and then looks at what each part left in `r`.
HEAD = """\
from openai import OpenAI
client = OpenAI(base_url="{base}", api_key="unused")
"""
PARTS = [
    ("a plain answer", """\
# A plain answer. temperature=0: the model's likeliest words, much the same each time.
r = client.responses.create(model="{model}", input="Say hello in five words.", temperature=0)
print(r.output_text)
"""),
    ("a tool the gateway runs (package_version)", """\
# A tool the gateway runs: package_version, named in tool_choice so that the model calls it;
# max_tool_calls=1: after one call the model answers from its output.
tool = {{"type": "custom", "name": "package_version"}}
question = "Look up the installed version of responses-gateway and tell me."
r = client.responses.create(model="{model}", input=question, tools=[tool], tool_choice=tool,
                            max_tool_calls=1, temperature=0)
call = next(i for i in r.output if i.type == "custom_tool_call")
result = next(i for i in r.output if i.type == "custom_tool_call_output")
print(call.input, "->", result.output)
print(r.output_text)
"""),
    ("file_search on the quickstart's vector store", """\
# file_search on the quickstart's vector store, named in tool_choice so that the model searches;
# the results show what it found, and the answer's citations (file_citation annotations) are
# where the model cited them.
store = next(s for s in client.vector_stores.list() if s.name == "quickstart")
r = client.responses.create(model="{model}", input="Search my files for: quickstart mascot",
                            tools=[{{"type": "file_search", "vector_store_ids": [store.id]}}],
                            tool_choice={{"type": "file_search"}}, max_tool_calls=1, temperature=0,
                            max_output_tokens=100, include=["file_search_call.results"])
search = next(i for i in r.output if i.type == "file_search_call")
print(search.queries, "->", [(hit.filename, round(hit.score, 2)) for hit in search.results or []])
print(r.status, r.output_text)
print("citations:", [(a.filename, a.index) for m in r.output if m.type == "message"
                     for c in m.content for a in c.annotations])
"""),
]


def snippet(base: str, model: str) -> str:
    return "\n".join([HEAD.format(base=base)] + [p.format(model=model) for _, p in PARTS])


def seed(client: OpenAI, doc: str) -> str:
    with open(doc, "rb") as f:
        uploaded = client.files.create(file=f, purpose="assistants")
    store = client.vector_stores.create(name=STORE_NAME, file_ids=[uploaded.id])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        store = client.vector_stores.retrieve(store.id)
        if store.file_counts.completed == 1:
            return store.id
        if store.file_counts.failed:
            sys.exit(f"stack.py: indexing {doc} failed")
        time.sleep(0.2)
    sys.exit(f"stack.py: {doc} was not indexed within 60 s")


def first_model(client: OpenAI) -> str:
    models = [m.id for m in client.models.list()]
    if not models:
        sys.exit("stack.py: the gateway lists no models (GET /v1/models): name one with --model-name")
    return models[0]


def run(code: str, ns: dict, what: str) -> float:
    """Runs `code` in `ns`, printing its output indented; returns the seconds it took."""
    out = io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"<{what}>", "exec"), ns)  # noqa: S102 - the snippet we print
    except Exception:
        print(out.getvalue(), end="")
        print(f"check: {what} FAILED:\n{code}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    took = time.monotonic() - started
    for line in out.getvalue().rstrip("\n").splitlines():
        print(f"    | {line}")
    return took


def check_parts(base: str, model: str) -> None:
    """The printed snippet, part by part, with what each part must have done."""
    ns: dict = {}
    run(HEAD.format(base=base), ns, "the snippet's head")
    for (what, part), verify in zip(PARTS, [verify_answer, verify_tool, verify_search]):
        took = run(part.format(model=model), ns, what)
        verify(ns["r"])
        print(f"check: {what}: {ns['r'].status} in {took:.1f} s")


def verify_answer(r) -> None:
    assert r.output_text.strip(), f"the answer is empty ({r.status})"


def verify_tool(r) -> None:
    # The gateway ran the model's call (the output may be an error for a name the model
    # made up: that is the model's answer, not the stack's failure).
    outputs = [i for i in r.output if i.type == "custom_tool_call_output"]
    assert outputs and outputs[0].output, f"no output of the gateway's package_version: {r.output}"


def verify_search(r) -> None:
    search = next(i for i in r.output if i.type == "file_search_call")
    assert search.status == "completed", f"the file_search_call is {search.status}"


def readme_examples(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)


def check(client: OpenAI, base: str, model: str, readme: str | None) -> None:
    hits = client.vector_stores.search(next(s for s in client.vector_stores.list() if s.name == STORE_NAME).id,
                                       query="capybara mascot")
    assert hits.data, "the seeded store found nothing"
    print(f"check: vector store search -> {hits.data[0].filename} (score {hits.data[0].score:.3f})")
    # The terminal event's Response: `completed`, or `incomplete` when the answer runs past
    # max_output_tokens (the SDK's get_final_response() takes only the former).
    final = None
    started = time.monotonic()
    with client.responses.stream(model=model, input="Say hello in five words.", max_output_tokens=40) as s:
        for event in s:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    assert final is not None, "the stream ended without a terminal event"
    assert final.status in ("completed", "incomplete"), final.status
    assert final.output_text.strip(), "the streamed answer is empty"
    print(f"check: streamed answer ({final.status}) in {time.monotonic() - started:.1f} s: {final.output_text.strip()!r}")
    check_parts(base, model)
    if readme:
        printed = snippet("http://127.0.0.1:8080/v1", model)
        port = re.search(r":(\d+)/v1$", base)
        for i, example in enumerate(readme_examples(readme)):
            if example == printed:
                print(f"check: {readme}'s Python example {i + 1} is the snippet checked above")
                continue
            took = run(example.replace("127.0.0.1:8080", f"127.0.0.1:{port.group(1) if port else '8080'}"), {},
                       f"{readme}'s Python example {i + 1}")
            print(f"check: {readme}'s Python example {i + 1} ran in {took:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["seed", "model", "snippet", "check"])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--doc")
    ap.add_argument("--model")
    ap.add_argument("--readme")
    args = ap.parse_args()
    client = OpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=300)
    if args.step == "seed":
        print(seed(client, args.doc))
    elif args.step == "model":
        print(first_model(client))
    elif args.step == "snippet":
        print(snippet(args.base_url, args.model), end="")
    else:
        check(client, args.base_url, args.model, args.readme)


if __name__ == "__main__":
    main()
