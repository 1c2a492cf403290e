//! The one emitter of canonical events, and the accumulator that folds them into the
//! Response (DESIGN.md "events::Emitter").

pub mod accumulator;
pub mod citations;
pub mod file_citations;
pub mod emitter;
pub mod ids;
pub mod message_items;
pub mod replay;
pub mod sink;
pub mod wire_sink;
pub mod tool_items;
pub mod mcp_items;
pub mod tool_search_items;

pub use accumulator::Accumulator;
pub use emitter::Emitter;
pub use sink::{EventSink, Recorder};
