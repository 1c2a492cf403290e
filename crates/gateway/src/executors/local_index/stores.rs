//! Vector stores and their files (`/v1/vector_stores…`, contract §10). A store's
//! `file_counts` and `usage_bytes` are computed from `store_files` when read, so they are
//! always in step; `usage_bytes` of a file is the UTF-8 size of its chunk texts plus 4 bytes
//! per stored vector dimension.

use serde_json::{Map, Value};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqlitePool};

use super::files::{cursor, listed, page_sql};
use super::{now, Chunking, IndexError, ListParams, Listed, LocalIndex};

/// `file_counts` of a vector store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileCounts {
    pub in_progress: i64,
    pub completed: i64,
    pub failed: i64,
    pub cancelled: i64,
    pub total: i64,
}

/// A vector store as stored, with its computed counts and usage.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreRecord {
    /// `vs_…`.
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds (creation, update, attach or search).
    pub last_active_at: i64,
    /// Up to 16 string pairs.
    pub metadata: Map<String, Value>,
    /// `{anchor:"last_active_at", days}` as given.
    pub expires_after: Option<Value>,
    /// Bytes, the sum over its files.
    pub usage_bytes: i64,
    pub file_counts: FileCounts,
}

/// A new store (`POST /v1/vector_stores`); `file_ids` are attached with `chunking`.
#[derive(Debug, Clone, Default)]
pub struct NewStore {
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: Map<String, Value>,
    pub expires_after: Option<Value>,
    pub file_ids: Vec<String>,
    pub chunking: Chunking,
}

/// `POST /v1/vector_stores/{id}`: the fields given replace the stored ones.
#[derive(Debug, Clone, Default)]
pub struct StoreUpdate {
    pub name: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub expires_after: Option<Value>,
}

/// A file attached to a store (`vector_store.file`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoreFileRecord {
    /// The `file-…` id.
    pub file_id: String,
    pub store_id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `in_progress`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// `last_error {code, message}` of a failed file.
    pub last_error: Option<(String, String)>,
    pub attributes: Map<String, Value>,
    pub chunking: Chunking,
    /// Bytes (see the module doc).
    pub usage_bytes: i64,
}

fn json_map(text: &str) -> Map<String, Value> {
    serde_json::from_str(text).unwrap_or_default()
}

fn store_row(r: &SqliteRow) -> Result<StoreRecord, sqlx::Error> {
    let expires: Option<String> = r.try_get("expires_after")?;
    Ok(StoreRecord {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        description: r.try_get("description")?,
        created_at: r.try_get("created_at")?,
        last_active_at: r.try_get("last_active_at")?,
        metadata: json_map(&r.try_get::<String, _>("metadata")?),
        expires_after: expires.and_then(|e| serde_json::from_str(&e).ok()),
        usage_bytes: r.try_get("usage")?,
        file_counts: FileCounts {
            in_progress: r.try_get("n_in_progress")?,
            completed: r.try_get("n_completed")?,
            failed: r.try_get("n_failed")?,
            cancelled: r.try_get("n_cancelled")?,
            total: r.try_get("n_total")?,
        },
    })
}

const STORE_SELECT: &str = "SELECT v.*,
    (SELECT COALESCE(SUM(usage_bytes), 0) FROM store_files f WHERE f.store_id = v.id) AS usage,
    (SELECT COUNT(*) FROM store_files f WHERE f.store_id = v.id AND f.status = 'in_progress') AS n_in_progress,
    (SELECT COUNT(*) FROM store_files f WHERE f.store_id = v.id AND f.status = 'completed') AS n_completed,
    (SELECT COUNT(*) FROM store_files f WHERE f.store_id = v.id AND f.status = 'failed') AS n_failed,
    (SELECT COUNT(*) FROM store_files f WHERE f.store_id = v.id AND f.status = 'cancelled') AS n_cancelled,
    (SELECT COUNT(*) FROM store_files f WHERE f.store_id = v.id) AS n_total
    FROM vector_stores v";

fn store_file_row(r: &SqliteRow) -> Result<StoreFileRecord, sqlx::Error> {
    let code: Option<String> = r.try_get("error_code")?;
    let message: Option<String> = r.try_get("error_message")?;
    let max: i64 = r.try_get("max_tokens")?;
    let overlap: i64 = r.try_get("overlap_tokens")?;
    Ok(StoreFileRecord {
        file_id: r.try_get("file_id")?,
        store_id: r.try_get("store_id")?,
        created_at: r.try_get("created_at")?,
        status: r.try_get("status")?,
        last_error: code.map(|c| (c, message.unwrap_or_default())),
        attributes: json_map(&r.try_get::<String, _>("attributes")?),
        chunking: Chunking {
            max_tokens: usize::try_from(max).unwrap_or(800),
            overlap: usize::try_from(overlap).unwrap_or(400),
        },
        usage_bytes: r.try_get("usage_bytes")?,
    })
}

/// Whether the store `id` of `project` exists.
pub(super) async fn exists(pool: &SqlitePool, project: &str, id: &str) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM vector_stores WHERE id = ? AND project = ?")
        .bind(id)
        .bind(project)
        .fetch_one(pool)
        .await?;
    Ok(n > 0)
}

/// Whether the store `id` exists in any project (a search, once its store was resolved).
pub(super) async fn exists_any(pool: &SqlitePool, id: &str) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM vector_stores WHERE id = ?").bind(id).fetch_one(pool).await?;
    Ok(n > 0)
}

/// `(store_id, file_id)` of every attachment still `in_progress`.
pub(super) async fn in_progress(pool: &SqlitePool) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT store_id, file_id FROM store_files WHERE status = 'in_progress' ORDER BY seq").fetch_all(pool).await
}

fn not_found(id: &str) -> IndexError {
    IndexError::NotFound { what: "vector_store", id: id.to_string() }
}

impl LocalIndex {
    /// Creates a store of `project` and attaches `file_ids` (each must be a file of the
    /// project: else 404, nothing created).
    pub async fn create_store(&self, project: &str, new: NewStore) -> Result<StoreRecord, IndexError> {
        self.ready().await?;
        for f in &new.file_ids {
            self.file(project, f).await?;
        }
        let id = format!("vs_{:032x}", rand::random::<u128>());
        let at = now();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query(
            "INSERT INTO vector_stores (id, name, description, created_at, last_active_at, metadata, expires_after, project)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(&new.name)
        .bind(&new.description)
        .bind(at)
        .bind(at)
        .bind(Value::Object(new.metadata).to_string())
        .bind(new.expires_after.map(|e| e.to_string()))
        .bind(project)
        .execute(&mut *tx)
        .await?;
        for f in &new.file_ids {
            upsert_store_file(&mut tx, &id, f, &Map::new(), new.chunking).await?;
        }
        tx.commit().await?;
        for f in new.file_ids {
            self.spawn_ingest(id.clone(), f);
        }
        self.store(project, &id).await
    }

    /// The store `id` of `project` (404 when unknown, or another project's).
    pub async fn store(&self, project: &str, id: &str) -> Result<StoreRecord, IndexError> {
        self.ready().await?;
        let row = sqlx::query(&format!("{STORE_SELECT} WHERE v.id = ? AND v.project = ?"))
            .bind(id)
            .bind(project)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => Ok(store_row(&r)?),
            None => Err(not_found(id)),
        }
    }

    /// The stores of `project`, one page.
    pub async fn list_stores(&self, project: &str, p: &ListParams) -> Result<Listed<StoreRecord>, IndexError> {
        self.ready().await?;
        let seq = "SELECT seq FROM vector_stores WHERE id = ? AND project = ?";
        let after = cursor(&self.pool, seq, &p.after, Some(project), "after").await?;
        let before = cursor(&self.pool, seq, &p.before, Some(project), "before").await?;
        let sql = format!("{STORE_SELECT} WHERE v.project = ?{}", page_sql(p, after, before).replace("seq", "v.seq"));
        let rows = sqlx::query(&sql).bind(project).fetch_all(&self.pool).await?;
        Ok(listed(rows.iter().map(store_row).collect::<Result<Vec<_>, _>>()?, p.limit))
    }

    /// Updates name, metadata or expiry.
    pub async fn update_store(&self, project: &str, id: &str, u: StoreUpdate) -> Result<StoreRecord, IndexError> {
        self.ready().await?;
        let done = sqlx::query(
            "UPDATE vector_stores SET name = COALESCE(?, name), metadata = COALESCE(?, metadata),
             expires_after = COALESCE(?, expires_after), last_active_at = ? WHERE id = ? AND project = ?",
        )
        .bind(u.name)
        .bind(u.metadata.map(|m| Value::Object(m).to_string()))
        .bind(u.expires_after.map(|e| e.to_string()))
        .bind(now())
        .bind(id)
        .bind(project)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(not_found(id));
        }
        self.store(project, id).await
    }

    /// Deletes the store, its attachments and chunks (the files themselves stay).
    pub async fn delete_store(&self, project: &str, id: &str) -> Result<(), IndexError> {
        self.ready().await?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let gone = sqlx::query("DELETE FROM vector_stores WHERE id = ? AND project = ?")
            .bind(id)
            .bind(project)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if gone == 0 {
            return Err(not_found(id));
        }
        sqlx::query("DELETE FROM store_files WHERE store_id = ?").bind(id).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM chunks WHERE store_id = ?").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Attaches `file_id` to the store (again, when already attached: re-ingested with the
    /// new attributes and chunking). 404 for an unknown store or file.
    pub async fn attach(
        &self,
        project: &str,
        store_id: &str,
        file_id: &str,
        attributes: &Map<String, Value>,
        chunking: Chunking,
    ) -> Result<StoreFileRecord, IndexError> {
        self.ready().await?;
        if !exists(&self.pool, project, store_id).await? {
            return Err(not_found(store_id));
        }
        self.file(project, file_id).await?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        upsert_store_file(&mut tx, store_id, file_id, attributes, chunking).await?;
        sqlx::query("UPDATE vector_stores SET last_active_at = ? WHERE id = ?").bind(now()).bind(store_id).execute(&mut *tx).await?;
        tx.commit().await?;
        self.spawn_ingest(store_id.to_string(), file_id.to_string());
        self.store_file(project, store_id, file_id).await
    }

    /// One attachment (404 for an unknown store or another project's, or a file not in it).
    pub async fn store_file(&self, project: &str, store_id: &str, file_id: &str) -> Result<StoreFileRecord, IndexError> {
        self.ready().await?;
        if !exists(&self.pool, project, store_id).await? {
            return Err(not_found(store_id));
        }
        let row = sqlx::query("SELECT * FROM store_files WHERE store_id = ? AND file_id = ?")
            .bind(store_id)
            .bind(file_id)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => Ok(store_file_row(&r)?),
            None => Err(IndexError::NotFound { what: "vector_store_file", id: file_id.to_string() }),
        }
    }

    /// A store's files, optionally only those with `status`.
    pub async fn list_store_files(
        &self,
        project: &str,
        store_id: &str,
        status: Option<&str>,
        p: &ListParams,
    ) -> Result<Listed<StoreFileRecord>, IndexError> {
        self.ready().await?;
        if !exists(&self.pool, project, store_id).await? {
            return Err(not_found(store_id));
        }
        let seq = "SELECT seq FROM store_files WHERE file_id = ? AND store_id = ?";
        let after = cursor(&self.pool, seq, &p.after, Some(store_id), "after").await?;
        let before = cursor(&self.pool, seq, &p.before, Some(store_id), "before").await?;
        let sql = format!(
            "SELECT * FROM store_files WHERE store_id = ?1 AND (?2 IS NULL OR status = ?2){}",
            page_sql(p, after, before)
        );
        let rows = sqlx::query(&sql).bind(store_id).bind(status).fetch_all(&self.pool).await?;
        Ok(listed(rows.iter().map(store_file_row).collect::<Result<Vec<_>, _>>()?, p.limit))
    }

    /// Replaces an attachment's attributes (searches see them at once).
    pub async fn update_store_file(
        &self,
        project: &str,
        store_id: &str,
        file_id: &str,
        attributes: &Map<String, Value>,
    ) -> Result<StoreFileRecord, IndexError> {
        self.store_file(project, store_id, file_id).await?;
        sqlx::query("UPDATE store_files SET attributes = ? WHERE store_id = ? AND file_id = ?")
            .bind(Value::Object(attributes.clone()).to_string())
            .bind(store_id)
            .bind(file_id)
            .execute(&self.pool)
            .await?;
        self.store_file(project, store_id, file_id).await
    }

    /// Detaches the file from the store and drops its chunks there (the file stays).
    pub async fn detach(&self, project: &str, store_id: &str, file_id: &str) -> Result<(), IndexError> {
        self.store_file(project, store_id, file_id).await?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query("DELETE FROM store_files WHERE store_id = ? AND file_id = ?").bind(store_id).bind(file_id).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM chunks WHERE store_id = ? AND file_id = ?").bind(store_id).bind(file_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The chunk texts of an attachment, in order (`…/files/{file_id}/content`).
    pub async fn store_file_chunks(&self, project: &str, store_id: &str, file_id: &str) -> Result<Vec<String>, IndexError> {
        self.store_file(project, store_id, file_id).await?;
        let texts = sqlx::query_scalar("SELECT text FROM chunks WHERE store_id = ? AND file_id = ? ORDER BY position")
            .bind(store_id)
            .bind(file_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(texts)
    }
}

/// Inserts or resets an attachment to `in_progress` with its attributes and chunking.
async fn upsert_store_file(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    store_id: &str,
    file_id: &str,
    attributes: &Map<String, Value>,
    c: Chunking,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO store_files (store_id, file_id, created_at, status, attributes, max_tokens, overlap_tokens)
         VALUES (?, ?, ?, 'in_progress', ?, ?, ?)
         ON CONFLICT (store_id, file_id) DO UPDATE SET status = 'in_progress', error_code = NULL,
           error_message = NULL, attributes = excluded.attributes, max_tokens = excluded.max_tokens,
           overlap_tokens = excluded.overlap_tokens",
    )
    .bind(store_id)
    .bind(file_id)
    .bind(now())
    .bind(Value::Object(attributes.clone()).to_string())
    .bind(i64::try_from(c.max_tokens).unwrap_or(800))
    .bind(i64::try_from(c.overlap).unwrap_or(400))
    .execute(&mut **tx)
    .await?;
    Ok(())
}
