//! Wire types of the OpenAI Responses API (what clients send and receive) and of the
//! Chat Completions API (what a function-only upstream speaks). Serde only, no I/O.
//!
//! Field names, enums and event names follow `shared/reference/responses-contract.md`
//! (cited per item as "contract §N").

pub mod chat;
pub mod dupkeys;
pub mod error;
pub mod events;
pub mod input;
pub mod output;
pub mod request;
pub mod response;

pub use error::{ApiError, ErrorBody};
pub use events::StreamEvent;
pub use input::{ContentPart, InputItem, MessageContent};
pub use output::{Annotation, OutputContent, OutputItem, Phase};
pub use request::CreateResponse;
pub use response::{Response, ResponseStatus, Usage};
