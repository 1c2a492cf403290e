//! Stored responses: load one column of one row (size-checked before it is read), delete,
//! and the atomic end-of-turn write (response row + conversation append + lease release).

use std::collections::HashMap;

use serde_json::Value;
use sqlx::Row;

use super::{db_err, item_id, limited, paginate, parse, to_json, SqlStore};
use crate::store::{FoundItem, ListQuery, Page, StoreError, StoredResponse, TurnRecord};
use crate::transcript::Transcript;

/// Which JSON column of `responses` to load.
#[derive(Clone, Copy)]
enum Column {
    Response,
    InputItems,
    Transcript,
}

impl Column {
    fn sql(self) -> &'static str {
        match self {
            Column::Response => {
                "SELECT length(response), CASE WHEN length(response) <= $2 THEN response END FROM responses WHERE id = $1 AND project = $3"
            }
            Column::InputItems => {
                "SELECT length(input_items), CASE WHEN length(input_items) <= $2 THEN input_items END FROM responses WHERE id = $1 AND project = $3"
            }
            Column::Transcript => {
                "SELECT length(transcript), CASE WHEN length(transcript) <= $2 THEN transcript END FROM responses WHERE id = $1 AND project = $3"
            }
        }
    }

    fn what(self) -> &'static str {
        match self {
            Column::Response => "response",
            Column::InputItems => "input items of response",
            Column::Transcript => "transcript of response",
        }
    }
}

impl SqlStore {
    /// [`crate::store::Store::stored_item`]: a conversation item of the project by id, else
    /// the item of that id in a stored response's output or input items. The responses are
    /// narrowed with `LIKE` on the serialized JSON (a superset: `_` matches any character)
    /// and the id is then matched exactly.
    pub(super) async fn stored_item_of(&self, project: &str, item_id: &str) -> Result<Option<FoundItem>, StoreError> {
        let row = sqlx::query(
            "SELECT i.id, length(i.item), CASE WHEN length(i.item) <= $3 THEN i.item END FROM conversation_items i \
             JOIN conversations c ON c.id = i.conversation_id WHERE c.project = $1 AND i.id = $2 LIMIT 1",
        )
        .bind(project)
        .bind(item_id)
        .bind(self.max_chars)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if let Some(row) = row {
            let len: Option<i64> = row.try_get(1).map_err(db_err)?;
            let text: Option<String> = row.try_get(2).map_err(db_err)?;
            if let Some(text) = limited(len, text, "conversation item", item_id)? {
                return parse(&text, "conversation item", item_id).map(|item| Some(FoundItem { item, response_id: None }));
            }
        }
        let needle = format!("%{}%", serde_json::json!({"id": item_id}).to_string().trim_start_matches('{').trim_end_matches('}'));
        let rows = sqlx::query(
            "SELECT id, length(response) + length(input_items), CASE WHEN length(response) + length(input_items) <= $3 THEN response END, \
             CASE WHEN length(response) + length(input_items) <= $3 THEN input_items END FROM responses \
             WHERE project = $1 AND (response LIKE $2 OR input_items LIKE $2) ORDER BY created_at DESC LIMIT 20",
        )
        .bind(project)
        .bind(&needle)
        .bind(self.max_chars)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        for row in rows {
            let id: String = row.try_get(0).map_err(db_err)?;
            let len: Option<i64> = row.try_get(1).map_err(db_err)?;
            let response: Option<String> = row.try_get(2).map_err(db_err)?;
            let input: Option<String> = row.try_get(3).map_err(db_err)?;
            let Some(response) = limited(len, response, "response", &id)? else { continue };
            let response: Value = parse(&response, "response", &id)?;
            let input: Vec<Value> = parse(input.as_deref().unwrap_or("[]"), "input items of response", &id)?;
            let output = response.get("output").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if let Some(found) = output.iter().chain(&input).find(|i| i.get("id").and_then(Value::as_str) == Some(item_id) && i.get("type").and_then(Value::as_str) != Some("item_reference")) {
                return Ok(Some(FoundItem { item: found.clone(), response_id: Some(id) }));
            }
        }
        Ok(None)
    }

    /// [`crate::store::Store::in_chain`]: walks `last`'s `previous_response_id` chain in
    /// the database (a recursive query, portable to SQLite and PostgreSQL).
    pub(super) async fn in_chain_of(&self, project: &str, last: &str, id: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = sqlx::query_scalar(
            "WITH RECURSIVE chain(id, prev, depth) AS ( \
               SELECT id, previous_response_id, 0 FROM responses WHERE id = $1 AND project = $2 \
               UNION ALL SELECT r.id, r.previous_response_id, c.depth + 1 FROM responses r JOIN chain c ON r.id = c.prev \
               WHERE r.project = $2 AND c.depth < 10000) \
             SELECT 1 FROM chain WHERE id = $3 LIMIT 1",
        )
        .bind(last)
        .bind(project)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(found.is_some())
    }

    async fn column(&self, project: &str, id: &str, col: Column) -> Result<Option<String>, StoreError> {
        let row = sqlx::query(col.sql())
            .bind(id)
            .bind(self.max_chars)
            .bind(project)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        let len: Option<i64> = row.try_get(0).map_err(db_err)?;
        let text: Option<String> = row.try_get(1).map_err(db_err)?;
        limited(len, text, col.what(), id)
    }

    pub(super) async fn transcript_of(&self, project: &str, id: &str) -> Result<Option<Transcript>, StoreError> {
        match self.column(project, id, Column::Transcript).await? {
            None => Ok(None),
            Some(text) => parse(&text, Column::Transcript.what(), id).map(Some),
        }
    }

    pub(super) async fn response_of(&self, project: &str, id: &str) -> Result<Option<Value>, StoreError> {
        match self.column(project, id, Column::Response).await? {
            None => Ok(None),
            Some(text) => parse::<Value>(&text, Column::Response.what(), id).map(Some),
        }
    }

    pub(super) async fn delete_response_row(&self, project: &str, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM responses WHERE id = $1 AND project = $2")
            .bind(id)
            .bind(project)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        sqlx::query("DELETE FROM tool_results WHERE response_id = $1 AND project = $2")
            .bind(id)
            .bind(project)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        if done.rows_affected() > 0 {
            // Its event log (a background response's) goes with it.
            sqlx::query("DELETE FROM response_events WHERE response_id = $1").bind(id).execute(&self.pool).await.map_err(db_err)?;
        }
        Ok(done.rows_affected() > 0)
    }

    pub(super) async fn tool_results_of(&self, project: &str, item_ids: &[String]) -> Result<HashMap<String, (String, String)>, StoreError> {
        let mut out = HashMap::new();
        for id in item_ids {
            let row: Option<(String, String)> = sqlx::query_as("SELECT query, output FROM tool_results WHERE item_id = $1 AND project = $2")
                .bind(id)
                .bind(project)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
            if let Some(r) = row {
                out.insert(id.clone(), r);
            }
        }
        Ok(out)
    }

    /// Records the answers to approval requests in one transaction: `denied` ones (again, at
    /// no cost), then `approved` ones, each of which must be new. Returns the first approved id
    /// answered already (by an approval or a denial), and then records nothing. `record: false`
    /// only looks. Each insert conflicts on its key, so two approvals at once cannot both pass.
    pub(super) async fn answer_approvals_of(&self, project: &str, approved: &[String], denied: &[String], record: bool) -> Result<Option<String>, StoreError> {
        if !record {
            for id in approved {
                let found: Option<(i64,)> = sqlx::query_as("SELECT answered_at FROM approvals_answered WHERE project = $1 AND request_id = $2")
                    .bind(project)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
                if found.is_some() {
                    return Ok(Some(id.clone()));
                }
            }
            return Ok(None);
        }
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let now = super::super::now_ms();
        const INSERT: &str = "INSERT INTO approvals_answered (project, request_id, answered_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
        for id in denied {
            sqlx::query(INSERT).bind(project).bind(id).bind(now).execute(&mut *tx).await.map_err(db_err)?;
        }
        for id in approved {
            let inserted = sqlx::query(INSERT).bind(project).bind(id).bind(now).execute(&mut *tx).await.map_err(db_err)?.rows_affected();
            if inserted == 0 {
                tx.rollback().await.map_err(db_err)?;
                return Ok(Some(id.clone()));
            }
        }
        tx.commit().await.map_err(db_err)?;
        Ok(None)
    }

    pub(super) async fn input_items_of(&self, project: &str, id: &str, q: &ListQuery) -> Result<Option<Page>, StoreError> {
        let Some(text) = self.column(project, id, Column::InputItems).await? else { return Ok(None) };
        let items: Vec<Value> = parse(&text, Column::InputItems.what(), id)?;
        paginate(items, q).map(Some)
    }

    /// The end-of-turn write, in one transaction. With a conversation the first statement
    /// checks and releases the lease (and takes SQLite's write lock, so the transaction
    /// never has to upgrade a read lock); a lost lease rolls everything back. Large values
    /// are moved into their statements (not copied) and those statements are not cached,
    /// so that the database library's copies of them are freed with the statement (issue 28).
    pub(super) async fn save(&self, turn: TurnRecord) -> Result<(), StoreError> {
        let TurnRecord { project, response_id, created_at, status, previous_response_id, stored, transcript, conversation, tool_results } = turn;
        let json = to_json(&transcript)?;
        drop(transcript);
        let transcript = json;
        let tool_results = if stored.is_some() { tool_results } else { Vec::new() };
        let row = TurnRow { response_id: &response_id, created_at, status: &status, previous_response_id: previous_response_id.as_deref(), project: &project };
        let Some(conv) = conversation else {
            if let Some(stored) = stored {
                if tool_results.is_empty() {
                    // One statement is atomic on its own: no transaction round trips.
                    insert_response(&row, None, stored, transcript).execute(&self.pool).await.map_err(db_err)?;
                } else {
                    let mut tx = self.pool.begin().await.map_err(db_err)?;
                    insert_response(&row, None, stored, transcript).execute(&mut *tx).await.map_err(db_err)?;
                    insert_tool_results(&mut tx, &project, &response_id, &tool_results).await?;
                    tx.commit().await.map_err(db_err)?;
                }
            }
            return Ok(());
        };
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let n = i64::try_from(conv.items.len()).unwrap_or(i64::MAX);
        // The response row needs the transcript too: the conversation's copy is the clone.
        let (for_conversation, for_response) = match stored.is_some() {
            true => (transcript.clone(), Some(transcript)),
            false => (transcript, None),
        };
        let large = for_conversation.len() >= LARGE_VALUE;
        let updated = sqlx::query(
            "UPDATE conversations SET next_seq = next_seq + $3, version = version + 1, transcript = $4, \
             transcript_version = CASE WHEN version = $5 THEN version + 1 ELSE NULL END, \
             lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2",
        )
        .bind(&conv.id)
        .bind(&conv.lease_owner)
        .bind(n)
        .bind(for_conversation)
        .bind(conv.version)
        .persistent(!large)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::LeaseLost);
        }
        let next: i64 = sqlx::query_scalar("SELECT next_seq FROM conversations WHERE id = $1")
            .bind(&conv.id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        // Items whose id is already in the conversation (a client replaying an item)
        // are not added twice.
        insert_items(&mut tx, &conv.id, next - n, &conv.items, true).await?;
        if let (Some(stored), Some(transcript)) = (stored, for_response) {
            insert_response(&row, Some(&conv.id), stored, transcript).execute(&mut *tx).await.map_err(db_err)?;
            insert_tool_results(&mut tx, &project, &response_id, &tool_results).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(())
    }
}

/// A value at least this large (bytes) is bound in a statement that is not cached: a
/// cached statement keeps the database library's copy of its values until it runs again.
pub(super) const LARGE_VALUE: usize = 64 << 10;

/// The small columns of a `responses` row.
struct TurnRow<'a> {
    response_id: &'a str,
    created_at: i64,
    status: &'a str,
    previous_response_id: Option<&'a str>,
    project: &'a str,
}

/// The `tool_results` rows of a turn (an item id already stored keeps its first row).
async fn insert_tool_results(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    project: &str,
    response_id: &str,
    results: &[(String, String, String)],
) -> Result<(), StoreError> {
    for (item_id, query, output) in results {
        sqlx::query(
            "INSERT INTO tool_results (item_id, response_id, query, output, project) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (item_id) DO NOTHING",
        )
            .bind(item_id)
            .bind(response_id)
            .bind(query)
            .bind(output)
            .bind(project)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// The `responses` row of a turn; its JSON columns are moved in.
fn insert_response<'q>(row: &TurnRow<'q>, conversation_id: Option<&'q str>, stored: StoredResponse, transcript: String) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    let large = stored.response.len() + stored.input_items.len() + transcript.len() >= LARGE_VALUE;
    sqlx::query(
        "INSERT INTO responses (id, created_at, status, previous_response_id, conversation_id, response, input_items, transcript, project) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(row.response_id)
    .bind(row.created_at)
    .bind(row.status)
    .bind(row.previous_response_id)
    .bind(conversation_id)
    .bind(stored.response)
    .bind(stored.input_items)
    .bind(transcript)
    .bind(row.project)
    .persistent(!large)
}

/// Inserts items at `seq`, `seq + 1`, …; `skip_existing` leaves out ids already present.
pub(super) async fn insert_items(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    conversation_id: &str,
    first_seq: i64,
    items: &[Value],
    skip_existing: bool,
) -> Result<(), StoreError> {
    let sql = if skip_existing {
        "INSERT INTO conversation_items (conversation_id, seq, id, item) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (conversation_id, id) DO NOTHING"
    } else {
        "INSERT INTO conversation_items (conversation_id, seq, id, item) VALUES ($1, $2, $3, $4)"
    };
    for (i, item) in items.iter().enumerate() {
        let seq = first_seq + i64::try_from(i).unwrap_or(i64::MAX);
        let json = to_json(item)?;
        let large = json.len() >= LARGE_VALUE;
        let done = sqlx::query(sql)
            .bind(conversation_id)
            .bind(seq)
            .bind(item_id(item))
            .bind(json)
            .persistent(!large)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        if done.rows_affected() == 0 {
            // The id is taken. The same item replayed is skipped; a different item that
            // reuses the id is kept under a new id rather than lost.
            let existing: Option<String> = sqlx::query_scalar("SELECT item FROM conversation_items WHERE conversation_id = $1 AND id = $2")
                .bind(conversation_id)
                .bind(item_id(item))
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_err)?;
            let same = existing.and_then(|e| serde_json::from_str::<Value>(&e).ok()).is_some_and(|e| e == *item);
            if !same {
                let mut renamed = item.clone();
                if let Some(o) = renamed.as_object_mut() {
                    o.insert("id".into(), Value::String(crate::store::items::fresh_id(item)));
                }
                sqlx::query("INSERT INTO conversation_items (conversation_id, seq, id, item) VALUES ($1, $2, $3, $4)")
                    .bind(conversation_id)
                    .bind(seq)
                    .bind(item_id(&renamed))
                    .bind(to_json(&renamed)?)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_err)?;
            }
        }
    }
    Ok(())
}
