//! Ranking the deferred catalog for a query: SQLite FTS5's BM25 (the embedded index's
//! search library, `executors::local_index`) over an in-memory table, one row per tool,
//! its columns weighted: the tool's name, its holder's name (namespace or MCP server), the
//! descriptions, the parameter names. Porter stemming, diacritics folded; the query's
//! words are OR-ed, each quoted (no FTS syntax reaches SQLite).

use std::str::FromStr;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

/// One searchable tool.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Its name and model-visible name.
    pub name: String,
    /// The namespace's or MCP server's name (and the function's own, for a function).
    pub surface: String,
    /// The tool's description and its holder's.
    pub description: String,
    /// Its parameter names.
    pub params: String,
}

/// Column weights of `bm25()`: name, surface, description, params.
const WEIGHTS: &str = "10.0, 4.0, 1.0, 2.0";

/// The share of the best match's score a tool needs to be loaded too.
const RELATIVE: f64 = 0.5;

/// The indexes of `docs` that match `query`, best first, at most `limit`. `Err` is a
/// message for the model (SQLite failed).
pub async fn rank(query: &str, docs: &[Doc], limit: usize) -> Result<Vec<usize>, String> {
    let words = words(query);
    if words.is_empty() || docs.is_empty() {
        return Ok(Vec::new());
    }
    let fail = |e: sqlx::Error| {
        tracing::warn!(error = %e, "the tool search's index failed");
        "error: the tool search failed.".to_string()
    };
    let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(fail)?;
    let mut conn = options.connect().await.map_err(fail)?;
    sqlx::query("CREATE VIRTUAL TABLE tools USING fts5(name, surface, description, params, tokenize = 'porter unicode61 remove_diacritics 2')")
        .execute(&mut conn)
        .await
        .map_err(fail)?;
    let mut tx = conn.begin().await.map_err(fail)?;
    for (i, d) in docs.iter().enumerate() {
        sqlx::query("INSERT INTO tools(rowid, name, surface, description, params) VALUES (?, ?, ?, ?, ?)")
            .bind(i as i64)
            .bind(&d.name)
            .bind(&d.surface)
            .bind(&d.description)
            .bind(&d.params)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)?;
    let expr = words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR ");
    let sql = format!("SELECT rowid, -bm25(tools, {WEIGHTS}) FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, {WEIGHTS}) LIMIT ?");
    let rows: Vec<(i64, f64)> = sqlx::query_as(&sql).bind(expr).bind(limit as i64).fetch_all(&mut conn).await.map_err(fail)?;
    let _ = conn.close().await;
    // Tools far behind the best match (sharing a word or two with the query) are not loaded.
    let best = rows.first().map_or(0.0, |r| r.1);
    Ok(rows.into_iter().filter(|r| r.1 >= best * RELATIVE).filter_map(|(i, _)| usize::try_from(i).ok()).collect())
}

/// The query's words: runs of letters and digits (`_` and `-` split them, as in names) of
/// two characters or more, lowercased, each once.
fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() > 1) {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, surface: &str, description: &str, params: &str) -> Doc {
        Doc { name: name.into(), surface: surface.into(), description: description.into(), params: params.into() }
    }

    #[tokio::test]
    async fn names_descriptions_holders_and_parameters_rank() {
        let docs = vec![
            doc("get_weather get_weather", "get_weather", "Current weather for a city.", "city"),
            doc("find_customer crm__find_customer", "crm", "The CRM. Find a customer by email.", "email"),
            doc("create_invoice billing__create_invoice", "billing", "Invoices. Create an invoice.", "amount currency"),
        ];
        assert_eq!(rank("weather in Paris", &docs, 5).await.unwrap(), vec![0]);
        assert_eq!(rank("customers", &docs, 5).await.unwrap(), vec![1], "stemmed");
        assert_eq!(rank("crm", &docs, 5).await.unwrap(), vec![1], "the namespace's name");
        assert_eq!(rank("currency", &docs, 5).await.unwrap(), vec![2], "a parameter's name");
        assert_eq!(rank("invoice customer", &docs, 1).await.unwrap().len(), 1, "limited");
        assert_eq!(rank("find a customer by email", &docs, 5).await.unwrap(), vec![1], "one-letter words and weak matches left out");
        assert!(rank("\" OR * NEAR(", &docs, 5).await.unwrap().is_empty(), "no FTS syntax reaches SQLite");
        assert!(rank("nothing matches", &docs, 5).await.unwrap().is_empty());
    }
}
