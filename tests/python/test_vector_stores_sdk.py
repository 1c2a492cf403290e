"""The embedded Files + Vector Stores API through the official SDK (contract §10, issue 5):
client.files (create, retrieve, list, content, delete), client.vector_stores (create,
retrieve, update, list, search, delete) and client.vector_stores.files (create_and_poll,
upload_and_poll, list, retrieve, update, delete), with typed parsing of every answer.
"""

from __future__ import annotations

import io

import openai
import pytest
from openai.types import FileObject, VectorStore
from openai.types.vector_stores import VectorStoreFile

pytestmark = pytest.mark.usefixtures("gateway")

DOC = "Das Getriebe des Fahrrads braucht Öl. Ünïcödé survives: 日本語 🚲.\n"


def test_files_and_vector_stores_through_the_sdk(client: openai.OpenAI) -> None:
    f = client.files.create(file=("bike.md", io.BytesIO(DOC.encode())), purpose="assistants")
    assert isinstance(f, FileObject)
    assert f.id.startswith("file-") and f.bytes == len(DOC.encode()) and f.filename == "bike.md"
    assert client.files.retrieve(f.id).id == f.id
    assert client.files.content(f.id).read() == DOC.encode()
    assert f.id in [x.id for x in client.files.list(purpose="assistants")]

    vs = client.vector_stores.create(name="Werkstatt", metadata={"team": "repair"})
    assert isinstance(vs, VectorStore) and vs.id.startswith("vs_")
    vf = client.vector_stores.files.create_and_poll(
        vector_store_id=vs.id, file_id=f.id, attributes={"lang": "de", "year": 2024}, poll_interval_ms=50
    )
    assert isinstance(vf, VectorStoreFile)
    assert vf.status == "completed", vf.last_error
    assert vf.attributes == {"lang": "de", "year": 2024}
    assert vf.chunking_strategy is not None and vf.chunking_strategy.type == "static"

    other = client.vector_stores.files.upload_and_poll(
        vector_store_id=vs.id, file=("garden.txt", io.BytesIO(b"Tomatoes need sun and water.")), poll_interval_ms=50
    )
    assert other.status == "completed"

    got = client.vector_stores.retrieve(vs.id)
    assert got.file_counts.completed == 2 and got.file_counts.total == 2
    assert got.status == "completed" and got.usage_bytes > 0
    assert client.vector_stores.update(vs.id, name="Werkstatt 2").name == "Werkstatt 2"
    assert vs.id in [s.id for s in client.vector_stores.list()]
    assert {x.id for x in client.vector_stores.files.list(vector_store_id=vs.id)} == {f.id, other.id}

    page = client.vector_stores.search(vs.id, query="getriebe ol", max_num_results=5)
    hits = list(page)
    assert len(hits) == 1
    hit = hits[0]
    assert hit.file_id == f.id and hit.filename == "bike.md"
    assert 0 < hit.score <= 1
    assert hit.content[0].type == "text" and hit.content[0].text == DOC
    assert hit.attributes == {"lang": "de", "year": 2024}

    filtered = list(client.vector_stores.search(
        vs.id, query=["getriebe", "tomatoes"], filters={"type": "eq", "key": "lang", "value": "de"}
    ))
    assert [h.file_id for h in filtered] == [f.id]
    with pytest.raises(openai.BadRequestError) as bad:
        client.vector_stores.search(vs.id, query="x", filters={"type": "like", "key": "lang", "value": "de"})
    assert "like" in bad.value.message

    updated = client.vector_stores.files.update(file_id=other.id, vector_store_id=vs.id, attributes={"lang": "en"})
    assert updated.attributes == {"lang": "en"}
    assert client.vector_stores.files.delete(file_id=other.id, vector_store_id=vs.id).deleted is True

    with pytest.raises(openai.NotFoundError):
        client.vector_stores.files.create(vector_store_id=vs.id, file_id="file-missing")

    assert client.files.delete(f.id).deleted is True
    assert list(client.vector_stores.search(vs.id, query="getriebe")) == []
    assert client.vector_stores.retrieve(vs.id).file_counts.total == 0
    assert client.vector_stores.delete(vs.id).deleted is True
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.retrieve(vs.id)
