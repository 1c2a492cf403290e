//! `[seal]`: where the key of sealed items comes from (`crate::seal`). The key itself is
//! never in the file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[seal]`: the AES-256-GCM key that seals the gateway's own `encrypted_content`
/// (reasoning handed back across turns, compaction summaries). Set at most one; with
/// neither, a key is generated once in `{data_dir}/seal.key` (mode 0600). Replicas that
/// share a store (PostgreSQL) must share the key: give them all the same `key_env` or
/// `key_file`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SealConfig {
    /// Name of an environment variable holding the key (32 bytes, base64 or 64 hex digits).
    pub key_env: Option<String>,
    /// A file holding the key (32 bytes, base64 or 64 hex digits).
    pub key_file: Option<PathBuf>,
}

impl SealConfig {
    /// Errors when both are set (which one wins would be a guess).
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.key_env.is_some() && self.key_file.is_some() {
            anyhow::bail!("seal.key_env and seal.key_file are both set; set one");
        }
        Ok(())
    }
}
