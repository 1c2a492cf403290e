//! One turn: `prepare` (load what it continues from, validate, build the ToolSet and
//! transcript), then `run` (the bounded loop over upstream rounds). DESIGN.md "Pipeline".

pub mod approved;
pub mod auto_compact;
pub mod compact;
pub mod continuation;
pub mod driver;
pub mod execute;
pub mod lease;
pub mod observer;
pub mod pending;
pub mod persist;
pub mod prepare;
pub mod repeats;
pub mod round;
pub mod run;
pub mod validate;

pub use prepare::{prepare, Context, Sizes};
pub use run::{run, Limits, Outcome, Runner};
pub use validate::{parse_request, validate, Prepared};
