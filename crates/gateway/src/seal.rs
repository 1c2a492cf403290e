//! Sealed blobs: what the gateway hands a client to give back later, readable only by a
//! gateway that holds the same key (AES-256-GCM, the `aes-gcm` crate). Its users: the
//! `encrypted_content` of the gateway's own reasoning items (issue 30) and of `compaction`
//! items (issue 29).
//!
//! A blob is `rgs1.` followed by base64url (no padding) of `nonce (12 bytes) ‖ ciphertext ‖
//! tag (16 bytes)`. The associated data binds the format version and the blob's
//! [`Purpose`], so a reasoning blob never opens as a compaction summary (or the other way
//! round). Nonces are random (96 bits): one key seals far fewer than 2^32 blobs in practice.
//!
//! The key (32 bytes) comes from `[seal]`: an environment variable (`key_env`) or a key file
//! (`key_file`), each holding the key as base64 or hex, never the TOML itself. With neither,
//! a key is generated once and kept in `{data_dir}/seal.key` (mode 0600). Replicas that
//! share a store must share the key (docs/configuration.md "Sealed items").

use std::io::Write;
use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine;
use rand::RngCore;

use crate::config::seal::SealConfig;

/// The prefix of every blob the gateway seals (format version 1).
pub const PREFIX: &str = "rgs1.";
/// Name of the generated key file in the data directory.
pub const KEY_FILE: &str = "seal.key";
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// What a blob holds; bound into its associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A reasoning item's text for a later turn (issue 30).
    Reasoning,
    /// A compaction item's summary (issue 29).
    Compaction,
}

impl Purpose {
    /// The label in the associated data.
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Reasoning => b"responses-gateway/seal/v1/reasoning",
            Purpose::Compaction => b"responses-gateway/seal/v1/compaction",
        }
    }
}

/// Why a blob did not open. Deliberately coarse: a caller tells a client only that the
/// blob is not one of this gateway's (or was changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not a blob of this format (another server's `encrypted_content`, say).
    #[error("not a blob sealed by this gateway")]
    Foreign,
    /// This format, but it does not authenticate: changed, sealed with another key, or
    /// for another purpose.
    #[error("the blob does not authenticate (changed, another key, or another purpose)")]
    Tampered,
}

/// Seals and opens blobs with one key. Cheap to share (`Arc`).
pub struct Sealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never appears in logs.
        f.write_str("Sealer")
    }
}

impl Sealer {
    /// A sealer with this 32-byte key.
    pub fn new(key: &[u8; 32]) -> Sealer {
        Sealer { cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)) }
    }

    /// The key `[seal]` names: `key_env`'s variable, else `key_file`, else
    /// `{data_dir}/seal.key`, generated (mode 0600) when it does not exist yet. Errors name
    /// the setting or the file, never the key: a variable or file that is unset, empty, or
    /// not 32 bytes in base64 or hex; a key file that cannot be read or written.
    pub fn load(config: &SealConfig, data_dir: &Path) -> anyhow::Result<Sealer> {
        if let Some(var) = config.key_env.as_deref() {
            let Some(text) = crate::config::Config::secret(Some(var), "seal.key_env")? else {
                anyhow::bail!("seal.key_env names no variable");
            };
            let key = parse_key(&text).ok_or_else(|| anyhow::anyhow!("environment variable {var} (seal.key_env) does not hold a 32-byte key in base64 or hex"))?;
            return Ok(Sealer::new(&key));
        }
        let (path, generate) = match &config.key_file {
            Some(p) => (p.clone(), false),
            None => (data_dir.join(KEY_FILE), true),
        };
        Ok(Sealer::new(&read_or_create(&path, generate)?))
    }

    /// Seals `plain` for `purpose`: a blob starting with [`PREFIX`].
    pub fn seal(&self, purpose: Purpose, plain: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        // Encryption fails only for inputs beyond GCM's length bound (64 GiB).
        let sealed = self.cipher.encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad: purpose.label() }).unwrap_or_default();
        let mut raw = Vec::with_capacity(NONCE_LEN + sealed.len());
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&sealed);
        let mut out = String::with_capacity(PREFIX.len() + raw.len() * 4 / 3 + 4);
        out.push_str(PREFIX);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(&raw, &mut out);
        out
    }

    /// Opens a blob sealed for `purpose` by a gateway with this key. Errors: [`OpenError`].
    pub fn open(&self, purpose: Purpose, blob: &str) -> Result<Vec<u8>, OpenError> {
        let body = blob.strip_prefix(PREFIX).ok_or(OpenError::Foreign)?;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body).map_err(|_| OpenError::Tampered)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(OpenError::Tampered);
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        self.cipher.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: purpose.label() }).map_err(|_| OpenError::Tampered)
    }
}

/// A 32-byte key written as base64 (standard or url-safe, padded or not) or as 64 hex
/// digits, surrounding whitespace ignored.
fn parse_key(text: &str) -> Option<[u8; 32]> {
    let t = text.trim();
    let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32).map(|i| u8::from_str_radix(t.get(2 * i..2 * i + 2)?, 16).ok()).collect::<Option<Vec<u8>>>()?
    } else {
        use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
        [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD].iter().find_map(|e| e.decode(t).ok())?
    };
    bytes.try_into().ok()
}

/// The key in `path`; when `generate` and the file does not exist, a new random key is
/// written there first: into a file of its own (mode 0600), then linked in place, so
/// replicas starting together on one data directory never read a half-written key and all
/// end up with the first one linked.
fn read_or_create(path: &Path, generate: bool) -> anyhow::Result<[u8; 32]> {
    if generate && !path.exists() {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create the data directory {}: {e}", dir.display()))?;
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        let tmp = dir.join(format!(".{KEY_FILE}.{:016x}", rand::random::<u64>()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let text = base64::engine::general_purpose::STANDARD.encode(key) + "\n";
        let written = options.open(&tmp).and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
        let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                tracing::info!(path = %path.display(), "generated a seal key (replicas sharing a store need this same key: [seal] key_file or key_env)");
                return Ok(key);
            }
            // Another process linked its key first: read theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => anyhow::bail!("cannot create the seal key {}: {e}", path.display()),
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read the seal key {} (seal.key_file): {e}", path.display()))?;
    parse_key(&text).ok_or_else(|| anyhow::anyhow!("the seal key file {} does not hold a 32-byte key in base64 or hex", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_open_only_with_their_key_and_purpose() {
        let s = Sealer::new(&[7; 32]);
        let blob = s.seal(Purpose::Reasoning, b"thinking");
        assert!(blob.starts_with(PREFIX));
        assert_eq!(s.open(Purpose::Reasoning, &blob).unwrap(), b"thinking");
        assert_ne!(blob, s.seal(Purpose::Reasoning, b"thinking"), "a fresh nonce each time");
        assert_eq!(s.open(Purpose::Compaction, &blob), Err(OpenError::Tampered), "a reasoning blob is no compaction blob");
        assert_eq!(Sealer::new(&[8; 32]).open(Purpose::Reasoning, &blob), Err(OpenError::Tampered), "another key");
        assert_eq!(s.open(Purpose::Reasoning, "gAAAAABfoo"), Err(OpenError::Foreign));
        // Any changed character fails to authenticate.
        let mut chars: Vec<char> = blob.chars().collect();
        let i = PREFIX.len() + 20;
        chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
        let changed: String = chars.into_iter().collect();
        assert_eq!(s.open(Purpose::Reasoning, &changed), Err(OpenError::Tampered));
        assert_eq!(s.open(Purpose::Reasoning, &blob[..blob.len() - 4]), Err(OpenError::Tampered));
        assert_eq!(s.open(Purpose::Reasoning, PREFIX), Err(OpenError::Tampered));
    }

    #[test]
    fn keys_parse_from_base64_and_hex() {
        let key = [0xabu8; 32];
        let b64 = base64::engine::general_purpose::STANDARD.encode(key);
        assert_eq!(parse_key(&format!(" {b64}\n")), Some(key));
        assert_eq!(parse_key(&"ab".repeat(32)), Some(key));
        assert_eq!(parse_key("c2hvcnQ="), None, "too short");
        assert_eq!(parse_key("not a key"), None);
    }

    /// Without a configured key, one is generated in the data dir (0600) and read back by the
    /// next start; a configured file or variable wins; a bad one is an error naming it.
    #[test]
    fn the_key_comes_from_the_config_or_the_data_dir() {
        let dir = std::env::temp_dir().join(format!("rg-seal-{}-{:x}", std::process::id(), rand::random::<u64>()));
        let first = Sealer::load(&SealConfig::default(), &dir).unwrap();
        let path = dir.join(KEY_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let blob = first.seal(Purpose::Compaction, b"summary");
        let again = Sealer::load(&SealConfig::default(), &dir).unwrap();
        assert_eq!(again.open(Purpose::Compaction, &blob).unwrap(), b"summary", "the kept key is reused");
        let by_file = Sealer::load(&SealConfig { key_file: Some(path.clone()), key_env: None }, Path::new("/nonexistent")).unwrap();
        assert!(by_file.open(Purpose::Compaction, &blob).is_ok());
        let var = format!("RG_SEAL_TEST_{:x}", rand::random::<u32>());
        std::env::set_var(&var, "ab".repeat(32));
        let by_env = Sealer::load(&SealConfig { key_env: Some(var.clone()), key_file: None }, &dir).unwrap();
        assert_eq!(by_env.open(Purpose::Compaction, &blob), Err(OpenError::Tampered), "another key");
        std::env::set_var(&var, "short");
        let err = Sealer::load(&SealConfig { key_env: Some(var.clone()), key_file: None }, &dir).unwrap_err().to_string();
        assert!(err.contains(&var) && err.contains("seal.key_env") && !err.contains("short"), "{err}");
        std::env::remove_var(&var);
        let missing = Sealer::load(&SealConfig { key_file: Some(dir.join("none")), key_env: None }, &dir).unwrap_err().to_string();
        assert!(missing.contains("seal.key_file"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Processes starting together on one data dir all get the one key, never a half-written
    /// file.
    #[test]
    fn concurrent_first_loads_agree_on_one_key() {
        let dir = std::env::temp_dir().join(format!("rg-seal-race-{}-{:x}", std::process::id(), rand::random::<u64>()));
        let sealers: Vec<Sealer> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| Sealer::load(&SealConfig::default(), &dir).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let blob = sealers[0].seal(Purpose::Reasoning, b"x");
        assert!(sealers.iter().all(|s| s.open(Purpose::Reasoning, &blob).is_ok()));
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [KEY_FILE], "no temporary file is left");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
