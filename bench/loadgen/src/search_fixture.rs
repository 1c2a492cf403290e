//! `loadgen search-fixture`: a search backend that answers at once, for the web_search
//! benchmark scenario. Every `GET` (any path and query, e.g. `/search?q=…&format=json`)
//! gets the same SearXNG-shaped JSON page (`PAGE`), `GET /healthz` gets `ok`. HTTP/1.1
//! keep-alive, no allocation per request beyond the read buffer, so what the benchmark
//! measures is the gateway. Prints `LISTENING http://ADDR/search` once bound; on SIGTERM or
//! Ctrl-C prints `SERVED <n> searches` (so a run can check that every request searched) and
//! exits.

use std::sync::Arc;

use crate::fixture_server::{self, response};

/// A realistic SearXNG page: five results, one duplicate URL and one `javascript:` URL (the
/// gateway drops both), the extra top-level keys a real instance sends.
pub const PAGE: &str = r#"{"query":"2025 Tour de France winner","number_of_results":0,"results":[
{"url":"https://en.wikipedia.org/wiki/2025_Tour_de_France","title":"2025 Tour de France - Wikipedia","content":"The 2025 Tour de France was the 112th edition of the Tour de France. It started in Lille on 5 July and finished in Paris on 27 July. Tadej Pogačar won the general classification, his fourth Tour title.","engine":"wikipedia","engines":["wikipedia","duckduckgo"],"score":5.0,"publishedDate":"2025-07-28T00:00:00","parsed_url":["https","en.wikipedia.org","/wiki/2025_Tour_de_France","","",""],"template":"default.html","positions":[1],"category":"general","thumbnail":null},
{"url":"https://www.letour.fr/en/rankings","title":"Rankings - Tour de France 2025","content":"General classification after stage 21: 1. Tadej Pogačar, 2. Jonas Vingegaard, 3. Florian Lipowitz.","engine":"google","engines":["google"],"score":3.2,"publishedDate":"2025-07-27T19:00:00","parsed_url":["https","www.letour.fr","/en/rankings","","",""],"template":"default.html","positions":[2],"category":"general","thumbnail":null},
{"url":"https://www.cyclingnews.com/races/tour-de-france-2025/","title":"Tour de France 2025 results | Cyclingnews","content":"Pogačar seals fourth Tour de France title on the Champs-Élysées.","engine":"bing","engines":["bing"],"score":2.1,"publishedDate":null,"parsed_url":["https","www.cyclingnews.com","/races/tour-de-france-2025/","","",""],"template":"default.html","positions":[3],"category":"general","thumbnail":null},
{"url":"https://en.wikipedia.org/wiki/2025_Tour_de_France/","title":"2025 Tour de France (duplicate)","content":"Duplicate from another engine.","engine":"brave","engines":["brave"],"score":1.5,"publishedDate":null,"parsed_url":["https","en.wikipedia.org","/wiki/2025_Tour_de_France/","","",""],"template":"default.html","positions":[4],"category":"general","thumbnail":null},
{"url":"javascript:alert(1)","title":"Click here","content":"Not a web page.","engine":"bing","engines":["bing"],"score":1.0,"publishedDate":null,"parsed_url":["javascript","","alert(1)","","",""],"template":"default.html","positions":[5],"category":"general","thumbnail":null}
],"answers":[],"corrections":[],"infoboxes":[],"suggestions":["tour de france 2025 stages"],"unresponsive_engines":[["wikidata","timeout"]]}"#;

/// Serves until SIGTERM / Ctrl-C.
pub async fn serve(listen: &str) -> anyhow::Result<()> {
    let (page, health) = (response("application/json", PAGE), response("text/plain", "ok"));
    let route = move |head: &[u8]| if head.starts_with(b"GET /healthz") { (health.clone(), false) } else { (page.clone(), true) };
    fixture_server::serve(listen, "/search", Arc::new(route)).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_is_json_in_searxng_shape() {
        let v: serde_json::Value = serde_json::from_str(super::PAGE).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        for key in ["answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines"] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert!(results.iter().all(|r| r["url"].is_string() && r["title"].is_string() && r["content"].is_string()));
    }
}
