//! `file_search` tool (contract §2): gateway-owned. Upstream sees a function
//! `file_search(queries)`; its calls become `file_search_call` items, and the answer's
//! `【N】` markers become `file_citation` annotations. Which executor serves each vector
//! store is resolved later, asynchronously ([`crate::turn::prepare`]).

use protocol::ApiError;
use serde_json::{json, Value};

use super::{Owner, ToolEntry, ToolKind, UpstreamTool};
use crate::events::file_citations::FileSource;
use crate::executors::file_search::{filters, render::render_for_model, FileHit, FileSearchRequest};
use crate::transcript::{Call, Replayed};

/// The model-visible name of the gateway's file search function.
pub const FUNCTION: &str = "file_search";

/// A validated declaration: what each search of this request uses.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSearchOptions {
    /// `vector_store_ids`, non-empty.
    pub vector_store_ids: Vec<String>,
    /// 1–50, default 20.
    pub max_num_results: u32,
    pub filters: Option<Value>,
    pub ranker: Option<String>,
    /// 0..1, default 0.
    pub score_threshold: f64,
    /// `hybrid_search` `(embedding_weight, text_weight)`.
    pub hybrid: Option<(f64, f64)>,
}

impl FileSearchOptions {
    /// The executor request for one query.
    pub fn request(&self, query: String) -> FileSearchRequest {
        FileSearchRequest {
            query,
            max_num_results: self.max_num_results,
            filters: self.filters.clone(),
            ranker: self.ranker.clone(),
            score_threshold: self.score_threshold,
            hybrid: self.hybrid,
        }
    }
}

fn invalid(param: String, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, message).with_code("invalid_value")
}

fn number(v: &Value, param: String, lo: f64, hi: f64) -> Result<f64, ApiError> {
    match v.as_f64() {
        Some(x) if (lo..=hi).contains(&x) => Ok(x),
        _ => Err(invalid(param.clone(), format!("'{param}' must be a number from {lo} to {hi}."))),
    }
}

/// Validates a declaration (contract §2). Errors are 400s naming the field
/// (`tools[i].vector_store_ids`, `.max_num_results`, `.ranking_options.*`, `.filters`).
pub fn declare(decl: &Value, param: &str) -> Result<(Vec<ToolEntry>, Value), ApiError> {
    let ids_param = format!("{param}.vector_store_ids");
    let vector_store_ids: Vec<String> = match decl.get("vector_store_ids") {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(ids_param.clone(), format!("Missing required parameter: '{ids_param}'."))
                .with_code("missing_required_parameter"))
        }
        Some(Value::Array(a)) if !a.is_empty() => {
            let mut out = Vec::with_capacity(a.len());
            for v in a {
                match v.as_str() {
                    Some(s) if !s.trim().is_empty() => out.push(s.to_string()),
                    _ => return Err(invalid(ids_param, "vector_store_ids must be a list of vector store ids.")),
                }
            }
            out
        }
        Some(_) => return Err(invalid(ids_param, "vector_store_ids must be a non-empty list of vector store ids.")),
    };
    let max_num_results = match decl.get("max_num_results") {
        None | Some(Value::Null) => 20,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=50) => n as u32,
            _ => return Err(invalid(format!("{param}.max_num_results"), "max_num_results must be an integer from 1 to 50.")),
        },
    };
    let (mut ranker, mut score_threshold, mut hybrid) = (None, 0.0, None);
    match decl.get("ranking_options") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            let rp = format!("{param}.ranking_options");
            match o.get("ranker") {
                None | Some(Value::Null) => {}
                Some(Value::String(r)) if matches!(r.as_str(), "auto" | "default-2024-11-15" | "none") => ranker = Some(r.clone()),
                Some(_) => return Err(invalid(format!("{rp}.ranker"), "ranker must be 'auto', 'default-2024-11-15' or 'none'.")),
            }
            if let Some(v) = o.get("score_threshold").filter(|v| !v.is_null()) {
                score_threshold = number(v, format!("{rp}.score_threshold"), 0.0, 1.0)?;
            }
            match o.get("hybrid_search") {
                None | Some(Value::Null) => {}
                Some(Value::Object(h)) => {
                    let hp = format!("{rp}.hybrid_search");
                    let w = |k: &str| match h.get(k) {
                        Some(v) => number(v, format!("{hp}.{k}"), 0.0, f64::MAX),
                        None => Err(ApiError::invalid(format!("{hp}.{k}"), format!("Missing required parameter: '{hp}.{k}'."))
                            .with_code("missing_required_parameter")),
                    };
                    hybrid = Some((w("embedding_weight")?, w("text_weight")?));
                }
                Some(_) => return Err(invalid(format!("{rp}.hybrid_search"), "hybrid_search must be an object.")),
            }
        }
        Some(_) => return Err(invalid(format!("{param}.ranking_options"), "ranking_options must be an object.")),
    }
    let filters = match decl.get("filters") {
        None | Some(Value::Null) => None,
        Some(f) => {
            filters::validate(f).map_err(|why| invalid(format!("{param}.filters"), format!("Invalid filters: {why}.")))?;
            Some(f.clone())
        }
    };
    let mut ranking_echo = json!({"ranker": ranker.clone().unwrap_or_else(|| "auto".into()), "score_threshold": score_threshold});
    if let Some((e, t)) = hybrid {
        ranking_echo["hybrid_search"] = json!({"embedding_weight": e, "text_weight": t});
    }
    let echo = json!({
        "type": "file_search",
        "vector_store_ids": vector_store_ids,
        "filters": filters,
        "max_num_results": max_num_results,
        "ranking_options": ranking_echo,
    });
    let options = FileSearchOptions { vector_store_ids, max_num_results, filters, ranker, score_threshold, hybrid };
    let entry = ToolEntry {
        name: FUNCTION.to_string(),
        namespace: None,
        kind: ToolKind::FileSearch(options),
        owner: Owner::Gateway,
        upstream: UpstreamTool {
            name: FUNCTION.to_string(),
            description: Some(
                "Search the user's uploaded files for passages relevant to the question. Returns numbered \
                 excerpts; cite the ones you use by writing their marker, e.g. 【1】."
                    .to_string(),
            ),
            parameters: json!({
                "type": "object",
                "properties": {"queries": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 5,
                    "description": "One to five search queries."
                }},
                "required": ["queries"],
            }),
            strict: None,
            native: None,
        },
        executor: None,
    };
    Ok((vec![entry], echo))
}

/// Replays a `file_search_call` item: the call with its queries, and its result shown again
/// from `results` (with `include: ["file_search_call.results"]`; the chunks are numbered
/// after `sources`, which they join) or only its queries (lossy).
pub fn replay(fs: &protocol::input::FileSearchCallItem, sources: &mut Vec<FileSource>) -> Replayed {
    let call = Call { call_id: fs.id.clone(), name: FUNCTION.to_string(), arguments: json!({"queries": fs.queries}).to_string() };
    let result = match &fs.results {
        Some(results) => {
            let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let hits: Vec<FileHit> = results
                .iter()
                .map(|r| FileHit {
                    file_id: str_of(r, "file_id"),
                    filename: str_of(r, "filename"),
                    score: r.get("score").and_then(Value::as_f64).unwrap_or(0.0),
                    text: str_of(r, "text"),
                    attributes: r.get("attributes").and_then(Value::as_object).cloned().unwrap_or_default(),
                })
                .collect();
            let text = render_for_model(&fs.queries, &hits, sources.len() + 1);
            sources.extend(hits.iter().map(|h| FileSource { file_id: h.file_id.clone(), filename: h.filename.clone() }));
            text
        }
        None => format!(
            "File search for {} (earlier turn; the results were not kept).",
            fs.queries.iter().map(|q| format!("\"{q}\"")).collect::<Vec<_>>().join(", ")
        ),
    };
    Replayed { call, result: Some(result), private_key: None }
}
