"""The gateway's file_search against a real OGX vector store (scripts/real-ogx.sh).

1. Ingests two small documents through OGX's own Files + Vector Stores API
   (POST /v1/files multipart purpose=assistants -> POST /v1/vector_stores ->
   POST /v1/vector_stores/{id}/files) and shows one raw OGX search hit.
2. Queues two answers on the scripted model server: a `file_search` call with
   {"queries": [...]}, then text citing 【1】.
3. Calls the gateway with the official openai SDK (non-streamed, then streamed) with
   tools=[{"type":"file_search","vector_store_ids":[vs_id]}] and
   include=["file_search_call.results"], prints the file_search_call item, the answer and
   its file_citation annotations, and the stream's event types.
4. An unknown vector store id must get a 400 from the gateway before any model call.

Prints a transcript; exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import httpx
import openai
from openai import OpenAI

QUERY = "When does Project Aurora launch?"
DOCS = {
    "aurora-launch.md": (
        "# Project Aurora\n\n"
        "Project Aurora is the orbital weather-satellite programme of the Northwind Institute.\n"
        "The Aurora satellite launches on 14 March 2027 from the Andøya spaceport, on a "
        "Vega-C rocket. The launch window opens at 09:40 UTC and lasts forty minutes.\n"
    ),
    "basil-care.txt": (
        "Growing basil indoors\n\n"
        "Basil wants six hours of sun a day and soil that is moist but never soggy. Pinch the "
        "flower buds off so the plant keeps producing leaves. Harvest from the top.\n"
    ),
}
ANSWER = ["Project Aurora launches on 14 March 2027", " from the Andøya spaceport.", "【1】"]

FAILURES: list[str] = []
TIMINGS: dict[str, float] = {}


def say(msg: str = "") -> None:
    print(msg, flush=True)


def section(title: str) -> None:
    say()
    say(f"---- {title}")


def check(ok: bool, what: str) -> bool:
    say(f"  [{'ok' if ok else 'FAIL'}] {what}")
    if not ok:
        FAILURES.append(what)
    return ok


def show(label: str, value) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False) if not isinstance(value, str) else value
    say(f"  {label}:")
    for line in text.splitlines():
        say(f"    {line}")


def short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# ------------------------------------------------------------------ OGX ingest
def ingest(ogx: str) -> tuple[str, dict[str, str]]:
    section(f"ingest into OGX ({ogx})")
    http = httpx.Client(base_url=ogx, timeout=300)
    t0 = time.monotonic()
    ids: dict[str, str] = {}
    for name, text in DOCS.items():
        r = http.post(
            "/files",
            files={"file": (name, text.encode(), "text/markdown" if name.endswith(".md") else "text/plain")},
            data={"purpose": "assistants"},
        )
        ok = check(r.status_code == 200, f"POST /v1/files {name} -> {r.status_code}")
        if not ok:
            show("body", r.text)
            raise SystemExit(1)
        f = r.json()
        ids[name] = f["id"]
        say(f"    id={f['id']} bytes={f.get('bytes')} purpose={f.get('purpose')}")
        check(f["id"].startswith("file-"), f"OGX file id {f['id']} starts with file-")
    r = http.post("/vector_stores", json={"name": "real-ogx-demo"})
    if not check(r.status_code == 200, f"POST /v1/vector_stores -> {r.status_code}"):
        show("body", r.text)
        raise SystemExit(1)
    vs = r.json()
    vs_id = vs["id"]
    say(f"    id={vs_id} name={vs.get('name')} status={vs.get('status')}")
    for name, fid in ids.items():
        t1 = time.monotonic()
        r = http.post(f"/vector_stores/{vs_id}/files", json={"file_id": fid})
        if not check(r.status_code == 200, f"POST /v1/vector_stores/{vs_id}/files {{file_id: {fid}}} -> {r.status_code}"):
            show("body", r.text)
            raise SystemExit(1)
        vf = r.json()
        # OGX answers `completed` at once; poll anyway in case a version does not.
        deadline = time.monotonic() + 120
        while vf.get("status") == "in_progress" and time.monotonic() < deadline:
            time.sleep(0.5)
            vf = http.get(f"/vector_stores/{vs_id}/files/{fid}").json()
        say(f"    {name}: status={vf.get('status')} last_error={vf.get('last_error')} ({time.monotonic() - t1:.1f}s)")
        check(vf.get("status") == "completed", f"{name} attached with status completed")
    TIMINGS["ingest (2 uploads + store + 2 attaches)"] = time.monotonic() - t0

    # One raw OGX search, to show what the gateway has to cope with.
    t1 = time.monotonic()
    r = http.post(f"/vector_stores/{vs_id}/search", json={"query": QUERY, "max_num_results": 3})
    TIMINGS["direct OGX search"] = time.monotonic() - t1
    check(r.status_code == 200, f"POST /v1/vector_stores/{vs_id}/search (direct) -> {r.status_code}")
    page = r.json()
    say(f"    search_query={json.dumps(page.get('search_query'))} hits={len(page.get('data') or [])}")
    for h in page.get("data") or []:
        say(
            f"    raw hit: file_id={h.get('file_id')} attributes.file_id={(h.get('attributes') or {}).get('file_id')}"
            f" filename={h.get('filename')} score={h.get('score')}"
        )
    check(bool(page.get("data")), "the direct OGX search finds something")
    return vs_id, ids


# ------------------------------------------------------------------ model script
def queue_scripts(upstream: str) -> None:
    """Reset the scripted model and queue: a file_search call, then the cited answer."""
    http = httpx.Client(base_url=upstream, timeout=10)
    http.post("/_control/reset").raise_for_status()
    scripts = [
        {"tool_calls": [{"name": "file_search", "arguments": json.dumps({"queries": [QUERY]})}]},
        {"text": ANSWER},
    ]
    http.post("/_control/scripts", json=scripts).raise_for_status()


def recorded(upstream: str) -> list:
    return httpx.get(f"{upstream}/_control/requests", timeout=10).json()


def check_model_saw(upstream: str, doc: str) -> None:
    reqs = recorded(upstream)
    check(len(reqs) == 2, f"the model was called twice (tool call, then answer): {len(reqs)}")
    if len(reqs) < 2:
        return
    first = reqs[0]["body"]
    names = [t.get("function", {}).get("name") for t in first.get("tools") or []]
    check(names == ["file_search"], f"the model was offered the function file_search: {names}")
    tool_msgs = [m for m in reqs[1]["body"].get("messages", []) if m.get("role") == "tool"]
    content = tool_msgs[0].get("content") if tool_msgs else ""
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content)
    say(f"    tool output the model read (first 300 chars): {short(content or '', 300)}")
    check(f"【1†{doc}】" in (content or ""), f"the tool output heads chunk 1 as 【1†{doc}】")
    check("14 March 2027" in (content or ""), "the tool output holds the document text")


# ------------------------------------------------------------------ checks on a Response
def check_response(resp, vs_ids: dict[str, str], label: str) -> None:
    items = resp.output
    say(f"  response {resp.id} status={resp.status} items={[i.type for i in items]}")
    check(resp.status == "completed", f"{label}: response status completed")
    fsc = [i for i in items if i.type == "file_search_call"]
    # A streamed turn also carries the gateway's progress note ("Searching files for …"),
    # a message with phase "commentary"; the answer is the other message.
    progress = [i for i in items if i.type == "message" and getattr(i, "phase", None) == "commentary"]
    msgs = [i for i in items if i.type == "message" and i not in progress]
    for m in progress:
        say(f"  progress message (phase commentary): {m.content[0].text!r}")
    if not check(len(fsc) == 1, f"{label}: one file_search_call item"):
        return
    call = fsc[0]
    say(f"  file_search_call {call.id}: status={call.status} queries={call.queries}")
    results = call.results or []
    for n, r in enumerate(results, 1):
        say(
            f"    result {n}: file_id={r.file_id} filename={r.filename} score={r.score:.4f}"
            f" attributes={json.dumps(r.attributes, ensure_ascii=False)}"
        )
        say(f"              text={short(r.text or '')!r}")
    check(call.status == "completed", f"{label}: file_search_call status completed")
    check(call.queries == [QUERY], f"{label}: queries == [{QUERY!r}]")
    check(len(results) >= 1, f"{label}: results present (include=file_search_call.results)")
    real_ids = set(vs_ids.values())
    check(all(r.file_id in real_ids for r in results), f"{label}: every result file_id is a real file-… id from the upload")
    check(all(r.file_id.startswith("file-") for r in results), f"{label}: no OGX internal document UUID as file_id")
    check(all(r.filename in DOCS for r in results), f"{label}: every result filename is an uploaded name")
    check(all(0.0 <= r.score <= 1.0 for r in results), f"{label}: every score in [0, 1]")
    check(all((r.text or "").strip() for r in results), f"{label}: every result has text")
    if results:
        check(
            results[0].file_id == vs_ids["aurora-launch.md"],
            f"{label}: top result is aurora-launch.md ({results[0].filename})",
        )
    if not check(len(msgs) == 1, f"{label}: one message item"):
        return
    part = msgs[0].content[0]
    say(f"  message text: {part.text!r}")
    anns = [a.model_dump() for a in part.annotations]
    show("annotations", anns)
    check("【" not in part.text, f"{label}: the 【1】 marker is removed from the text")
    cites = [a for a in anns if a.get("type") == "file_citation"]
    check(len(cites) == 1, f"{label}: one file_citation annotation")
    if cites:
        c = cites[0]
        check(c.get("file_id") == vs_ids["aurora-launch.md"], f"{label}: file_citation.file_id is aurora-launch.md's file id")
        check(c.get("filename") == "aurora-launch.md", f"{label}: file_citation.filename is aurora-launch.md")
        check(c.get("index") == len(part.text), f"{label}: file_citation.index {c.get('index')} == len(text) {len(part.text)}")
    check(part.text.startswith("Project Aurora launches"), f"{label}: the answer message holds the model's text")
    if progress:
        say(f"  note: the SDK's output_text joins every message, the progress note too: {resp.output_text!r}")


# ------------------------------------------------------------------ main
def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ogx-url", required=True, help="OGX base URL including /v1")
    ap.add_argument("--gateway-url", required=True, help="gateway base URL including /v1")
    ap.add_argument("--upstream-url", required=True, help="scripted-upstream origin (control API)")
    args = ap.parse_args()

    vs_id, ids = ingest(args.ogx_url)
    client = OpenAI(base_url=args.gateway_url, api_key="unused", timeout=120, max_retries=0)
    tools = [{"type": "file_search", "vector_store_ids": [vs_id]}]

    section("gateway, non-streamed: responses.create(tools=[file_search], include=[file_search_call.results])")
    queue_scripts(args.upstream_url)
    t0 = time.monotonic()
    resp = client.responses.create(
        model="scripted", input=QUERY, tools=tools, include=["file_search_call.results"], store=False
    )
    TIMINGS["gateway turn, non-streamed (search + 2 model calls)"] = time.monotonic() - t0
    check_response(resp, ids, "non-streamed")
    check_model_saw(args.upstream_url, "aurora-launch.md")

    section("gateway, streamed: the same request with stream=True")
    queue_scripts(args.upstream_url)
    t0 = time.monotonic()
    types: list[str] = []
    final = None
    with client.responses.create(
        model="scripted", input=QUERY, tools=tools, include=["file_search_call.results"], store=False, stream=True
    ) as stream:
        for ev in stream:
            types.append(ev.type)
            if ev.type in ("response.completed", "response.failed", "response.incomplete"):
                final = ev.response
    TIMINGS["gateway turn, streamed"] = time.monotonic() - t0
    collapsed: list[str] = []
    for t in types:
        if collapsed and collapsed[-1].split(" ×")[0] == t:
            n = int(collapsed[-1].split(" ×")[1]) + 1 if " ×" in collapsed[-1] else 2
            collapsed[-1] = f"{t} ×{n}"
        else:
            collapsed.append(t)
    say("  event types, in order:")
    for t in collapsed:
        say(f"    {t}")
    want = [
        "response.created",
        "response.output_item.added",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.output_item.done",
        "response.output_text.delta",
        "response.completed",
    ]
    pos, ok = 0, True
    for t in types:
        if pos < len(want) and t == want[pos]:
            pos += 1
    ok = pos == len(want)
    check(ok, "stream has created → item.added → file_search_call in_progress → searching → completed → item.done → text deltas → completed, in that order")
    check(types.count("response.file_search_call.searching") == 1, "one searching event")
    if check(final is not None, "the stream ended with a terminal response"):
        check_response(final, ids, "streamed")

    section("gateway: an unknown vector store id")
    # Queue the same two answers: if the gateway let the request through, the transcript
    # shows what the search against the unknown store then did.
    queue_scripts(args.upstream_url)
    bogus = "vs_does_not_exist_0000"
    t0 = time.monotonic()
    try:
        resp = client.responses.create(
            model="scripted",
            input=QUERY,
            tools=[{"type": "file_search", "vector_store_ids": [bogus]}],
            include=["file_search_call.results"],
            store=False,
        )
        check(False, "unknown store id: expected a 400, got a response")
        say(f"  got response {resp.id} status={resp.status}:")
        for i in resp.output:
            say(f"    {short(json.dumps(i.model_dump(exclude_none=True), ensure_ascii=False), 400)}")
    except openai.BadRequestError as e:
        body = e.body if isinstance(e.body, dict) else {}
        err = body.get("error", body) if isinstance(body, dict) else {}
        say(f"  HTTP {e.status_code}: {json.dumps(err, ensure_ascii=False)}")
        check(e.status_code == 400, "unknown store id: HTTP 400")
        check((err or {}).get("type") == "invalid_request_error", "unknown store id: type invalid_request_error")
        check(bogus in json.dumps(err), "unknown store id: the message names the id")
    except openai.APIStatusError as e:
        check(False, f"unknown store id: expected 400, got {e.status_code}: {e.body}")
    TIMINGS["gateway, unknown store id"] = time.monotonic() - t0
    check(len(recorded(args.upstream_url)) == 0, "unknown store id: no model call was made")
    # Asked after the gateway (OGX may be slow right after an exception it logs).
    raw = httpx.get(f"{args.ogx_url}/vector_stores/{bogus}", timeout=60)
    say(f"  (OGX itself: GET /v1/vector_stores/{bogus} -> HTTP {raw.status_code} {raw.text})")

    section("timings")
    for k, v in TIMINGS.items():
        say(f"  {k}: {v * 1000:.0f} ms")

    section("result")
    if FAILURES:
        say(f"  {len(FAILURES)} check(s) FAILED:")
        for f in FAILURES:
            say(f"    - {f}")
        return 1
    say("  all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
