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

impl SqlStore {
    /// `SELECT response_id, seq, frame` rows from one JSON array of frames: `$3` is the
    /// array (text), numbered from `$2`, for response `$1`. One statement whatever the
    /// number of frames (one prepared statement, no parameter limit).
    fn frames_rows(&self) -> &'static str {
        if self.backend == BackendKind::Postgres {
            "SELECT $1, $2 + f.n - 1, f.frame FROM json_array_elements_text(CAST($3 AS json)) WITH ORDINALITY AS f(frame, n) WHERE true"
        } else {
            "SELECT $1, $2 + CAST(key AS INTEGER), value FROM json_each($3) WHERE true"
        }
    }
    /// Inserts the run, and the first frames of its event log, unless `max_queued` runs are
    /// already queued (then `false`, nothing written). PostgreSQL: one statement (the run
    /// in a data-modifying CTE); SQLite: one local transaction.
    pub(super) async fn insert_run(
        &self,
        project: &str,
        id: &str,
        request: String,
        response: String,
        max_queued: usize,
        frames: Vec<String>,
    ) -> Result<bool, StoreError> {
        const RUN: &str = "INSERT INTO runs (response_id, project, enqueued_at, status, request, response) \
             SELECT $1, $2, $3, 'queued', $4, $5 WHERE (SELECT COUNT(*) FROM runs WHERE status = 'queued') < $6";
        let max = i64::try_from(max_queued).unwrap_or(i64::MAX);
        let array = serde_json::to_string(&frames).map_err(|e| StoreError::Other(e.to_string()))?;
        let one_statement = self.backend == BackendKind::Postgres && !frames.is_empty();
        let sql = if one_statement {
            format!(
                "WITH r AS ({RUN} RETURNING response_id) INSERT INTO response_events (response_id, seq, event) \
                 SELECT r.response_id, f.n - 1, f.frame FROM r, json_array_elements_text(CAST($7 AS json)) WITH ORDINALITY AS f(frame, n)"
            )
        } else {
            RUN.to_string()
        };
        // A large request is not kept by a cached statement (`responses::LARGE_VALUE`).
        let large = request.len() >= super::responses::LARGE_VALUE;
        let run = sqlx::query(&sql).bind(id).bind(project).bind(now_ms()).bind(request).bind(response).bind(max).persistent(!large);
        if one_statement {
            let done = run.bind(array).execute(&self.pool).await.map_err(db_err)?;
            return Ok(done.rows_affected() > 0);
        }
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = run.execute(&mut *tx).await.map_err(db_err)?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        if !frames.is_empty() {
            let sql = format!("INSERT INTO response_events (response_id, seq, event) {}", self.frames_rows());
            sqlx::query(&sql).bind(id).bind(0i64).bind(array).execute(&mut *tx).await.map_err(db_err)?;
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
             AND status = 'queued' RETURNING response_id, project, request, response"
        );
        let row = sqlx::query(&sql)
            .bind(owner)
            .bind(until(ttl_ms))
            .bind(now_ms())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        /// The one field of the queued Response a worker keeps.
        #[derive(serde::Deserialize)]
        struct Queued {
            created_at: Option<u64>,
        }
        let response: String = row.try_get(3).map_err(db_err)?;
        Ok(Some(ClaimedRun {
            response_id: row.try_get(0).map_err(db_err)?,
            project: row.try_get(1).map_err(db_err)?,
            request: row.try_get(2).map_err(db_err)?,
            created_at: serde_json::from_str::<Queued>(&response).ok().and_then(|q| q.created_at),
        }))
    }

    /// The run's Response; a run a worker has claimed shows status `in_progress` (the
    /// claim changes the row's status only, not its Response).
    pub(super) async fn run_snapshot(&self, project: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let row = sqlx::query(
            "SELECT length(response), CASE WHEN length(response) <= $3 THEN response END, status FROM runs \
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
        let status: String = row.try_get(2).map_err(db_err)?;
        let mut response = text.map(|t| parse(&t, "run", id)).transpose()?;
        if status == "in_progress" {
            if let Some(o) = response.as_mut().and_then(Value::as_object_mut) {
                o.insert("status".into(), Value::String(status));
            }
        }
        Ok(response)
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

    /// The frames in one INSERT of one JSON array (one statement, one round trip: a
    /// follower never sees half a batch).
    pub(super) async fn insert_events(&self, id: &str, first_seq: u64, frames: Vec<String>) -> Result<(), StoreError> {
        if frames.is_empty() {
            return Ok(());
        }
        let first = i64::try_from(first_seq).unwrap_or(i64::MAX);
        let array = serde_json::to_string(&frames).map_err(|e| StoreError::Other(e.to_string()))?;
        let sql = format!("INSERT INTO response_events (response_id, seq, event) {} ON CONFLICT (response_id, seq) DO NOTHING", self.frames_rows());
        sqlx::query(&sql).bind(id).bind(first).bind(array).execute(&self.pool).await.map_err(db_err)?;
        Ok(())
    }

    pub(super) async fn read_events(&self, id: &str, after: Option<u64>, limit: usize) -> Result<Vec<(u64, String)>, StoreError> {
        let after = after.map_or(-1, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let rows = sqlx::query("SELECT seq, event FROM response_events WHERE response_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
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
