//! `loadgen vector-fixture`: a remote vector store (OpenAI's API shape) that answers at
//! once, for the file_search benchmark scenario. `GET /v1/vector_stores/{id}` answers the
//! store object, every `POST` (e.g. `/v1/vector_stores/{id}/search`) the same search page
//! (`PAGE`, three chunks), `GET /healthz` `ok`. HTTP/1.1 keep-alive. Prints `LISTENING
//! http://ADDR/v1` once bound; on SIGTERM or Ctrl-C prints `SERVED <n> searches` and exits.

use std::sync::Arc;

use crate::fixture_server::{self, response};

/// A search page in OpenAI's shape: three chunks of two files.
pub const PAGE: &str = r#"{"object":"vector_store.search_results.page","search_query":["tour de france 2025 winner"],"data":[
{"file_id":"file-tdf2025","filename":"tour-2025.md","score":0.91,"attributes":{"year":2025},"content":[{"type":"text","text":"The 2025 Tour de France was the 112th edition. It started in Lille on 5 July and finished in Paris on 27 July. Tadej Pogačar won the general classification, his fourth Tour title, ahead of Jonas Vingegaard and Florian Lipowitz."}]},
{"file_id":"file-tdf2025","filename":"tour-2025.md","score":0.77,"attributes":{"year":2025},"content":[{"type":"text","text":"Stage 21 ended on the Champs-Élysées after three climbs of Montmartre; Wout van Aert won the stage."}]},
{"file_id":"file-history","filename":"tour-history.txt","score":0.52,"attributes":{"year":2024},"content":[{"type":"text","text":"Four riders share the record of five overall wins: Anquetil, Merckx, Hinault and Induráin."}]}
],"has_more":false,"next_page":null}"#;

const STORE: &str = r#"{"id":"vs_bench","object":"vector_store","status":"completed"}"#;

/// Serves until SIGTERM / Ctrl-C.
pub async fn serve(listen: &str) -> anyhow::Result<()> {
    let page = response("application/json", PAGE);
    let store = response("application/json", STORE);
    let health = response("text/plain", "ok");
    let route = move |head: &[u8]| {
        if head.starts_with(b"POST ") {
            (page.clone(), true)
        } else if head.starts_with(b"GET /healthz") {
            (health.clone(), false)
        } else {
            (store.clone(), false)
        }
    };
    fixture_server::serve(listen, "/v1", Arc::new(route)).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_is_a_search_page() {
        let v: serde_json::Value = serde_json::from_str(super::PAGE).unwrap();
        assert_eq!(v["data"].as_array().unwrap().len(), 3);
    }
}
