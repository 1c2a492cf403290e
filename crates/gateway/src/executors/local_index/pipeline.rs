//! Background ingestion of one attachment: read the file's bytes, extract its text
//! ([`super::ingest`]), chunk it ([`super::chunk`]), embed the chunks when an embedder is
//! configured, and commit the chunks with `status = completed` in one transaction. Any
//! failure marks the attachment `failed` with `last_error {code, message}`. At most
//! [`super::PARALLEL_INGEST`] jobs run at once; CPU work runs on the blocking pool.

use sqlx::Row;

use super::{chunk, ingest, Chunking, IndexError, LocalIndex};

/// Vectors asked for per embeddings call.
const EMBED_BATCH: usize = 64;

/// A failure recorded as `last_error`.
struct Failed {
    code: &'static str,
    message: String,
}

impl From<IndexError> for Failed {
    fn from(e: IndexError) -> Self {
        Failed { code: "server_error", message: e.to_string() }
    }
}

/// Packs a vector as little-endian `f32`s (the `chunks.embedding` BLOB).
pub(super) fn pack(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Unpacks a `chunks.embedding` BLOB (trailing bytes of a torn value are ignored).
pub(super) fn unpack(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

impl LocalIndex {
    /// Ingests `file_id` into `store_id` in a background task.
    pub(super) fn spawn_ingest(&self, store_id: String, file_id: String) {
        let Some(me) = self.me.upgrade() else { return };
        tokio::spawn(async move {
            let Ok(_permit) = me.jobs.clone().acquire_owned().await else { return };
            let outcome = me.ingest(&store_id, &file_id).await;
            let recorded = match outcome {
                Ok(()) => Ok(()),
                Err(f) => {
                    tracing::info!(store = %store_id, file = %file_id, code = f.code, "embedded vector store: ingestion failed: {}", f.message);
                    me.mark_failed(&store_id, &file_id, f.code, &f.message).await
                }
            };
            if let Err(e) = recorded {
                tracing::error!(store = %store_id, file = %file_id, "embedded vector store: recording ingestion: {e}");
            }
        });
    }

    async fn ingest(&self, store_id: &str, file_id: &str) -> Result<(), Failed> {
        let row = sqlx::query(
            "SELECT f.filename, s.max_tokens, s.overlap_tokens FROM store_files s JOIN files f ON f.id = s.file_id
             WHERE s.store_id = ? AND s.file_id = ? AND s.status = 'in_progress'",
        )
        .bind(store_id)
        .bind(file_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(IndexError::from)?;
        // Detached, deleted or already done meanwhile: nothing to do.
        let Some(row) = row else { return Ok(()) };
        let filename: String = row.try_get("filename").map_err(IndexError::from)?;
        let max: i64 = row.try_get("max_tokens").map_err(IndexError::from)?;
        let overlap: i64 = row.try_get("overlap_tokens").map_err(IndexError::from)?;
        let c = Chunking { max_tokens: usize::try_from(max).unwrap_or(800), overlap: usize::try_from(overlap).unwrap_or(400) };
        let bytes = tokio::fs::read(self.files_dir().join(file_id))
            .await
            .map_err(|e| Failed { code: "server_error", message: format!("The file's bytes cannot be read: {e}") })?;
        let chunks = tokio::task::spawn_blocking(move || -> Result<Vec<String>, Failed> {
            let text = ingest::extract(&filename, &bytes).map_err(|e| Failed { code: e.code, message: e.message })?;
            std::panic::catch_unwind(|| chunk::split(&text, c))
                .map_err(|_| Failed { code: "invalid_file", message: "The text could not be tokenized.".into() })
        })
        .await
        .map_err(|e| Failed { code: "server_error", message: format!("ingestion task failed: {e}") })??;
        if chunks.is_empty() {
            return Err(Failed { code: "invalid_file", message: "The file has no text to index.".into() });
        }
        let vectors = self.embed_all(&chunks).await?;
        self.commit_chunks(store_id, file_id, &chunks, vectors.as_deref()).await.map_err(Failed::from)
    }

    /// Embeds `chunks` in batches (`None` without an embedder).
    async fn embed_all(&self, chunks: &[String]) -> Result<Option<Vec<Vec<f32>>>, Failed> {
        let Some(embedder) = &self.embedder else { return Ok(None) };
        let mut out = Vec::with_capacity(chunks.len());
        for batch in chunks.chunks(EMBED_BATCH) {
            let v = embedder
                .embed(batch)
                .await
                .map_err(|e| Failed { code: "server_error", message: format!("Embedding the chunks failed: {e}") })?;
            if v.len() != batch.len() {
                return Err(Failed {
                    code: "server_error",
                    message: format!("The embedder returned {} vectors for {} chunks.", v.len(), batch.len()),
                });
            }
            out.extend(v);
        }
        Ok(Some(out))
    }

    /// Replaces the attachment's chunks and marks it completed, unless it was detached or
    /// deleted meanwhile.
    async fn commit_chunks(
        &self,
        store_id: &str,
        file_id: &str,
        chunks: &[String],
        vectors: Option<&[Vec<f32>]>,
    ) -> Result<(), IndexError> {
        let model = self.embedder.as_ref().map(|e| e.model().to_string());
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let live: Option<i64> = sqlx::query_scalar("SELECT seq FROM store_files WHERE store_id = ? AND file_id = ? AND status = 'in_progress'")
            .bind(store_id)
            .bind(file_id)
            .fetch_optional(&mut *tx)
            .await?;
        if live.is_none() {
            return Ok(());
        }
        sqlx::query("DELETE FROM chunks WHERE store_id = ? AND file_id = ?").bind(store_id).bind(file_id).execute(&mut *tx).await?;
        let key = super::schema::store_key(store_id);
        let mut usage = 0i64;
        for (i, text) in chunks.iter().enumerate() {
            let vector = vectors.and_then(|v| v.get(i)).map(|v| pack(v));
            usage += i64::try_from(text.len() + vector.as_ref().map_or(0, Vec::len)).unwrap_or(0);
            sqlx::query("INSERT INTO chunks (store_id, store_key, file_id, position, text, embedding, embed_model) VALUES (?, ?, ?, ?, ?, ?, ?)")
                .bind(store_id)
                .bind(&key)
                .bind(file_id)
                .bind(i64::try_from(i).unwrap_or(i64::MAX))
                .bind(text)
                .bind(vector)
                .bind(model.as_deref().filter(|_| vectors.is_some()))
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("UPDATE store_files SET status = 'completed', usage_bytes = ?, error_code = NULL, error_message = NULL WHERE store_id = ? AND file_id = ?")
            .bind(usage)
            .bind(store_id)
            .bind(file_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Embeds, in the background, chunks whose vector is missing or made by another model
    /// (embeddings enabled or changed since they were indexed). Until then search ranks
    /// them by keywords only.
    pub(super) fn spawn_reembed(&self) {
        let (Some(me), Some(embedder)) = (self.me.upgrade(), self.embedder.clone()) else { return };
        tokio::spawn(async move {
            let model = embedder.model().to_string();
            let mut done = 0usize;
            loop {
                let rows: Result<Vec<(i64, String)>, _> = sqlx::query_as(
                    "SELECT id, text FROM chunks WHERE embed_model IS NULL OR embed_model <> ? ORDER BY id LIMIT ?",
                )
                .bind(&model)
                .bind(EMBED_BATCH as i64)
                .fetch_all(&me.pool)
                .await;
                let rows = match rows {
                    Ok(r) if r.is_empty() => break,
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!("embedded vector store: re-embedding stopped: {e}");
                        return;
                    }
                };
                let texts: Vec<String> = rows.iter().map(|(_, t)| t.clone()).collect();
                let vectors = match embedder.embed(&texts).await {
                    Ok(v) if v.len() == texts.len() => v,
                    Ok(_) | Err(_) => {
                        tracing::warn!("embedded vector store: re-embedding stopped: the embedder failed");
                        return;
                    }
                };
                for ((id, _), v) in rows.iter().zip(vectors) {
                    let r = sqlx::query("UPDATE chunks SET embedding = ?, embed_model = ? WHERE id = ?")
                        .bind(pack(&v))
                        .bind(&model)
                        .bind(id)
                        .execute(&me.pool)
                        .await;
                    if let Err(e) = r {
                        tracing::warn!("embedded vector store: re-embedding stopped: {e}");
                        return;
                    }
                }
                done += rows.len();
            }
            if done > 0 {
                tracing::info!(chunks = done, model = %model, "embedded vector store: re-embedded chunks");
            }
        });
    }

    async fn mark_failed(&self, store_id: &str, file_id: &str, code: &str, message: &str) -> Result<(), IndexError> {
        sqlx::query(
            "UPDATE store_files SET status = 'failed', error_code = ?, error_message = ?, usage_bytes = 0
             WHERE store_id = ? AND file_id = ? AND status = 'in_progress'",
        )
        .bind(code)
        .bind(message)
        .bind(store_id)
        .bind(file_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
