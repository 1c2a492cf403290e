//! Embeddings for hybrid file search: an OpenAI-compatible `/v1/embeddings` endpoint or a
//! local all-MiniLM-L6-v2 (cargo feature `minilm`), chosen by
//! `[file_search.embedded.embeddings]`.

pub mod openai;

#[cfg(feature = "minilm")]
pub mod minilm;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::file_search::config::{EmbeddingsBackend, EmbeddingsConfig};
use crate::config::Config;

/// Turns texts into unit-length vectors of `dims()` floats.
pub trait Embedder: Send + Sync + Debug {
    /// A stable name of the model (stored with the vectors; a change re-embeds).
    fn model(&self) -> &str;
    /// Vector length. An OpenAI-compatible endpoint reports it with its first answer: until
    /// then its embedder returns 0.
    fn dims(&self) -> usize;
    /// One vector per text, in order. `Err` is a message without credentials.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, String>>;
}

/// The configured embedder, `None` for keyword-only search. Errors name the missing setting:
/// `url`/`model` for `openai` (and an unset `api_key_env` variable), `model_dir` or an
/// unreadable model for `minilm`, and `minilm` in a binary built without `--features minilm`.
/// Loading MiniLM reads about 90 MB; call this once at start, not per request.
pub fn from_config(c: &EmbeddingsConfig) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    const T: &str = "file_search.embedded.embeddings";
    match c.backend {
        EmbeddingsBackend::None => Ok(None),
        EmbeddingsBackend::Openai => {
            let url = c.url.as_deref().filter(|u| !u.trim().is_empty());
            let url = url.ok_or_else(|| anyhow::anyhow!("{T}.url is required for backend = \"openai\""))?;
            let model = c.model.as_deref().filter(|m| !m.trim().is_empty());
            let model = model.ok_or_else(|| anyhow::anyhow!("{T}.model is required for backend = \"openai\""))?;
            let key = Config::secret(c.api_key_env.as_deref(), &format!("{T}.api_key_env"))?;
            let e = openai::OpenAiEmbedder::new(url, model, key, Duration::from_millis(c.timeout_ms.max(1)))?;
            Ok(Some(Arc::new(e)))
        }
        EmbeddingsBackend::Minilm => minilm_from_config(c),
    }
}

#[cfg(feature = "minilm")]
fn minilm_from_config(c: &EmbeddingsConfig) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    let dir = c
        .model_dir
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("file_search.embedded.embeddings.model_dir is required for backend = \"minilm\""))?;
    Ok(Some(Arc::new(minilm::MiniLm::load(dir)?)))
}

#[cfg(not(feature = "minilm"))]
fn minilm_from_config(_: &EmbeddingsConfig) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    anyhow::bail!(
        "file_search.embedded.embeddings.backend = \"minilm\" needs a gateway built with `--features minilm` \
         (cargo build -p responses-gateway --features minilm); this binary has no local embedder"
    )
}

/// Scales `v` to unit length in place. `Err` for a zero, NaN or infinite vector.
pub(crate) fn normalize(v: &mut [f32]) -> Result<(), String> {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return Err("an embedding has zero or non-finite length".into());
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_scales_to_unit_length_and_rejects_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert!(normalize(&mut [0.0, 0.0]).is_err());
        assert!(normalize(&mut [f32::NAN, 1.0]).is_err());
    }

    #[test]
    fn openai_backend_names_its_missing_settings() {
        let mut c = EmbeddingsConfig { backend: EmbeddingsBackend::Openai, ..Default::default() };
        let e = from_config(&c).unwrap_err().to_string();
        assert!(e.contains("embeddings.url"), "{e}");
        c.url = Some("http://127.0.0.1:9/v1".into());
        let e = from_config(&c).unwrap_err().to_string();
        assert!(e.contains("embeddings.model"), "{e}");
        c.model = Some("m".into());
        c.api_key_env = Some("RG_TEST_EMBEDDINGS_KEY_THAT_IS_NEVER_SET".into());
        let e = from_config(&c).unwrap_err().to_string();
        assert!(e.contains("RG_TEST_EMBEDDINGS_KEY_THAT_IS_NEVER_SET") && e.contains("api_key_env"), "{e}");
        c.api_key_env = None;
        let emb = from_config(&c).unwrap().expect("an embedder");
        assert_eq!((emb.model(), emb.dims()), ("m", 0));
    }

    #[test]
    fn minilm_backend_without_model_dir_or_feature_is_an_error() {
        let c = EmbeddingsConfig { backend: EmbeddingsBackend::Minilm, ..Default::default() };
        let e = from_config(&c).unwrap_err().to_string();
        if cfg!(feature = "minilm") {
            assert!(e.contains("model_dir"), "{e}");
        } else {
            assert!(e.contains("--features minilm"), "{e}");
        }
    }

    #[test]
    fn none_backend_is_keyword_only() {
        assert!(from_config(&EmbeddingsConfig::default()).unwrap().is_none());
    }
}
