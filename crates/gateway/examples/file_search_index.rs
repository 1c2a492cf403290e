//! Embedded vector-store benchmark (issue 5): ingest N small documents (default 1,000 of
//! about 500 bytes: ~500 KB) into a fresh local index, then run Q searches (default 1,000)
//! of two or three words, `max_num_results` 10. Prints ingestion MB/s (upload to
//! `completed`), search p50/p99 in ms, the index size on disk, and the MB/s of one 5 MB
//! document (no per-file overhead). Run by
//! `bench/scenarios/file-search-index.sh`:
//!
//!   cargo run --release -p responses-gateway --example file_search_index -- [DOCS] [QUERIES]
//!
//! Keyword-only (BM25) always; hybrid too when an embedder is configured through the
//! environment: `BENCH_EMBEDDINGS_URL` + `BENCH_EMBEDDINGS_MODEL` (an OpenAI-compatible
//! `/v1/embeddings`, optional key in `BENCH_EMBEDDINGS_KEY_ENV`), or `BENCH_MINILM_DIR`
//! (a binary built with `--features minilm`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use responses_gateway::executors::embeddings;
use responses_gateway::executors::file_search::config::{EmbeddedConfig, EmbeddingsBackend, EmbeddingsConfig};
use responses_gateway::executors::file_search::FileSearchRequest;
use responses_gateway::executors::local_index::{ListParams, LocalIndex, NewStore};

/// A deterministic pseudo-random generator (xorshift), so every run indexes the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, words: &'a [String]) -> &'a str {
        &words[(self.next() % words.len() as u64) as usize]
    }
}

fn vocabulary() -> Vec<String> {
    let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "po", "gal", "ter", "ben", "sor", "lun"];
    let mut words = Vec::new();
    for a in syllables {
        for b in syllables {
            for c in ["", "n", "s", "ra", "el"] {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

fn embedder_from_env() -> anyhow::Result<Option<Arc<dyn embeddings::Embedder>>> {
    let mut c = EmbeddingsConfig::default();
    if let Ok(url) = std::env::var("BENCH_EMBEDDINGS_URL") {
        c.backend = EmbeddingsBackend::Openai;
        c.url = Some(url);
        c.model = std::env::var("BENCH_EMBEDDINGS_MODEL").ok();
        c.api_key_env = std::env::var("BENCH_EMBEDDINGS_KEY_ENV").ok();
    } else if let Ok(dir) = std::env::var("BENCH_MINILM_DIR") {
        c.backend = EmbeddingsBackend::Minilm;
        c.model_dir = Some(dir.into());
    }
    embeddings::from_config(&c)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(label: &str, index: &Arc<LocalIndex>, store: &str, queries: &[String]) -> anyhow::Result<()> {
    let mut ms = Vec::with_capacity(queries.len());
    let mut found = 0usize;
    for q in queries {
        let req = FileSearchRequest { query: q.clone(), max_num_results: 10, ..FileSearchRequest::default() };
        let t = Instant::now();
        let hits = index.search_store(store, &req).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        found += usize::from(!hits.is_empty());
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "{label:<8} search: {} queries, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {found} with hits",
        ms.len(),
        percentile(&ms, 0.50),
        percentile(&ms, 0.99),
        ms.last().copied().unwrap_or(0.0)
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let docs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let nq: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("rg-fsindex-bench-{}", std::process::id()));
    let config = EmbeddedConfig { path: Some(dir.clone()), ..EmbeddedConfig::default() };
    let embedder = embedder_from_env()?;
    let hybrid = embedder.is_some();
    let index = LocalIndex::open(&config, &dir, embedder);

    let words = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut total = 0usize;
    let t0 = Instant::now();
    let mut file_ids = Vec::with_capacity(docs);
    for i in 0..docs {
        let mut text = format!("Document {i}.");
        while text.len() < 500 {
            text.push(' ');
            text.push_str(rng.pick(&words));
        }
        text.push('\n');
        total += text.len();
        let mut up = index.begin_upload().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        up.write(text.as_bytes()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let f = index.create_file("default", up, &format!("doc{i}.txt"), "assistants", None).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        file_ids.push(f.id);
    }
    let store = index
        .create_store("default", NewStore { name: Some("bench".into()), file_ids, ..NewStore::default() })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    loop {
        let s = index.store("default", &store.id).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        if s.file_counts.in_progress == 0 {
            if s.file_counts.completed != docs as i64 {
                let p = ListParams { limit: 1, ascending: true, after: None, before: None };
                let failed = index.list_store_files("default", &store.id, Some("failed"), &p).await.map_err(|e| anyhow::anyhow!("{e}"))?;
                let why = failed.items.first().and_then(|f| f.last_error.clone()).unwrap_or_default();
                anyhow::bail!("only {} of {docs} completed; a failure: {why:?}", s.file_counts.completed);
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "ingest: {docs} documents, {:.1} KB in {:.2} s = {:.3} MB/s{}",
        total as f64 / 1000.0,
        secs,
        total as f64 / 1e6 / secs,
        if hybrid { " (with embeddings)" } else { "" }
    );
    index.checkpoint().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "index on disk: {:.1} KB (SQLite database after a WAL checkpoint, plus the {:.1} KB of uploaded files)",
        index.disk_bytes() as f64 / 1000.0,
        total as f64 / 1000.0
    );

    let queries: Vec<String> = (0..nq)
        .map(|i| (0..2 + i % 2).map(|_| rng.pick(&words).to_string()).collect::<Vec<_>>().join(" "))
        .collect();
    if hybrid {
        run("hybrid", &index, &store.id, &queries).await?;
    }
    // One large document (5 MB): throughput without the per-file overhead.
    let mut big = String::with_capacity(5_100_000);
    while big.len() < 5_000_000 {
        big.push_str(rng.pick(&words));
        big.push(if rng.next().is_multiple_of(12) { '\n' } else { ' ' });
    }
    let t = Instant::now();
    let mut up = index.begin_upload().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    up.write(big.as_bytes()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let f = index.create_file("default", up, "big.txt", "assistants", None).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let big_store = index
        .create_store("default", NewStore { file_ids: vec![f.id], ..NewStore::default() })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    while index.store("default", &big_store.id).await.map_err(|e| anyhow::anyhow!("{e}"))?.file_counts.in_progress > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = t.elapsed().as_secs_f64();
    println!("ingest: one {:.1} MB document in {secs:.2} s = {:.3} MB/s", big.len() as f64 / 1e6, big.len() as f64 / 1e6 / secs);

    let keyword = LocalIndex::open(&config, &dir, None);
    run("keyword", &keyword, &store.id, &queries).await?;
    index.close().await;
    keyword.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
