//! The queue of background runs (`runs`, migration 4): enqueue, claim (one statement; on
//! PostgreSQL `FOR UPDATE SKIP LOCKED`, so concurrent replicas each take a different run),
//! the owner's heartbeat, cancel, and removal once the turn is stored.

use serde_json::Value;
use sqlx::Row;

use super::{db_err, limited, parse, SqlStore};
use crate::store::{now_ms, BackendKind, ClaimedRun, RunCancel, StoreError};

fn until(ttl_ms: u64) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX))
}

/// `INSERT INTO response_events … VALUES ($1, $2, $3), ($4, $5, $6), …` for `rows` rows
/// (the portable `$N` placeholders; binds are id, seq, frame per row).
fn events_insert(rows: usize) -> String {
    let mut sql = String::from("INSERT INTO response_events (response_id, seq, frame) VALUES ");
    for r in 0..rows {
        let n = r * 3;
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("(${}, ${}, ${})", n + 1, n + 2, n + 3));
    }
    sql
}

impl SqlStore {
    /// Inserts the run, and the first frames of its event log, unless `max_queued` runs are
    /// already queued (then `false`, nothing written).
    pub(super) async fn insert_run(
        &self,
        project: &str,
        id: &str,
        request: String,
        response: String,
        max_queued: usize,
        frames: Vec<String>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "INSERT INTO runs (response_id, project, enqueued_at, status, request, response) \
             SELECT $1, $2, $3, 'queued', $4, $5 WHERE (SELECT COUNT(*) FROM runs WHERE status = 'queued') < $6",
        )
        .bind(id)
        .bind(project)
        .bind(now_ms())
        .bind(request)
        .bind(response)
        .bind(i64::try_from(max_queued).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        if !frames.is_empty() {
            let sql = events_insert(frames.len());
            let mut q = sqlx::query(&sql);
            for (seq, frame) in (0i64..).zip(frames) {
                q = q.bind(id).bind(seq).bind(frame);
            }
            q.execute(&mut *tx).await.map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    /// Ends a run that could not start (its request no longer prepares): `failed`, with the
    /// Response GET shows.
    pub(super) async fn fail(&self, id: &str, owner: &str, response: String) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET status = 'failed', response = $3 WHERE response_id = $1 AND owner = $2")
            .bind(id)
            .bind(owner)
            .bind(response)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// One UPDATE … RETURNING over the oldest queued run. SQLite serialises writers, so the
    /// subquery cannot race; PostgreSQL skips rows another replica has locked.
    pub(super) async fn claim(&self, owner: &str, ttl_ms: u64) -> Result<Option<ClaimedRun>, StoreError> {
        let lock = if self.backend == BackendKind::Postgres { " FOR UPDATE SKIP LOCKED" } else { "" };
        let sql = format!(
            "UPDATE runs SET status = 'in_progress', owner = $1, lease_until = $2 WHERE response_id = \
             (SELECT response_id FROM runs WHERE status = 'queued' AND enqueued_at <= $3 ORDER BY enqueued_at LIMIT 1{lock}) \
             AND status = 'queued' RETURNING response_id, project, request"
        );
        let row = sqlx::query(&sql)
            .bind(owner)
            .bind(until(ttl_ms))
            .bind(now_ms())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ClaimedRun {
            response_id: row.try_get(0).map_err(db_err)?,
            project: row.try_get(1).map_err(db_err)?,
            request: row.try_get(2).map_err(db_err)?,
        }))
    }

    pub(super) async fn run_snapshot(&self, project: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let row = sqlx::query(
            "SELECT length(response), CASE WHEN length(response) <= $3 THEN response END FROM runs \
             WHERE response_id = $1 AND project = $2",
        )
        .bind(id)
        .bind(project)
        .bind(self.max_chars)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        let text = limited(row.try_get(0).map_err(db_err)?, row.try_get(1).map_err(db_err)?, "run", id)?;
        text.map(|t| parse(&t, "run", id)).transpose()
    }

    pub(super) async fn beat(&self, id: &str, owner: &str, ttl_ms: u64, response: Option<String>) -> Result<Option<bool>, StoreError> {
        let row = sqlx::query(
            "UPDATE runs SET lease_until = $3, response = COALESCE($4, response) \
             WHERE response_id = $1 AND owner = $2 AND status = 'in_progress' RETURNING cancel",
        )
        .bind(id)
        .bind(owner)
        .bind(until(ttl_ms))
        .bind(response)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        match row {
            Some(r) => Ok(Some(r.try_get::<i64, _>(0).map_err(db_err)? != 0)),
            None => Ok(None),
        }
    }

    /// A queued run is cancelled by one conditional UPDATE (its Response rewritten with
    /// status `cancelled`); if a worker claimed it meanwhile, the in-progress path applies.
    pub(super) async fn cancel(&self, project: &str, id: &str) -> Result<RunCancel, StoreError> {
        let row = sqlx::query("SELECT status, response FROM runs WHERE response_id = $1 AND project = $2")
            .bind(id)
            .bind(project)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(row) = row else { return Ok(RunCancel::NotFound) };
        let status: String = row.try_get(0).map_err(db_err)?;
        let text: String = row.try_get(1).map_err(db_err)?;
        let mut response: Value = parse(&text, "run", id)?;
        match status.as_str() {
            "cancelled" => return Ok(RunCancel::Cancelled(response)),
            "queued" => {
                if let Some(o) = response.as_object_mut() {
                    o.insert("status".into(), Value::String("cancelled".into()));
                }
                let done = sqlx::query(
                    "UPDATE runs SET status = 'cancelled', response = $3 WHERE response_id = $1 AND project = $2 AND status = 'queued'",
                )
                .bind(id)
                .bind(project)
                .bind(response.to_string())
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
                if done.rows_affected() > 0 {
                    return Ok(RunCancel::Cancelled(response));
                }
            }
            _ => {}
        }
        let done = sqlx::query("UPDATE runs SET cancel = 1 WHERE response_id = $1 AND project = $2 AND status = 'in_progress'")
            .bind(id)
            .bind(project)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(if done.rows_affected() > 0 { RunCancel::Requested } else { RunCancel::NotFound })
    }

    /// The frames in one multi-row INSERT (one statement, one round trip: a follower never
    /// sees half a batch).
    pub(super) async fn insert_events(&self, id: &str, first_seq: u64, frames: Vec<String>) -> Result<(), StoreError> {
        if frames.is_empty() {
            return Ok(());
        }
        let first = i64::try_from(first_seq).unwrap_or(i64::MAX);
        let sql = format!("{} ON CONFLICT (response_id, seq) DO NOTHING", events_insert(frames.len()));
        let mut q = sqlx::query(&sql);
        for (i, frame) in frames.into_iter().enumerate() {
            q = q.bind(id).bind(first.saturating_add(i64::try_from(i).unwrap_or(i64::MAX))).bind(frame);
        }
        q.execute(&self.pool).await.map_err(db_err)?;
        Ok(())
    }

    pub(super) async fn read_events(&self, id: &str, after: Option<u64>, limit: usize) -> Result<Vec<(u64, String)>, StoreError> {
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let rows = sqlx::query("SELECT seq, frame FROM response_events WHERE response_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
            .bind(id)
            .bind(after)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.try_get(0).map_err(db_err)?;
                Ok((u64::try_from(seq).unwrap_or(0), r.try_get(1).map_err(db_err)?))
            })
            .collect()
    }

    pub(super) async fn expired(&self, limit: usize) -> Result<Vec<(String, Value)>, StoreError> {
        let rows = sqlx::query("SELECT response_id, response FROM runs WHERE status = 'in_progress' AND lease_until < $1 LIMIT $2")
            .bind(now_ms())
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: String = r.try_get(0).map_err(db_err)?;
            let text: String = r.try_get(1).map_err(db_err)?;
            let response = parse(&text, "run", &id)?;
            out.push((id, response));
        }
        Ok(out)
    }

    pub(super) async fn reap(&self, id: &str, response: String) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'failed', response = $2 WHERE response_id = $1 AND status = 'in_progress' AND lease_until < $3",
        )
        .bind(id)
        .bind(response)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn drop_run(&self, project: &str, id: &str) -> Result<Option<bool>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "DELETE FROM runs WHERE response_id = $1 AND project = $2 AND status NOT IN ('queued', 'in_progress')",
        )
        .bind(id)
        .bind(project)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(db_err)?;
            let pending: Option<String> = sqlx::query_scalar("SELECT status FROM runs WHERE response_id = $1 AND project = $2")
                .bind(id)
                .bind(project)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
            return Ok(pending.map(|_| false));
        }
        sqlx::query("DELETE FROM response_events WHERE response_id = $1").bind(id).execute(&mut *tx).await.map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(Some(true))
    }

    pub(super) async fn request_of(&self, project: &str, id: &str) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar("SELECT request FROM runs WHERE response_id = $1 AND project = $2")
            .bind(id)
            .bind(project)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }

    pub(super) async fn requeue(&self, id: &str, owner: &str, delay_ms: u64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runs SET status = 'queued', owner = NULL, lease_until = NULL, enqueued_at = $3 \
             WHERE response_id = $1 AND owner = $2 AND status = 'in_progress'",
        )
        .bind(id)
        .bind(owner)
        .bind(until(delay_ms))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(super) async fn remove_run(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM runs WHERE response_id = $1").bind(id).execute(&self.pool).await.map_err(db_err)?;
        Ok(())
    }
}
