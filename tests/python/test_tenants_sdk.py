"""Tenants (issue 20): each API key belongs to a project, and every stored object (responses
and their input items, conversations and their items, files, vector stores) is visible only
to its project. Another project's id answers exactly as an unknown id: the same status,
code and message. Run by scripts/test.sh on SQLite and again on PostgreSQL (the store pass
sets RESPONSES_GATEWAY_STORE__BACKEND=postgres)."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

import harness

KEY_A1 = "sk-tenant-a-one-0123456789"
KEY_A2 = "sk-tenant-a-two-0123456789"
KEY_B = "sk-tenant-b-0123456789abcd"


@pytest.fixture(scope="module")
def tenants(upstream_server: harness.Upstream, tmp_path_factory: pytest.TempPathFactory):
    """A gateway with two keys of project team-a and one of team-b."""
    gw = harness.start_keyed_gateway(upstream_server.base_url, tmp_path_factory.mktemp("tenants"),
                                     [("team-a", KEY_A1), ("team-a", KEY_A2), ("team-b", KEY_B)])
    yield gw
    gw.close()
    gw.proc.stop()


def client(gw: harness.Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.api_base, api_key=key, max_retries=0, timeout=30)


def raw(gw: harness.Gateway, key: str, method: str, path: str, **kw) -> httpx.Response:
    return httpx.request(method, f"{gw.api_base}{path}", headers={"authorization": f"Bearer {key}"}, timeout=30, **kw)


def same_as_unknown(gw: harness.Gateway, method: str, path: str, real_id: str, fake_id: str, **kw) -> None:
    """Project B asking for A's object gets exactly what it gets for an id nobody has."""
    theirs = raw(gw, KEY_B, method, path.format(real_id), **kw)
    unknown = raw(gw, KEY_B, method, path.format(fake_id), **kw)
    assert theirs.status_code == unknown.status_code == 404, (path, theirs.status_code, theirs.text)
    t, u = theirs.json()["error"], unknown.json()["error"]
    assert t["code"] == u["code"] and t["type"] == u["type"] and t["param"] == u["param"], (t, u)
    assert t["message"] == u["message"].replace(fake_id, real_id), (t, u)


def test_stored_responses_are_per_project(tenants: harness.Gateway, upstream_server: harness.Upstream):
    upstream_server.reset()
    upstream_server.push({"text": ["Secret of A."]})
    with client(tenants, KEY_A1) as a:
        r = a.responses.create(model="m", input="tell A's secret")
    fake = "resp_" + "0" * 48
    for path in ("/responses/{}", "/responses/{}/input_items"):
        same_as_unknown(tenants, "GET", path, r.id, fake)
    same_as_unknown(tenants, "DELETE", "/responses/{}", r.id, fake)
    with client(tenants, KEY_B) as b:
        with pytest.raises(openai.NotFoundError):
            b.responses.retrieve(r.id)
        # Continuing from another project's response is refused as an unknown id is.
        with pytest.raises(openai.BadRequestError) as e:
            b.responses.create(model="m", input="continue", previous_response_id=r.id)
        assert e.value.code == "previous_response_not_found"
        assert e.value.param == "previous_response_id"
    assert len(upstream_server.requests()) == 1, "a refused continuation reached the upstream"
    # The same project, through its other key, sees and continues it; B's DELETE left it.
    upstream_server.push({"text": ["Again."]})
    with client(tenants, KEY_A2) as a2:
        assert a2.responses.retrieve(r.id).output_text == "Secret of A."
        assert [i.id for i in a2.responses.input_items.list(r.id).data]
        follow = a2.responses.create(model="m", input="more", previous_response_id=r.id)
        assert follow.output_text == "Again."
        sent = upstream_server.requests()[-1]["body"]["messages"]
        assert any("Secret of A." in str(m.get("content")) for m in sent), "the continuation lost A's history"
        a2.responses.delete(follow.id)
        with pytest.raises(openai.NotFoundError):
            a2.responses.retrieve(follow.id)


def test_conversations_are_per_project(tenants: harness.Gateway, upstream_server: harness.Upstream):
    with client(tenants, KEY_A1) as a:
        conv = a.conversations.create(items=[{"type": "message", "role": "user", "content": "A's note"}],
                                      metadata={"owner": "a"})
        item_id = a.conversations.items.list(conv.id).data[0].id
    fake = "conv_" + "0" * 48
    for method, path in (("GET", "/conversations/{}"), ("GET", "/conversations/{}/items"),
                         ("DELETE", "/conversations/{}")):
        same_as_unknown(tenants, method, path, conv.id, fake)
    same_as_unknown(tenants, "POST", "/conversations/{}", conv.id, fake, json={"metadata": {"owner": "b"}})
    same_as_unknown(tenants, "POST", "/conversations/{}/items", conv.id, fake,
                    json={"items": [{"type": "message", "role": "user", "content": "B writes"}]})
    same_as_unknown(tenants, "GET", "/conversations/{}/items/" + item_id, conv.id, fake)
    same_as_unknown(tenants, "DELETE", "/conversations/{}/items/" + item_id, conv.id, fake)
    upstream_server.reset()
    with client(tenants, KEY_B) as b:
        with pytest.raises(openai.NotFoundError) as e:
            b.responses.create(model="m", input="join", conversation=conv.id)
        assert e.value.code == "conversation_not_found"
    assert upstream_server.requests() == [], "a refused conversation turn reached the upstream"
    # Nothing B did changed A's conversation.
    with client(tenants, KEY_A2) as a2:
        assert a2.conversations.retrieve(conv.id).metadata == {"owner": "a"}
        items = a2.conversations.items.list(conv.id).data
        assert [i.id for i in items] == [item_id]
        upstream_server.push({"text": ["Noted."]})
        r = a2.responses.create(model="m", input="go on", conversation=conv.id)
        assert r.output_text == "Noted."
        assert len(a2.conversations.items.list(conv.id).data) == 3


def wait_ingested(c: openai.OpenAI, store_id: str) -> None:
    deadline = time.monotonic() + 30
    while c.vector_stores.retrieve(store_id).file_counts.in_progress and time.monotonic() < deadline:
        time.sleep(0.1)


def test_files_and_vector_stores_are_per_project(tenants: harness.Gateway, upstream_server: harness.Upstream):
    with client(tenants, KEY_A1) as a:
        f = a.files.create(file=("a-notes.txt", b"The launch code of team A is tangerine."), purpose="assistants")
        vs = a.vector_stores.create(name="team-a", file_ids=[f.id])
        wait_ingested(a, vs.id)
    fake_file, fake_vs = "file-" + "0" * 32, "vs_" + "0" * 32
    for method, path in (("GET", "/files/{}"), ("GET", "/files/{}/content"), ("DELETE", "/files/{}")):
        same_as_unknown(tenants, method, path, f.id, fake_file)
    for method, path in (("GET", "/vector_stores/{}"), ("GET", "/vector_stores/{}/files"),
                         ("DELETE", "/vector_stores/{}"), ("GET", "/vector_stores/{}/files/" + f.id),
                         ("GET", "/vector_stores/{}/files/" + f.id + "/content"),
                         ("DELETE", "/vector_stores/{}/files/" + f.id)):
        same_as_unknown(tenants, method, path, vs.id, fake_vs)
    same_as_unknown(tenants, "POST", "/vector_stores/{}/search", vs.id, fake_vs, json={"query": "launch code"})
    same_as_unknown(tenants, "POST", "/vector_stores/{}", vs.id, fake_vs, json={"name": "taken"})
    with client(tenants, KEY_B) as b:
        assert f.id not in [x.id for x in b.files.list().data]
        assert vs.id not in [x.id for x in b.vector_stores.list().data]
        # B cannot attach A's file to its own store, nor build a store from it.
        own = b.vector_stores.create(name="team-b")
        with pytest.raises(openai.NotFoundError):
            b.vector_stores.files.create(vector_store_id=own.id, file_id=f.id)
        with pytest.raises(openai.NotFoundError):
            b.vector_stores.create(name="steal", file_ids=[f.id])
        # A file_search over A's store is an unknown store, before any model call.
        upstream_server.reset()
        with pytest.raises(openai.BadRequestError) as e:
            b.responses.create(model="m", input="launch code?",
                               tools=[{"type": "file_search", "vector_store_ids": [vs.id]}])
        assert e.value.code == "vector_store_not_found"
        assert upstream_server.requests() == []
    # A still has everything, and its own search finds the text.
    with client(tenants, KEY_A2) as a2:
        assert a2.files.retrieve(f.id).filename == "a-notes.txt"
        hits = a2.vector_stores.search(vs.id, query="launch code")
        assert any("tangerine" in h.content[0].text for h in hits.data)
        assert f.id in [x.id for x in a2.files.list().data]
        assert vs.id in [x.id for x in a2.vector_stores.list().data]
