-- The durable event log of a background response (issue 19 "Resume"): each SSE frame its
-- stream sent (`event: …\ndata: …\n\n`, with its sequence number), written in order by the
-- run's worker, so that `GET /v1/responses/{id}?stream=true&starting_after=N` on any replica
-- sends the same bytes. Deleted with the response.
CREATE TABLE response_events (
    response_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (response_id, seq)
);
