//! Inbound API keys (`[auth]`): read once at start from environment variables or a key
//! file, held only as SHA-256 digests with their project, and checked in constant time.
//! A key's value is never kept, logged or put in an error; errors name the variable or the
//! file's line instead.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::admission::KeyId;
use crate::config::auth::{AuthConfig, DEFAULT_PROJECT};

/// The project (tenant) a request's key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project(pub Arc<str>);

/// One configured key: its SHA-256 digest and its project.
struct Entry {
    digest: [u8; 32],
    project: Project,
}

/// The configured keys. Empty: no key is asked for.
#[derive(Default)]
pub struct ApiKeys {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.entries.len())
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A project name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`.
fn valid_project(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl ApiKeys {
    /// Reads the keys of `[auth]`: each `[[auth.keys]]` variable, then `keys_file`. Errors
    /// (naming the variable or the file and line, never a key): a variable unset or blank,
    /// an unreadable file, a malformed line, a bad project name, a key listed twice.
    pub fn load(config: &AuthConfig) -> anyhow::Result<ApiKeys> {
        let mut keys = ApiKeys::default();
        for k in &config.keys {
            let value = std::env::var(&k.env).unwrap_or_default();
            let value = value.trim();
            if value.is_empty() {
                anyhow::bail!("environment variable {} ([[auth.keys]] env) is not set", k.env);
            }
            if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
                anyhow::bail!("environment variable {} ([[auth.keys]] env) holds whitespace or a control character", k.env);
            }
            keys.add(value, k.project.as_deref(), &format!("environment variable {}", k.env))?;
        }
        if let Some(path) = &config.keys_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("auth.keys_file {}: {e}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let at = format!("auth.keys_file {} line {}", path.display(), n + 1);
                let words: Vec<&str> = line.split_whitespace().collect();
                match words.as_slice() {
                    [key] => keys.add(key, None, &at)?,
                    [project, key] => keys.add(key, Some(project), &at)?,
                    _ => anyhow::bail!("{at}: expected `KEY` or `PROJECT KEY`"),
                }
            }
        }
        Ok(keys)
    }

    /// Adds one key of `project` (default `default`); `at` says where it came from.
    fn add(&mut self, key: &str, project: Option<&str>, at: &str) -> anyhow::Result<()> {
        let project = project.unwrap_or(DEFAULT_PROJECT);
        if !valid_project(project) {
            anyhow::bail!("{at}: the project name must be 1 to 64 letters, digits, '-', '_' or '.'");
        }
        if key.chars().any(char::is_control) {
            anyhow::bail!("{at}: the key holds a control character");
        }
        let digest = digest(key);
        if self.entries.iter().any(|e| bool::from(e.digest.ct_eq(&digest))) {
            anyhow::bail!("{at}: this key is already configured");
        }
        self.entries.push(Entry { digest, project: Project(project.into()) });
        Ok(())
    }

    /// True when no key is configured (the API is open).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many keys are configured.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The key id (its index, for per-key limits) and project of `presented` when it is a
    /// configured key. Its digest is compared with every configured one, each in constant
    /// time, whatever matches.
    pub fn check(&self, presented: &str) -> Option<(KeyId, &Project)> {
        let d = digest(presented);
        let (mut index, mut hit_any) = (0u32, subtle::Choice::from(0u8));
        for (i, e) in self.entries.iter().enumerate() {
            let hit = e.digest.ct_eq(&d);
            index.conditional_assign(&u32::try_from(i).unwrap_or(u32::MAX), hit);
            hit_any |= hit;
        }
        if bool::from(hit_any) { self.entries.get(index as usize).map(|e| (KeyId(index), &e.project)) } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::auth::KeyFromEnv;

    #[test]
    fn keys_from_env_and_file_with_projects() {
        std::env::set_var("RG_AUTH_TEST_KEY_A", "sk-alpha-123\n");
        let file = std::env::temp_dir().join(format!("rg-keys-{}", std::process::id()));
        std::fs::write(&file, "# comment\n\nsk-plain\nteam-b   sk-beta\n").unwrap();
        let config = AuthConfig {
            keys: vec![KeyFromEnv { env: "RG_AUTH_TEST_KEY_A".into(), project: Some("team-a".into()) }],
            keys_file: Some(file.clone()),
        };
        let keys = ApiKeys::load(&config).unwrap();
        assert_eq!(keys.len(), 3);
        assert_eq!(keys.check("sk-alpha-123").map(|(_, p)| &*p.0), Some("team-a"));
        assert_eq!(keys.check("sk-beta").map(|(_, p)| &*p.0), Some("team-b"));
        assert_eq!(keys.check("sk-plain").map(|(_, p)| &*p.0), Some("default"));
        assert_eq!(keys.check("sk-beta "), None);
        assert_eq!(keys.check(""), None);
        assert_eq!(keys.check("sk-alpha-12"), None);
        // Debug shows no key and no digest.
        assert_eq!(format!("{keys:?}"), "ApiKeys(3 keys)");
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn bad_key_sources_are_named_without_the_key() {
        let config = AuthConfig {
            keys: vec![KeyFromEnv { env: "RG_AUTH_TEST_UNSET_VAR".into(), project: None }],
            keys_file: None,
        };
        let err = ApiKeys::load(&config).unwrap_err().to_string();
        assert!(err.contains("RG_AUTH_TEST_UNSET_VAR"), "{err}");
        let file = std::env::temp_dir().join(format!("rg-keys-bad-{}", std::process::id()));
        std::fs::write(&file, "sk-secret-one\nsk-secret-one\n").unwrap();
        let err = ApiKeys::load(&AuthConfig { keys: vec![], keys_file: Some(file.clone()) }).unwrap_err().to_string();
        assert!(err.contains("line 2") && !err.contains("sk-secret"), "{err}");
        std::fs::write(&file, "a b sk-secret-two\n").unwrap();
        let err = ApiKeys::load(&AuthConfig { keys: vec![], keys_file: Some(file.clone()) }).unwrap_err().to_string();
        assert!(err.contains("line 1") && !err.contains("sk-secret"), "{err}");
        std::fs::write(&file, "bad/project sk-secret-three\n").unwrap();
        let err = ApiKeys::load(&AuthConfig { keys: vec![], keys_file: Some(file.clone()) }).unwrap_err().to_string();
        assert!(err.contains("project") && !err.contains("sk-secret"), "{err}");
        std::fs::remove_file(&file).unwrap();
    }
}
