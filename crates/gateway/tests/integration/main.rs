//! The gateway's integration tests, one test binary: each module is one area (a file per
//! area, as before); `common` is the shared harness (a gateway and a scripted upstream in
//! process, the stream checker, database and search fixtures). One binary instead of one
//! per file: each would link the whole gateway (~440 MB with debug info each in a debug
//! build), which filled a CI machine's disk.
// A test crate: a failed assumption is the test failing (clippy.toml allows this only
// inside #[test] functions and #[cfg(test)] modules, not in a test crate's helpers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod arguments;
mod auth;
mod background_queue;
mod cli;
mod client_calls;
mod compaction;
mod disconnect;
mod edge;
mod embeddings;
mod failures;
mod file_search;
mod fuzz;
mod gateway_tools;
mod layering;
mod leaked_calls;
mod mcp;
mod metrics;
mod native_tools;
mod observer;
#[cfg(feature = "otel")]
mod otel;
mod hybrid_search;
mod input_checks;
mod item_references;
mod request_ids;
mod responses;
mod responses_upstream;
mod reasoning;
mod reasoning_usage;
mod store_conversations;
mod store_processes;
mod store_responses;
mod store_startup;
mod stream_shapes;
mod tool_choice;
mod tool_search;
mod tools;
mod vector_stores;
mod vector_stores_process;
mod web_search;
mod websocket;
