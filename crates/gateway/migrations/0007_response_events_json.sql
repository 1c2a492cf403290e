-- The run log holds one JSON event per row (issue 27): the SSE `data:` payload, from which
-- SSE followers render their frames and WebSocket clients get their messages. Rows written
-- before this migration hold whole SSE frames (`event: …\ndata: …\n\n`); the background
-- module reads their JSON payload (`background::log::event_of_row`).
ALTER TABLE response_events RENAME COLUMN frame TO event;
