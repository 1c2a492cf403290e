"""Step (f) of smoke.py: the gateway-owned file_search against the gateway's embedded
vector store, through a function-only llama.cpp server.

Uploads a small document (client.files.create), creates a vector store, attaches the file
and waits for `completed`, then asks with only {"type":"file_search"} declared and forced
(tool_choice {"type":"file_search"}), include ["file_search_call.results"], temperature 0,
max_output_tokens 300: once streamed as raw SSE and once with responses.create. Prints the
query the model wrote, the file_search_call with its results, the answer and its
file_citation annotations. Asserted: the file_search_call lifecycle (added with queries []
and results null; in_progress -> searching -> completed only on success -> done); a
completed call has the model's queries and results naming the uploaded file; every
file_citation names the uploaded file at an index inside the text; the turn ends completed
with a message or incomplete at max_output_tokens; every event and response validates with
tests/python/validate.py. The small model's query and answer are reported, not asserted.
"""

from __future__ import annotations

import time

DOC_NAME = "cafes.md"
DOC = (
    "# Zurich cafes\n\n"
    "Cafe Schober, opened in 1842 in the Niederdorf, is the oldest cafe in Zurich. "
    "It is famous for its hot chocolate and opens at 8 every morning.\n"
)
QUESTION = "Search my files: which cafe is the oldest in Zurich?"
MAX_OUTPUT_TOKENS = 300


def check_item_events(events: list, problems: list, show) -> list:
    """The file_search_call lifecycle; returns the done items."""
    done_items = []
    for a in [e for e in events if e.get("type") == "response.output_item.added" and e["item"].get("type") == "file_search_call"]:
        oi, item = a["output_index"], a["item"]
        if item.get("queries") != [] or item.get("results") is not None or item.get("status") != "in_progress":
            problems.append(f"stream: file_search_call added as {item}")
        mine = [e.get("type") for e in events if e.get("output_index") == oi]
        done = [e["item"] for e in events if e.get("type") == "response.output_item.done" and e.get("output_index") == oi]
        status = done[0].get("status") if done else None
        want = ["response.output_item.added", "response.file_search_call.in_progress", "response.file_search_call.searching"]
        want += ["response.file_search_call.completed"] if status == "completed" else []
        want += ["response.output_item.done"]
        show(f"search item {oi}", " -> ".join(t.removeprefix("response.") for t in mine))
        if mine != want:
            problems.append(f"stream: file_search_call events {mine}, want {want}")
        done_items += done
    return done_items


def check_output(output: list, file_id: str, problems: list, where: str, show) -> bool:
    searched = False
    for i, item in enumerate(output):
        t = item.get("type")
        if t == "file_search_call":
            show(f"[{i}] file_search_call", f"id={item.get('id')} status={item.get('status')}")
            show("    queries", item.get("queries"))
            for r in item.get("results") or []:
                show("    result", f"file_id={r.get('file_id')} filename={r.get('filename')!r} score={r.get('score'):.3f} "
                                  f"text={r.get('text', '')[:80]!r}")
            if item.get("status") == "completed":
                searched = True
                if not item.get("queries") or not all(isinstance(q, str) and q for q in item["queries"]):
                    problems.append(f"{where}: completed call without queries: {item}")
                if any(r.get("file_id") != file_id for r in item.get("results") or []):
                    problems.append(f"{where}: a result names another file: {item.get('results')}")
            elif item.get("status") != "failed":
                problems.append(f"{where}: file_search_call status {item.get('status')!r}")
        elif t == "message":
            text = "".join(c.get("text", "") for c in item.get("content") or [] if c.get("type") == "output_text")
            anns = [a for c in item.get("content") or [] if c.get("type") == "output_text" for a in c.get("annotations") or []]
            show(f"[{i}] message", f"phase={item.get('phase')} status={item.get('status')}")
            show("    text", repr(text))
            show("    annotations", [f"{a.get('type')} {a.get('filename')} @{a.get('index')}" for a in anns])
            for a in anns:
                if a.get("type") != "file_citation" or a.get("file_id") != file_id or not 0 <= a.get("index", -1) <= len(text):
                    problems.append(f"{where}: bad annotation {a} for text of {len(text)} chars")
        else:
            show(f"[{i}] {t}", str(item)[:200])
    return searched


def check_end(resp: dict, output: list, problems: list, where: str, show) -> None:
    status, details = resp.get("status"), resp.get("incomplete_details")
    if status == "completed":
        if not output or output[-1].get("type") != "message":
            problems.append(f"{where}: completed without a final message")
    elif status == "incomplete" and details == {"reason": "max_output_tokens"}:
        show("note", "the answer (or a run-on call, never executed) used up max_output_tokens")
    else:
        problems.append(f"{where}: status {status!r} {details} {resp.get('error')}")


def step_file_search(client, model: str, base_url: str, timeout: float, V, post_raw, squeeze, show, check) -> None:
    problems: list = []
    t0 = time.monotonic()
    f = client.files.create(file=(DOC_NAME, DOC.encode()), purpose="assistants")
    vs = client.vector_stores.create(name="smoke")
    vsf = client.vector_stores.files.create_and_poll(vector_store_id=vs.id, file_id=f.id)
    show("ingested", f"{f.id} into {vs.id}: {vsf.status} in {time.monotonic() - t0:.2f}s")
    check(vsf.status == "completed", f"vector store file status {vsf.status}: {vsf.last_error}")
    request = {"model": model, "input": QUESTION, "tools": [{"type": "file_search", "vector_store_ids": [vs.id]}],
               "tool_choice": {"type": "file_search"}, "include": ["file_search_call.results"],
               "temperature": 0, "max_output_tokens": MAX_OUTPUT_TOKENS, "store": False}
    show("question", QUESTION)
    searched = False

    print("    -- streamed (raw SSE)", flush=True)
    t0 = time.monotonic()
    status, text = post_raw(base_url, {**request, "stream": True}, timeout)
    check(status == 200, f"streaming request: HTTP {status}: {text[:2000]}")
    parsed = V.parse_sse(text)
    events, framing = V.sse_json_events(parsed)
    problems += [f"stream framing: {p}" for p in framing]
    show("took", f"{time.monotonic() - t0:.1f}s")
    show("events", squeeze([e.get("type") for e in events]))
    check_item_events(events, problems, show)
    resp = (events[-1] if events else {}).get("response") or {}
    output = resp.get("output") or []
    searched |= check_output(output, f.id, problems, "stream", show)
    check_end(resp, output, problems, "stream", show)
    try:
        V.validate_stream(events)
        show("validation", "stream: SDK (strict) + Open Responses + invariants OK")
    except V.ValidationFailure as e:
        problems.append(f"stream validation: {str(e)[:1500]}")

    print("    -- non-streaming (SDK responses.create, raw body validated)", flush=True)
    t0 = time.monotonic()
    raw = client.responses.with_raw_response.create(**request)
    body = raw.http_response.json()
    raw.parse()
    show("took", f"{time.monotonic() - t0:.1f}s")
    output = body.get("output") or []
    searched |= check_output(output, f.id, problems, "create", show)
    check_end(body, output, problems, "create", show)
    try:
        V.validate_response(body)
        show("validation", "create: SDK (strict) + Open Responses OK")
    except V.ValidationFailure as e:
        problems.append(f"create validation: {str(e)[:1500]}")
    client.vector_stores.delete(vs.id)
    client.files.delete(f.id)
    if not searched:
        show("note", "the model never completed a file_search call (its calls ran on): nothing searched")
    check(not problems, "\n      - " + "\n      - ".join(problems))
