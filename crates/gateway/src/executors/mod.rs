//! Executors: where gateway-owned tools run, configured per deployment and kept apart
//! from the handlers that say what a tool means (DESIGN.md "Layout").

pub mod components;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::config::Config;

/// A server-owned custom tool (`{"type":"custom","name":…}` naming a registered tool). The
/// server owns its description and its free-form input contract.
pub trait ServerTool: Send + Sync + Debug {
    /// The registered name, e.g. `package_version`.
    fn name(&self) -> &str;
    /// The description the model sees (a client's description is ignored).
    fn description(&self) -> String;
    /// A short progress line for streams, e.g. "Looking up the installed version of axum".
    fn progress(&self, input: &str) -> String;
    /// Runs the tool on the raw input. `Err` is a message the model can read; it becomes
    /// an output starting `error: ` with `status: "incomplete"`.
    fn run<'a>(&'a self, input: &'a str) -> BoxFuture<'a, Result<String, String>>;
}

/// The server tools this deployment registers, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn ServerTool>>,
}

impl Registry {
    /// Registers the tools enabled in `config.server_tools`.
    pub fn from_config(config: &Config) -> Registry {
        let mut r = Registry::default();
        let pv = &config.server_tools.package_version;
        if pv.enabled {
            r.register(Arc::new(components::PackageVersion::new(pv.allow.clone())));
        }
        r
    }

    /// Adds a tool (replacing one of the same name).
    pub fn register(&mut self, tool: Arc<dyn ServerTool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ServerTool>> {
        self.tools.get(name)
    }

    /// True when `name` is a registered server tool.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }
}
