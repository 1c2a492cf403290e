-- The private results of each `web_search_call` item of a stored turn, by item id (`ws_…`),
-- with the query they answer: a client that replays a stored turn's items instead of sending
-- previous_response_id (the Agents SDK does) gets the results back for the model, when the
-- replayed item asks the same query. Deleted with their response.
CREATE TABLE tool_results (
    item_id TEXT PRIMARY KEY,
    response_id TEXT NOT NULL,
    query TEXT NOT NULL,
    output TEXT NOT NULL
);

CREATE INDEX tool_results_by_response ON tool_results (response_id);
