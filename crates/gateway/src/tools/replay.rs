//! How tool call items of the input replay into the transcript ([`ToolReplay`]): each tool
//! type's replay duty, dispatched by item type (contract §4.2). Client calls become the call
//! the model made; gateway tools' items also give the result the model read, rebuilt from
//! what the item carries.

use protocol::input::InputItem;

use super::{custom, file_search, function, web_search};
use crate::events::file_citations::FileSource;
use crate::executors::Registry;
use crate::transcript::{Replayed, ToolReplay};

/// The replay of this deployment's tool types: server tools are the registered ones.
#[derive(Debug, Clone, Copy)]
pub struct Replayer<'a> {
    pub registry: &'a Registry,
}

impl ToolReplay for Replayer<'_> {
    fn replay(&self, item: &InputItem, file_sources: &mut Vec<FileSource>) -> Option<Replayed> {
        match item {
            InputItem::FunctionCall(c) => Some(function::replay(c)),
            InputItem::CustomToolCall(c) => Some(custom::replay(c)),
            InputItem::WebSearchCall(ws) => Some(web_search::replay(ws)),
            InputItem::FileSearchCall(fs) => Some(file_search::replay(fs, file_sources)),
            _ => None,
        }
    }

    fn is_server_tool(&self, name: &str) -> bool {
        self.registry.contains(name)
    }
}
