-- Background responses (issue 19): the queue of runs. A run is `queued` until a worker of
-- any replica claims it (PostgreSQL: FOR UPDATE SKIP LOCKED), `in_progress` while its owner
-- renews `lease_until` (unix ms), and leaves the table when its turn is stored in
-- `responses` (or stays `cancelled` when it was cancelled before it started). `response` is
-- the Response that GET /v1/responses/{id} shows until then; `cancel` is set by a cancel
-- request on any replica, and the owner's heartbeat sees it.
CREATE TABLE runs (
    response_id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    enqueued_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    owner TEXT,
    lease_until BIGINT,
    cancel BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX runs_by_status ON runs (status, enqueued_at);
