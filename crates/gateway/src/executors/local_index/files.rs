//! Uploaded files (`/v1/files`, contract §10): bytes under `<index>/files/<file-id>`, one row
//! each in `files`. An [`Upload`] streams into `<file-id>.part`, counting bytes against
//! `max_upload_bytes`; [`LocalIndex::create_file`] syncs and renames it before inserting the
//! row, so a crash leaves no row without its bytes (stray `.part` files are removed at open).

use std::path::{Path, PathBuf};

use sqlx::sqlite::SqliteRow;
use sqlx::Row;
use tokio::io::AsyncWriteExt;

use super::{now, IndexError, ListParams, Listed, LocalIndex};

/// A stored file: `{id:"file-…", object:"file", bytes, created_at, filename, purpose}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub id: String,
    pub filename: String,
    pub purpose: String,
    /// Size in bytes.
    pub bytes: i64,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, from `expires_after` (informational: files are not deleted by it).
    pub expires_at: Option<i64>,
}

/// An upload in progress (a `.part` file, removed when dropped unless committed).
#[derive(Debug)]
pub struct Upload {
    id: String,
    part: PathBuf,
    file: Option<tokio::fs::File>,
    bytes: usize,
    limit: usize,
}

impl Upload {
    /// Appends `chunk`. `Err(TooLarge)` once the total exceeds the limit.
    pub async fn write(&mut self, chunk: &[u8]) -> Result<(), IndexError> {
        self.bytes = self.bytes.saturating_add(chunk.len());
        if self.bytes > self.limit {
            return Err(IndexError::TooLarge { limit: self.limit });
        }
        match self.file.as_mut() {
            Some(f) => Ok(f.write_all(chunk).await?),
            None => Err(IndexError::Internal("upload already finished".into())),
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.part);
        }
    }
}

/// Removes `.part` files left by uploads a crash interrupted.
pub(super) async fn remove_partial_uploads(dir: &Path) {
    let Ok(mut rd) = tokio::fs::read_dir(dir).await else { return };
    while let Ok(Some(entry)) = rd.next_entry().await {
        if entry.file_name().to_string_lossy().ends_with(".part") {
            let _ = tokio::fs::remove_file(entry.path()).await;
        }
    }
}

fn file_row(r: &SqliteRow) -> Result<FileRecord, sqlx::Error> {
    Ok(FileRecord {
        id: r.try_get("id")?,
        filename: r.try_get("filename")?,
        purpose: r.try_get("purpose")?,
        bytes: r.try_get("bytes")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
    })
}

/// `seq` of the row `sql` finds for `id` (and `scope`, a second parameter, when given): a
/// list cursor. An unknown id is a 400 naming `param`.
pub(super) async fn cursor(
    pool: &sqlx::SqlitePool,
    sql: &str,
    id: &Option<String>,
    scope: Option<&str>,
    param: &str,
) -> Result<Option<i64>, IndexError> {
    let Some(id) = id else { return Ok(None) };
    let mut q = sqlx::query_scalar(sql).bind(id);
    if let Some(s) = scope {
        q = q.bind(s);
    }
    let seq: Option<i64> = q.fetch_optional(pool).await?;
    seq.map(Some).ok_or_else(|| IndexError::invalid(param, format!("Invalid '{param}': no object with id '{id}' in this list.")))
}

/// The `seq` bounds and `ORDER BY` of a list page (see [`ListParams`]).
pub(super) fn page_sql(p: &ListParams, after: Option<i64>, before: Option<i64>) -> String {
    let (gt, lt, dir) = if p.ascending { (">", "<", "ASC") } else { ("<", ">", "DESC") };
    let mut sql = String::new();
    if let Some(a) = after {
        sql.push_str(&format!(" AND seq {gt} {a}"));
    }
    if let Some(b) = before {
        sql.push_str(&format!(" AND seq {lt} {b}"));
    }
    sql.push_str(&format!(" ORDER BY seq {dir} LIMIT {}", p.limit.saturating_add(1)));
    sql
}

/// Cuts the one-extra row of a page into `has_more`.
pub(super) fn listed<T>(mut items: Vec<T>, limit: usize) -> Listed<T> {
    let has_more = items.len() > limit;
    items.truncate(limit);
    Listed { items, has_more }
}

impl LocalIndex {
    /// Starts an upload of at most `max_upload_bytes` with a new `file-…` id.
    pub async fn begin_upload(&self) -> Result<Upload, IndexError> {
        self.ready().await?;
        let id = format!("file-{:032x}", rand::random::<u128>());
        let part = self.files_dir().join(format!("{id}.part"));
        let file = tokio::fs::File::create(&part).await?;
        Ok(Upload { id, part, file: Some(file), bytes: 0, limit: self.max_upload_bytes })
    }

    /// Makes `upload` durable and records it (`filename`, `purpose`, `expires_at` Unix s).
    pub async fn create_file(
        &self,
        project: &str,
        mut upload: Upload,
        filename: &str,
        purpose: &str,
        expires_at: Option<i64>,
    ) -> Result<FileRecord, IndexError> {
        let Some(mut f) = upload.file.take() else { return Err(IndexError::Internal("upload already finished".into())) };
        let done = async {
            f.flush().await?;
            f.sync_all().await?;
            drop(f);
            tokio::fs::rename(&upload.part, self.files_dir().join(&upload.id)).await
        }
        .await;
        if let Err(e) = done {
            let _ = tokio::fs::remove_file(&upload.part).await;
            return Err(e.into());
        }
        let rec = FileRecord {
            id: upload.id.clone(),
            filename: filename.to_string(),
            purpose: purpose.to_string(),
            bytes: i64::try_from(upload.bytes).unwrap_or(i64::MAX),
            created_at: now(),
            expires_at,
        };
        let inserted = sqlx::query(
            "INSERT INTO files (id, filename, purpose, bytes, created_at, expires_at, project) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&rec.id)
        .bind(&rec.filename)
        .bind(&rec.purpose)
        .bind(rec.bytes)
        .bind(rec.created_at)
        .bind(rec.expires_at)
        .bind(project)
        .execute(&self.pool)
        .await;
        if let Err(e) = inserted {
            let _ = tokio::fs::remove_file(self.files_dir().join(&rec.id)).await;
            return Err(e.into());
        }
        Ok(rec)
    }

    /// The file `id` of `project` (404 when unknown, or another project's).
    pub async fn file(&self, project: &str, id: &str) -> Result<FileRecord, IndexError> {
        self.ready().await?;
        let row = sqlx::query("SELECT * FROM files WHERE id = ? AND project = ?")
            .bind(id)
            .bind(project)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => Ok(file_row(&r)?),
            None => Err(IndexError::NotFound { what: "file", id: id.to_string() }),
        }
    }

    /// The files of `project`, optionally only those with `purpose`.
    pub async fn list_files(&self, project: &str, purpose: Option<&str>, p: &ListParams) -> Result<Listed<FileRecord>, IndexError> {
        self.ready().await?;
        let seq = "SELECT seq FROM files WHERE id = ? AND project = ?";
        let after = cursor(&self.pool, seq, &p.after, Some(project), "after").await?;
        let before = cursor(&self.pool, seq, &p.before, Some(project), "before").await?;
        let sql = format!("SELECT * FROM files WHERE project = ?2 AND (?1 IS NULL OR purpose = ?1){}", page_sql(p, after, before));
        let rows = sqlx::query(&sql).bind(purpose).bind(project).fetch_all(&self.pool).await?;
        let items = rows.iter().map(file_row).collect::<Result<Vec<_>, _>>()?;
        Ok(listed(items, p.limit))
    }

    /// The file's record and bytes.
    pub async fn file_content(&self, project: &str, id: &str) -> Result<(FileRecord, Vec<u8>), IndexError> {
        let rec = self.file(project, id).await?;
        let bytes = tokio::fs::read(self.files_dir().join(&rec.id)).await?;
        Ok((rec, bytes))
    }

    /// Deletes the file, its attachments and its chunks in every store, then its bytes.
    pub async fn delete_file(&self, project: &str, id: &str) -> Result<(), IndexError> {
        self.ready().await?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let gone = sqlx::query("DELETE FROM files WHERE id = ? AND project = ?")
            .bind(id)
            .bind(project)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if gone == 0 {
            return Err(IndexError::NotFound { what: "file", id: id.to_string() });
        }
        sqlx::query("DELETE FROM chunks WHERE file_id = ?").bind(id).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM store_files WHERE file_id = ?").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        if let Err(e) = tokio::fs::remove_file(self.files_dir().join(id)).await {
            tracing::warn!(file = id, "embedded vector store: removing the file's bytes: {e}");
        }
        Ok(())
    }
}
