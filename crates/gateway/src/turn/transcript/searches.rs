//! Replayed `web_search_call` and `file_search_call` items as the model saw them: the call
//! under the gateway's function name and its result, rebuilt from what the item carries
//! (contract §4.2).

use super::{Call, WEB_SEARCH_FUNCTION};

/// A replayed web search: its call, the result rebuilt from its query and sources (the
/// results themselves are not on the wire), and the query.
pub(super) fn web_search_replay(ws: &protocol::input::WebSearchCallItem) -> (Call, String, String) {
    let action = ws.action.as_ref();
    let query = action
        .and_then(|a| a.get("query").and_then(|q| q.as_str()).map(str::to_string))
        .or_else(|| action.and_then(|a| a.pointer("/queries/0")).and_then(|q| q.as_str()).map(str::to_string))
        .unwrap_or_default();
    let sources: Vec<&str> = action
        .and_then(|a| a.get("sources"))
        .and_then(|s| s.as_array())
        .map(|a| a.iter().filter_map(|s| s.get("url").and_then(|u| u.as_str())).collect())
        .unwrap_or_default();
    let mut result = format!("Web search for \"{query}\" (earlier turn; results not kept).");
    if !sources.is_empty() {
        result.push_str(&format!(" Sources: {}", sources.join(", ")));
    }
    let call = Call {
        call_id: ws.id.clone(),
        name: WEB_SEARCH_FUNCTION.to_string(),
        arguments: serde_json::json!({"query": query}).to_string(),
    };
    (call, result, query)
}

/// A replayed file search: its call, and its result shown again from `results` (with
/// `include: ["file_search_call.results"]`; the chunks are numbered after `sources`) or
/// only its queries.
pub(super) fn file_search_replay(fs: &protocol::input::FileSearchCallItem, sources: &mut Vec<crate::events::file_citations::FileSource>) -> (Call, String) {
    use crate::executors::file_search::{render::render_for_model, FileHit};
    let call = Call {
        call_id: fs.id.clone(),
        name: crate::tools::file_search::FUNCTION.to_string(),
        arguments: serde_json::json!({"queries": fs.queries}).to_string(),
    };
    let result = match &fs.results {
        Some(results) => {
            let str_of = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string();
            let hits: Vec<FileHit> = results
                .iter()
                .map(|r| FileHit {
                    file_id: str_of(r, "file_id"),
                    filename: str_of(r, "filename"),
                    score: r.get("score").and_then(|x| x.as_f64()).unwrap_or(0.0),
                    text: str_of(r, "text"),
                    attributes: r.get("attributes").and_then(|a| a.as_object()).cloned().unwrap_or_default(),
                })
                .collect();
            let text = render_for_model(&fs.queries, &hits, sources.len() + 1);
            sources.extend(hits.iter().map(|h| crate::events::file_citations::FileSource { file_id: h.file_id.clone(), filename: h.filename.clone() }));
            text
        }
        None => format!(
            "File search for {} (earlier turn; the results were not kept).",
            fs.queries.iter().map(|q| format!("\"{q}\"")).collect::<Vec<_>>().join(", ")
        ),
    };
    (call, result)
}
