-- MCP approval requests whose approval ran the call (issue 18 "Approvals"), by project: an
-- approval runs its call at most once, whichever stored response a client continues from (a
-- retried request, two answers sent at once). Ids only; a row is a few dozen bytes.
CREATE TABLE approvals_answered (
    project TEXT NOT NULL,
    request_id TEXT NOT NULL,
    answered_at BIGINT NOT NULL,
    PRIMARY KEY (project, request_id)
);
