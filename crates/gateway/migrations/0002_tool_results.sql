-- The private result of each gateway tool call of a stored turn (for now: web_search),
-- by call id (the `ws_…` item id): a client that replays a stored turn's items instead of
-- sending previous_response_id (the Agents SDK does) gets the results back for the model.
-- Deleted with their response.
CREATE TABLE tool_results (
    call_id TEXT PRIMARY KEY,
    response_id TEXT NOT NULL,
    output TEXT NOT NULL
);

CREATE INDEX tool_results_by_response ON tool_results (response_id);
