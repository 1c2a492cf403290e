-- Stored responses and conversations. Portable SQL: the same text runs on SQLite and on
-- PostgreSQL (TEXT and BIGINT only; JSON is kept as TEXT, times are unix seconds or ms).

-- One row per stored turn (store: true). `response` is the Response object as the client
-- saw it (progress messages stripped), `input_items` the request's input items with their
-- ids, `transcript` what the model saw at the end of the turn, including the private
-- gateway-tool results: a continuation (previous_response_id) loads this one row.
CREATE TABLE responses (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    previous_response_id TEXT,
    conversation_id TEXT,
    response TEXT NOT NULL,
    input_items TEXT NOT NULL,
    transcript TEXT NOT NULL
);

-- A conversation. `version` counts item changes; `transcript` is what the model saw at the
-- end of the last turn and is valid while `transcript_version = version`. The lease
-- (`lease_owner`, `lease_until` in unix ms) serialises turns across replicas.
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    metadata TEXT NOT NULL,
    version BIGINT NOT NULL,
    next_seq BIGINT NOT NULL,
    transcript TEXT,
    transcript_version BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);

-- Items of a conversation in order (`seq`), each the JSON of one item resource.
CREATE TABLE conversation_items (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL,
    item TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

CREATE UNIQUE INDEX conversation_items_by_id ON conversation_items (conversation_id, id);
