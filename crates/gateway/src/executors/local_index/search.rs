//! Search in one store (contract §10 `POST /v1/vector_stores/{id}/search`, §2 `file_search`).
//!
//! Keyword (always): SQLite FTS5 BM25 over the store's chunks; the query's words (Unicode
//! letters and digits, diacritics folded) are OR-ed. BM25 ranks the chunks. The score is
//! `(coverage + s / (s + 1)) / 2`, where `coverage` is the share of the query's distinct
//! words the chunk contains and `s = -bm25()`: in 0..1, absolute (not scaled per query), so
//! `score_threshold` means the same in every search. The coverage half keeps scores
//! meaningful in small stores, where BM25's inverse document frequency (over the whole
//! index) is near 0 for every word.
//!
//! Hybrid (when an embedder is configured): the query is embedded too and every chunk of the
//! store with a vector of the same model is ranked by cosine similarity. Both rankings are
//! fused by reciprocal-rank fusion, `w_t/(60 + rank_text) + w_e/(60 + rank_vector)` (ranks
//! from 1, a missing rank contributes 0), divided by its maximum `(w_t + w_e)/61`, so a chunk
//! first in both lists scores 1. `ranking_options.hybrid_search` gives `(w_e, w_t)`;
//! default 1 and 1. If embedding the query fails, the search falls back to keyword only.
//!
//! Filters ([`crate::executors::file_search::filters`]) apply to the attachment's
//! `attributes` before ranking is cut to `max_num_results`.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use super::pipeline::unpack;
use super::{stores, IndexError, LocalIndex};
use crate::executors::file_search::{filters, FileHit, FileSearchRequest};

/// Reciprocal-rank-fusion constant.
const RRF_K: f64 = 60.0;
/// Most query words sent to FTS5.
const MAX_TERMS: usize = 64;

/// The FTS5 query for `q` inside the store with `key`: its words quoted and OR-ed in the
/// `text` column (`None` when it has no word).
fn fts_query(key: &str, q: &str) -> Option<String> {
    let words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_TERMS)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| format!("store_key : \"{key}\" AND text : ({})", words.join(" OR ")))
}

/// BM25 (`s = -bm25() ≥ 0`) to 0..1.
pub fn bm25_score(s: f64) -> f64 {
    let s = s.max(0.0);
    s / (s + 1.0)
}

/// Lower-case words with diacritics removed (as FTS5's `unicode61 remove_diacritics 2`).
fn folded_words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut buf = String::new();
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(move |w| {
        fold_into(w, &mut buf);
        buf.clone()
    })
}

/// Folds one word into `buf` (ASCII words without allocating or normalizing).
fn fold_into(word: &str, buf: &mut String) {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    buf.clear();
    if word.is_ascii() {
        buf.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        buf.extend(word.nfd().filter(|c| !is_combining_mark(*c)).flat_map(char::to_lowercase));
    }
}

/// The share (0..1) of the distinct `query` words that occur in `text`.
pub fn coverage(query: &std::collections::HashSet<String>, text: &str) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    let mut found: Vec<&str> = Vec::with_capacity(query.len());
    let mut buf = String::new();
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        fold_into(w, &mut buf);
        if let Some(q) = query.get(buf.as_str()) {
            if !found.contains(&q.as_str()) {
                found.push(q);
                if found.len() == query.len() {
                    break;
                }
            }
        }
    }
    found.len() as f64 / query.len() as f64
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// A candidate chunk.
struct Candidate {
    hit: FileHit,
    /// Keyword score (0..1) and rank (from 1) when it matched the words.
    text: Option<(f64, usize)>,
    /// Vector rank (from 1).
    vector: Option<usize>,
}

fn hit(r: &SqliteRow) -> Result<(i64, FileHit), sqlx::Error> {
    let attributes: String = r.try_get("attributes")?;
    Ok((
        r.try_get("id")?,
        FileHit {
            file_id: r.try_get("file_id")?,
            filename: r.try_get("filename")?,
            score: 0.0,
            text: r.try_get("text")?,
            attributes: serde_json::from_str::<Map<String, Value>>(&attributes).unwrap_or_default(),
        },
    ))
}

impl LocalIndex {
    /// One query in one store (404 for an unknown store): hits best first, at most
    /// `max_num_results` (1–50), each scored 0..1 and at least `score_threshold`.
    pub async fn search_store(&self, store_id: &str, req: &FileSearchRequest) -> Result<Vec<FileHit>, IndexError> {
        Ok(self.search_chunks(store_id, req).await?.into_iter().map(|(_, h)| h).collect())
    }

    /// Several queries (the search endpoint's `query: string[]`): each chunk keeps its best
    /// score over the queries; best first, at most `max_num_results`.
    pub async fn search_many(&self, store_id: &str, queries: &[String], req: &FileSearchRequest) -> Result<Vec<FileHit>, IndexError> {
        let mut best: HashMap<i64, FileHit> = HashMap::new();
        for q in queries {
            let one = FileSearchRequest { query: q.clone(), ..req.clone() };
            for (id, h) in self.search_chunks(store_id, &one).await? {
                match best.get(&id) {
                    Some(b) if b.score >= h.score => {}
                    _ => {
                        best.insert(id, h);
                    }
                }
            }
        }
        let mut hits: Vec<FileHit> = best.into_values().collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(req.max_num_results.clamp(1, 50) as usize);
        Ok(hits)
    }

    async fn search_chunks(&self, store_id: &str, req: &FileSearchRequest) -> Result<Vec<(i64, FileHit)>, IndexError> {
        self.ready().await?;
        let max = req.max_num_results.clamp(1, 50) as usize;
        let keep = |attrs: &Map<String, Value>| req.filters.as_ref().is_none_or(|f| filters::matches(f, attrs));
        let mut cands: HashMap<i64, Candidate> = HashMap::new();
        if let Some(fts) = fts_query(&super::schema::store_key(store_id), &req.query) {
            // Filters drop rows after ranking: read deeper so enough remain.
            let depth = if req.filters.is_some() { 5000 } else { (max * 4).max(40) };
            let rows = sqlx::query(
                "SELECT c.id, c.file_id, c.text, f.filename, s.attributes, -bm25(chunks_fts, 0.0, 1.0) AS s
                 FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                 JOIN store_files s ON s.store_id = c.store_id AND s.file_id = c.file_id
                 JOIN files f ON f.id = c.file_id
                 WHERE chunks_fts MATCH ? AND c.store_id = ? AND s.status = 'completed'
                 ORDER BY bm25(chunks_fts, 0.0, 1.0) LIMIT ?",
            )
            .bind(&fts)
            .bind(store_id)
            .bind(i64::try_from(depth).unwrap_or(100))
            .fetch_all(&self.pool)
            .await?;
            let words: std::collections::HashSet<String> = folded_words(&req.query).take(MAX_TERMS).collect();
            let mut rank = 0;
            for r in &rows {
                let (id, h) = hit(r)?;
                if !keep(&h.attributes) {
                    continue;
                }
                rank += 1;
                let s: f64 = r.try_get("s")?;
                let score = (coverage(&words, &h.text) + bm25_score(s)) / 2.0;
                cands.insert(id, Candidate { hit: h, text: Some((score, rank)), vector: None });
            }
        }
        let hybrid = match &self.embedder {
            Some(e) => match e.embed(std::slice::from_ref(&req.query)).await {
                Ok(mut v) if !v.is_empty() => Some((e.model().to_string(), v.swap_remove(0))),
                Ok(_) => None,
                Err(why) => {
                    tracing::warn!(store = store_id, "embedded vector store: embedding the query failed, keyword search only: {why}");
                    None
                }
            },
            None => None,
        };
        let weights = req.hybrid.unwrap_or((1.0, 1.0));
        if let Some((model, qv)) = &hybrid {
            let rows = sqlx::query(
                "SELECT c.id, c.file_id, c.text, c.embedding, f.filename, s.attributes
                 FROM chunks c JOIN store_files s ON s.store_id = c.store_id AND s.file_id = c.file_id
                 JOIN files f ON f.id = c.file_id
                 WHERE c.store_id = ? AND c.embed_model = ? AND s.status = 'completed'",
            )
            .bind(store_id)
            .bind(model)
            .fetch_all(&self.pool)
            .await?;
            let mut scored: Vec<(f64, i64, FileHit)> = Vec::with_capacity(rows.len());
            for r in &rows {
                let (id, h) = hit(r)?;
                if !keep(&h.attributes) {
                    continue;
                }
                let blob: Vec<u8> = r.try_get("embedding")?;
                scored.push((cosine(qv, &unpack(&blob)), id, h));
            }
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (rank, (_, id, h)) in scored.into_iter().take((max * 4).max(100)).enumerate() {
                cands.entry(id).or_insert(Candidate { hit: h, text: None, vector: None }).vector = Some(rank + 1);
            }
        }
        let (w_e, w_t) = (weights.0.max(0.0), weights.1.max(0.0));
        let top = (w_e + w_t) / (RRF_K + 1.0);
        let mut out: Vec<(i64, FileHit)> = cands
            .into_iter()
            .map(|(id, mut c)| {
                c.hit.score = if hybrid.is_some() && top > 0.0 {
                    let t = c.text.map_or(0.0, |(_, r)| w_t / (RRF_K + r as f64));
                    let v = c.vector.map_or(0.0, |r| w_e / (RRF_K + r as f64));
                    ((t + v) / top).clamp(0.0, 1.0)
                } else {
                    c.text.map_or(0.0, |(s, _)| s)
                };
                (id, c.hit)
            })
            .filter(|(_, h)| h.score >= req.score_threshold && h.score > 0.0)
            .collect();
        // Hits prove the store exists; only an empty answer needs the check.
        if out.is_empty() && !stores::exists_any(&self.pool, store_id).await? {
            return Err(IndexError::NotFound { what: "vector_store", id: store_id.to_string() });
        }
        out.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        out.truncate(max);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_quoted() {
        assert_eq!(fts_query("vs1", "car repair?").as_deref(), Some("store_key : \"vs1\" AND text : (\"car\" OR \"repair\")"));
        let q = fts_query("k", "\"a\" AND NEAR(b)");
        assert_eq!(q.as_deref(), Some("store_key : \"k\" AND text : (\"a\" OR \"AND\" OR \"NEAR\" OR \"b\")"));
        assert_eq!(fts_query("k", "  ?! ").as_deref(), None);
        let q = fts_query("k", "Ünïcödé straße");
        assert_eq!(q.as_deref(), Some("store_key : \"k\" AND text : (\"Ünïcödé\" OR \"straße\")"));
    }

    #[test]
    fn scores_are_in_range() {
        assert_eq!(bm25_score(0.0), 0.0);
        assert!(bm25_score(3.0) > bm25_score(1.0));
        assert!(bm25_score(1e9) <= 1.0);
        assert_eq!(bm25_score(-2.0), 0.0);
        let q: std::collections::HashSet<String> = folded_words("Ölwechsel AUTO auto").collect();
        assert_eq!(q.len(), 2);
        assert_eq!(coverage(&q, "Der olwechsel am Auto."), 1.0);
        assert_eq!(coverage(&q, "Autos und Öl"), 0.0);
        assert_eq!(coverage(&q, "ein Auto"), 0.5);
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
    }
}
