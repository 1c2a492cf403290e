//! `GET /v1/gateway/tools`: which of the gateway's tools have a backend here, with the reason
//! (naming the setting, never a value) for those that have none; what a request declaring an
//! unavailable one gets agrees with it.

use crate::common::{error_of, Harness};
use responses_gateway::config::mcp::McpServerConfig;
use responses_gateway::config::WebSearchBackendKind;
use responses_gateway::executors::file_search::config::RemoteStoreConfig;
use serde_json::{json, Value};

fn entry<'a>(body: &'a Value, kind: &str) -> &'a Value {
    body["data"].as_array().unwrap().iter().find(|t| t["type"] == kind).unwrap_or_else(|| panic!("no {kind} in {body}"))
}

#[tokio::test]
async fn the_default_deployment_has_file_search_and_package_version_only() {
    let h = Harness::start().await;
    let (status, body) = h.get("/v1/gateway/tools").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list");
    let kinds: Vec<(String, Option<&str>, bool)> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["type"].as_str().unwrap().to_string(), t["name"].as_str(), t["available"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("web_search".into(), None, false),
            ("file_search".into(), None, true),
            ("mcp".into(), None, false),
            ("custom".into(), Some("package_version"), true),
        ]
    );
    assert_eq!(entry(&body, "file_search")["vector_store_api"], true);
    assert_eq!(entry(&body, "mcp")["server_labels"], json!([]));
    assert_eq!(entry(&body, "mcp")["server_urls"], false);
    assert!(entry(&body, "file_search").get("reason").is_none());
    // The reason is the message a request declaring the tool gets.
    let reason = entry(&body, "web_search")["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("[web_search]"), "{reason}");
    let (status, refused) = h.post(json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]})).await;
    assert_eq!((status, error_of(&refused)["code"].as_str()), (400, Some("tool_not_configured")), "{refused}");
    assert_eq!(error_of(&refused)["message"], reason.as_str());
    let mcp = entry(&body, "mcp")["reason"].as_str().unwrap();
    assert!(mcp.contains("mcp.allowed_urls") && mcp.contains("[mcp.servers.<label>]"), "{mcp}");
    assert!(h.upstream.requests().is_empty(), "asking costs no model call");
}

#[tokio::test]
async fn configured_backends_are_available_and_broken_ones_say_which_setting() {
    // A web_search backend; no embedded store and a remote whose key variable is unset;
    // MCP: an allowed URL prefix, a usable operator server and one whose token variable is
    // unset; package_version turned off.
    let h = Harness::start_with(|c| {
        c.web_search.backend = Some(WebSearchBackendKind::Http);
        c.web_search.http.url = Some("http://127.0.0.1:9/search".into());
        c.file_search.embedded.enabled = false;
        c.file_search.default = "ogx".into();
        c.file_search.remotes.insert(
            "ogx".into(),
            RemoteStoreConfig { url: Some("http://127.0.0.1:9/v1".into()), api_key_env: Some("RG_TOOLS_TEST_UNSET_KEY".into()) },
        );
        c.mcp.allowed_urls = vec!["https://mcp.example.com/".into()];
        c.mcp.servers.insert("wiki".into(), McpServerConfig { url: "http://10.0.0.5:8000/mcp".into(), ..Default::default() });
        c.mcp.servers.insert(
            "broken".into(),
            McpServerConfig {
                url: "http://10.0.0.6:8000/mcp".into(),
                authorization_env: Some("RG_TOOLS_TEST_UNSET_TOKEN".into()),
                ..Default::default()
            },
        );
        c.server_tools.package_version.enabled = false;
    })
    .await;
    let (status, body) = h.get("/v1/gateway/tools").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(entry(&body, "web_search")["available"], true);
    let fs = entry(&body, "file_search");
    assert_eq!((fs["available"].as_bool(), fs["vector_store_api"].as_bool()), (Some(false), Some(false)), "{fs}");
    let reason = fs["reason"].as_str().unwrap();
    assert!(reason.contains("file_search.remotes.ogx.api_key_env") && reason.contains("RG_TOOLS_TEST_UNSET_KEY"), "{reason}");
    let mcp = entry(&body, "mcp");
    assert_eq!(mcp["available"], true);
    assert_eq!(mcp["server_urls"], true);
    assert_eq!(mcp["server_labels"], json!(["wiki"]), "only the usable operator server");
    assert!(!body.to_string().contains("10.0.0.5"), "an operator server's URL is never shown: {body}");
    assert!(body["data"].as_array().unwrap().iter().all(|t| t["type"] != "custom"), "package_version is off: {body}");
}
