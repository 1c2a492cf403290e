//! One turn: `prepare` (parse, validate, build the ToolSet and transcript), then `run`
//! (the bounded loop over upstream rounds). DESIGN.md "Pipeline".

pub mod execute;
pub mod persist;
pub mod prepare;
pub mod round;
pub mod run;
pub mod state;
pub mod transcript;

pub use prepare::{parse_request, prepare, Prepared};
pub use run::{run, Limits, Outcome};
