//! How tool call items of the input replay into the transcript ([`ToolReplay`]): each tool
//! type's replay duty ([`ToolType::replay`]), asked in turn (contract §4.2).

use protocol::input::InputItem;

use super::{types, ToolType};
use crate::events::file_citations::FileSource;
use crate::executors::Registry;
use crate::transcript::{Recorded, Replayed, ToolReplay};

/// The replay of this deployment's tool types: server tools are the registered ones.
#[derive(Debug, Clone, Copy)]
pub struct Replayer<'a> {
    pub registry: &'a Registry,
}

impl ToolReplay for Replayer<'_> {
    fn replay(&self, item: &InputItem, file_sources: &mut Vec<FileSource>) -> Option<Replayed> {
        types().into_iter().find_map(|t: &dyn ToolType| t.replay(item, file_sources))
    }

    fn is_server_tool(&self, name: &str) -> bool {
        self.registry.contains(name)
    }

    fn private_result_id<'i>(&self, item: &'i InputItem) -> Option<&'i str> {
        types().into_iter().find_map(|t| t.private_result_id(item))
    }

    fn record(&self, item: &InputItem) -> Option<Recorded> {
        types().into_iter().find_map(|t| t.record(item))
    }
}
