//! Conversations: the object, its ordered items (`seq`), the lease that serialises turns
//! across replicas, and the context a turn starts from.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::Row;

use super::responses::insert_items;
use super::{db_err, limited, parse, to_json, SqlStore};
use crate::store::{
    now_ms, Conversation, ConversationContext, LeaseOutcome, ListQuery, Lookup, NewConversation, Order, Page,
    StoreError,
};

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn ttl(ms: u64) -> i64 {
    now_ms().saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
}

impl SqlStore {
    async fn exists(&self, project: &str, id: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT 1 FROM conversations WHERE id = $1 AND project = $2")
            .bind(id)
            .bind(project)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(row.is_some())
    }

    pub(super) async fn insert_conversation(&self, new: NewConversation) -> Result<(), StoreError> {
        let c = &new.conversation;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO conversations (id, created_at, metadata, version, next_seq, project) VALUES ($1, $2, $3, 0, $4, $5)",
        )
        .bind(&c.id)
        .bind(c.created_at)
        .bind(to_json(&c.metadata)?)
        .bind(count(new.items.len()))
        .bind(&new.project)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_items(&mut tx, &c.id, 0, &new.items, false).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(())
    }

    pub(super) async fn conversation_of(&self, project: &str, id: &str) -> Result<Option<Conversation>, StoreError> {
        let row = sqlx::query(
            "SELECT created_at, length(metadata), CASE WHEN length(metadata) <= $2 THEN metadata END \
             FROM conversations WHERE id = $1 AND project = $3",
        )
        .bind(id)
        .bind(self.max_chars)
        .bind(project)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        let created_at: i64 = row.try_get(0).map_err(db_err)?;
        let text = limited(row.try_get(1).map_err(db_err)?, row.try_get(2).map_err(db_err)?, "conversation", id)?;
        let metadata: BTreeMap<String, String> = parse(text.as_deref().unwrap_or("{}"), "conversation", id)?;
        Ok(Some(Conversation { id: id.to_string(), created_at, metadata }))
    }

    pub(super) async fn set_metadata(
        &self,
        project: &str,
        id: &str,
        metadata: BTreeMap<String, String>,
    ) -> Result<Option<Conversation>, StoreError> {
        let done = sqlx::query("UPDATE conversations SET metadata = $2 WHERE id = $1 AND project = $3")
            .bind(id)
            .bind(to_json(&metadata)?)
            .bind(project)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        self.conversation_of(project, id).await
    }

    /// Deletes a conversation unless a turn holds its lease: then `LeaseLost` (409
    /// `conversation_locked`), so a running turn never loses its conversation under it.
    pub(super) async fn delete_conversation_rows(&self, project: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "DELETE FROM conversations WHERE id = $1 AND project = $3 AND (lease_owner IS NULL OR lease_until < $2)",
        )
            .bind(id)
            .bind(now_ms())
            .bind(project)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(db_err)?;
            return if self.exists(project, id).await? { Err(StoreError::LeaseLost) } else { Ok(false) };
        }
        sqlx::query("DELETE FROM conversation_items WHERE conversation_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    /// Appends under a fresh `seq` range (`next_seq` is advanced first, which also takes
    /// the row's write lock) and bumps `version`, so a stored transcript is no longer used.
    pub(super) async fn append_items(&self, project: &str, id: &str, items: Vec<Value>) -> Result<bool, StoreError> {
        let n = count(items.len());
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE conversations SET next_seq = next_seq + $2, version = version + 1 WHERE id = $1 AND project = $3",
        )
            .bind(id)
            .bind(n)
            .bind(project)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        let next: i64 = sqlx::query_scalar("SELECT next_seq FROM conversations WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        insert_items(&mut tx, id, next - n, &items, false).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    pub(super) async fn items_page(&self, project: &str, id: &str, q: &ListQuery) -> Result<Option<Page>, StoreError> {
        if !self.exists(project, id).await? {
            return Ok(None);
        }
        let after_seq = match &q.after {
            None => None,
            Some(after) => {
                let seq: Option<i64> =
                    sqlx::query_scalar("SELECT seq FROM conversation_items WHERE conversation_id = $1 AND id = $2")
                        .bind(id)
                        .bind(after)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(db_err)?;
                match seq {
                    Some(s) => Some(s),
                    None => return Err(StoreError::BadCursor(after.clone())),
                }
            }
        };
        let sql = match q.order {
            Order::Asc => {
                "SELECT id, length(item), CASE WHEN length(item) <= $4 THEN item END FROM conversation_items \
                 WHERE conversation_id = $1 AND seq > $2 ORDER BY seq ASC LIMIT $3"
            }
            Order::Desc => {
                "SELECT id, length(item), CASE WHEN length(item) <= $4 THEN item END FROM conversation_items \
                 WHERE conversation_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"
            }
        };
        let bound = after_seq.unwrap_or(match q.order {
            Order::Asc => -1,
            Order::Desc => i64::MAX,
        });
        let rows = sqlx::query(sql)
            .bind(id)
            .bind(bound)
            .bind(count(q.limit).saturating_add(1))
            .bind(self.max_chars)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let has_more = rows.len() > q.limit;
        let mut data = Vec::with_capacity(rows.len().min(q.limit));
        for row in rows.iter().take(q.limit) {
            data.push(item_from_row(row)?);
        }
        Ok(Some(Page { data, has_more }))
    }

    pub(super) async fn item_of(&self, project: &str, id: &str, item_id: &str) -> Result<Lookup<Value>, StoreError> {
        if !self.exists(project, id).await? {
            return Ok(Lookup::NoConversation);
        }
        let row = sqlx::query(
            "SELECT id, length(item), CASE WHEN length(item) <= $3 THEN item END FROM conversation_items \
             WHERE conversation_id = $1 AND id = $2",
        )
        .bind(id)
        .bind(item_id)
        .bind(self.max_chars)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        match row {
            Some(row) => Ok(Lookup::Found(item_from_row(&row)?)),
            None => Ok(Lookup::NoItem),
        }
    }

    pub(super) async fn delete_item_row(&self, project: &str, id: &str, item_id: &str) -> Result<Lookup<Conversation>, StoreError> {
        if !self.exists(project, id).await? {
            return Ok(Lookup::NoConversation);
        }
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query("DELETE FROM conversation_items WHERE conversation_id = $1 AND id = $2")
            .bind(id)
            .bind(item_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(if self.exists(project, id).await? { Lookup::NoItem } else { Lookup::NoConversation });
        }
        sqlx::query("UPDATE conversations SET version = version + 1 WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(match self.conversation_of(project, id).await? {
            Some(c) => Lookup::Found(c),
            None => Lookup::NoConversation,
        })
    }

    /// One conditional UPDATE: free or expired → ours. PostgreSQL re-checks the condition
    /// after a concurrent writer commits, SQLite serialises writers, so exactly one of two
    /// racing turns wins.
    pub(super) async fn take_lease(&self, project: &str, id: &str, owner: &str, ttl_ms: u64) -> Result<LeaseOutcome, StoreError> {
        let done = sqlx::query(
            "UPDATE conversations SET lease_owner = $2, lease_until = $3 \
             WHERE id = $1 AND project = $5 AND (lease_owner IS NULL OR lease_until < $4)",
        )
        .bind(id)
        .bind(owner)
        .bind(ttl(ttl_ms))
        .bind(now_ms())
        .bind(project)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        if done.rows_affected() > 0 {
            Ok(LeaseOutcome::Acquired)
        } else if self.exists(project, id).await? {
            Ok(LeaseOutcome::Busy)
        } else {
            Ok(LeaseOutcome::NotFound)
        }
    }

    pub(super) async fn extend_lease(&self, id: &str, owner: &str, ttl_ms: u64) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE conversations SET lease_until = $3 WHERE id = $1 AND lease_owner = $2")
            .bind(id)
            .bind(owner)
            .bind(ttl(ttl_ms))
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn drop_lease(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE conversations SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2")
            .bind(id)
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// The stored transcript when no item changed since the last turn (`transcript_version =
    /// version`), else every item in order.
    pub(super) async fn context_of(&self, project: &str, id: &str) -> Result<Option<ConversationContext>, StoreError> {
        let row = sqlx::query(
            "SELECT version, transcript_version, length(transcript), \
             CASE WHEN length(transcript) <= $2 THEN transcript END FROM conversations WHERE id = $1 AND project = $3",
        )
        .bind(id)
        .bind(self.max_chars)
        .bind(project)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        let version: i64 = row.try_get(0).map_err(db_err)?;
        let at: Option<i64> = row.try_get(1).map_err(db_err)?;
        if at == Some(version) {
            let text = limited(row.try_get(2).map_err(db_err)?, row.try_get(3).map_err(db_err)?, "conversation transcript", id)?;
            if let Some(text) = text {
                let transcript = parse(&text, "conversation transcript", id)?;
                return Ok(Some(ConversationContext { version, transcript: Some(transcript), items: Vec::new() }));
            }
        }
        let rows = sqlx::query(
            "SELECT id, length(item), CASE WHEN length(item) <= $2 THEN item END FROM conversation_items \
             WHERE conversation_id = $1 ORDER BY seq ASC",
        )
        .bind(id)
        .bind(self.max_chars)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        let items = rows.iter().map(item_from_row).collect::<Result<Vec<_>, _>>()?;
        Ok(Some(ConversationContext { version, transcript: None, items }))
    }
}

/// `(id, length(item), item-if-small)` → the item's JSON.
fn item_from_row(row: &sqlx::any::AnyRow) -> Result<Value, StoreError> {
    let id: String = row.try_get(0).map_err(db_err)?;
    let text = limited(row.try_get(1).map_err(db_err)?, row.try_get(2).map_err(db_err)?, "conversation item", &id)?;
    parse(text.as_deref().unwrap_or("null"), "conversation item", &id)
}
