//! The local index's SQLite schema (its own file, `index.sqlite3`, WAL journal), created
//! idempotently at open. `seq` columns give list order; `chunks_fts` is an external-content
//! FTS5 table over `chunks.text`, kept in step by triggers. Its `store_key` column (the store
//! id's letters and digits, one token) lets a query match inside one store only, so a search
//! costs what its own store holds, not what the whole index holds.
//!
//! Tables: `files` (uploaded files; bytes on disk under `files/<id>`), `vector_stores` (both
//! with the `project` that owns them, added to older indexes at open),
//! `store_files` (a file attached to a store: status, `last_error`, attributes, chunking,
//! usage bytes), `chunks` (text, and when embeddings are configured an `f32` little-endian
//! vector with the model that made it).

use sqlx::SqlitePool;

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS files (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        filename TEXT NOT NULL,
        purpose TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
    )",
    "CREATE TABLE IF NOT EXISTS vector_stores (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        name TEXT,
        description TEXT,
        created_at INTEGER NOT NULL,
        last_active_at INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        expires_after TEXT
    )",
    "CREATE TABLE IF NOT EXISTS store_files (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        store_id TEXT NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
        file_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        error_code TEXT,
        error_message TEXT,
        attributes TEXT NOT NULL,
        max_tokens INTEGER NOT NULL,
        overlap_tokens INTEGER NOT NULL,
        usage_bytes INTEGER NOT NULL DEFAULT 0,
        UNIQUE (store_id, file_id)
    )",
    "CREATE INDEX IF NOT EXISTS store_files_file ON store_files(file_id)",
    "CREATE INDEX IF NOT EXISTS store_files_status ON store_files(status)",
    "CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY,
        store_id TEXT NOT NULL,
        store_key TEXT NOT NULL,
        file_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        embedding BLOB,
        embed_model TEXT
    )",
    "CREATE INDEX IF NOT EXISTS chunks_store_file ON chunks(store_id, file_id)",
    "CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
        store_key, text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
    )",
    "CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, store_key, text) VALUES (new.id, new.store_key, new.text);
    END",
    "CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, store_key, text) VALUES ('delete', old.id, old.store_key, old.text);
    END",
];

/// The `store_key` of a store id: its ASCII letters and digits, lowercased.
pub fn store_key(store_id: &str) -> String {
    store_id.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// Creates the tables, indexes, FTS5 table and triggers when missing. Every write
/// transaction of the index starts `IMMEDIATE`: a deferred one that reads first could not be
/// upgraded to a writer after another commit (WAL `SQLITE_BUSY_SNAPSHOT`).
pub async fn create(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    for stmt in SCHEMA {
        sqlx::query(stmt).execute(&mut *tx).await?;
    }
    // Tenants (issue 20): files and stores belong to a project; an index made before keys
    // existed gets the column, and its rows belong to the default project.
    for table in ["files", "vector_stores"] {
        let has: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = 'project'"))
            .fetch_one(&mut *tx)
            .await?;
        if has == 0 {
            sqlx::query(&format!("ALTER TABLE {table} ADD COLUMN project TEXT NOT NULL DEFAULT 'default'")).execute(&mut *tx).await?;
        }
    }
    tx.commit().await
}
