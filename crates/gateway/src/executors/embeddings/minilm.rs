//! The `minilm` embeddings backend (cargo feature `minilm`): sentence-transformers'
//! all-MiniLM-L6-v2 run locally on the CPU with candle. The recipe is sentence-transformers':
//! BERT over at most 256 word pieces (longer texts are truncated), mean pooling over the
//! attention mask, then L2 normalization. 384 dimensions.

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use futures_util::future::BoxFuture;
use tokenizers::{Tokenizer, TruncationParams};

use super::{normalize, Embedder};

/// The name stored with the vectors.
pub const MODEL_NAME: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Word pieces per text, `[CLS]` and `[SEP]` included (sentence-transformers' `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Texts per forward pass. Texts are sorted by length first, so a batch pads little.
pub const BATCH: usize = 32;

/// all-MiniLM-L6-v2 loaded from a directory; cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    dims: usize,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm").field("model", &MODEL_NAME).field("dims", &self.inner.dims).finish()
    }
}

impl MiniLm {
    /// Loads `dir/config.json`, `dir/tokenizer.json` and `dir/model.safetensors` (about 90 MB,
    /// read into memory). Errors name the file and what is wrong with it, e.g. a BERT whose
    /// shape is not all-MiniLM-L6-v2's (6 layers, 384 hidden units, 30522 word pieces).
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let read = |name: &str| -> anyhow::Result<Vec<u8>> {
            let p = dir.join(name);
            std::fs::read(&p).map_err(|e| anyhow::anyhow!("cannot read the MiniLM file {}: {e}", p.display()))
        };
        let config: BertConfig = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| anyhow::anyhow!("{}: not a BERT config.json: {e}", dir.join("config.json").display()))?;
        if (config.num_hidden_layers, config.hidden_size, config.vocab_size) != (6, 384, 30522) {
            anyhow::bail!(
                "{}: not all-MiniLM-L6-v2 ({} layers, {} hidden units, {} word pieces; expected 6, 384, 30522)",
                dir.display(),
                config.num_hidden_layers,
                config.hidden_size,
                config.vocab_size
            );
        }
        let tok_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tok_path)
            .map_err(|e| anyhow::anyhow!("{}: not a tokenizer.json: {e}", tok_path.display()))?;
        // The shipped tokenizer pads every text to 128 and truncates there; sentence-transformers
        // overrides both. Padding is done per batch below.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(|e| anyhow::anyhow!("{}: cannot set truncation: {e}", tok_path.display()))?;
        let weights = dir.join("model.safetensors");
        let vb = VarBuilder::from_buffered_safetensors(read("model.safetensors")?, DType::F32, &Device::Cpu)
            .map_err(|e| anyhow::anyhow!("{}: not a safetensors file: {e}", weights.display()))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| anyhow::anyhow!("{}: the weights do not fit the BERT config: {e}", weights.display()))?;
        Ok(MiniLm { inner: Arc::new(Inner { model, tokenizer, dims: config.hidden_size }) })
    }

    /// Embeds `texts` on the calling thread (CPU-bound: use [`Embedder::embed`] from async
    /// code). One unit vector of 384 floats per text, in order.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        self.inner.embed(texts)
    }
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self.tokenizer.encode_batch(inputs, true).map_err(|e| format!("MiniLM tokenizer: {e}"))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
        for batch in order.chunks(BATCH) {
            let batch_ids: Vec<&[u32]> = batch.iter().map(|&i| ids[i]).collect();
            let vectors = self.forward(&batch_ids).map_err(|e| format!("MiniLM inference failed: {e}"))?;
            for (&i, mut v) in batch.iter().zip(vectors) {
                normalize(&mut v)?;
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Mean-pooled (not yet normalized) vectors of one batch of token id sequences.
    fn forward(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = batch.len();
        let len = batch.iter().map(|ids| ids.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (row, seq) in batch.iter().enumerate() {
            ids[row * len..row * len + seq.len()].copy_from_slice(seq);
            mask[row * len..row * len + seq.len()].fill(1);
        }
        let dev = &self.model.device;
        let ids = Tensor::from_vec(ids, (n, len), dev)?;
        let mask = Tensor::from_vec(mask, (n, len), dev)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?; // (n, len, 384)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (n, 384)
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?; // (n, 1)
        summed.broadcast_div(&counts)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MODEL_NAME
    }

    fn dims(&self) -> usize {
        self.inner.dims
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, String>> {
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        Box::pin(async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            tokio::task::spawn_blocking(move || inner.embed(&texts))
                .await
                .map_err(|e| format!("MiniLM inference task failed: {e}"))?
        })
    }
}
