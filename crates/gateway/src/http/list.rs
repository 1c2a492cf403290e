//! The list shape of contract §10: query `limit` (1–100, default 20), `order` (`asc` |
//! `desc`, default `desc`), `after` (an item id; unknown → 400), `include[]` (accepted,
//! ignored); answer `{object:"list", data, first_id, last_id, has_more}`.

use serde_json::{json, Value};

use crate::error::GatewayError;
use crate::store::{ListQuery, Order, Page};

/// Parses the raw query string (`None`: no query). Bad `limit` or `order` → 400 naming it.
pub fn parse_query(raw: Option<&str>) -> Result<ListQuery, GatewayError> {
    let mut q = ListQuery { limit: 20, order: Order::Desc, after: None };
    let pairs: Vec<(String, String)> = match raw {
        None | Some("") => Vec::new(),
        Some(raw) => serde_urlencoded_pairs(raw)?,
    };
    for (key, value) in pairs {
        match key.as_str() {
            "limit" => {
                q.limit = match value.parse::<usize>() {
                    Ok(n) if (1..=100).contains(&n) => n,
                    _ => {
                        return Err(GatewayError::bad_request(
                            Some("limit".to_string()),
                            format!("Invalid 'limit': expected an integer from 1 to 100, got '{value}'."),
                        )
                        .with_code("invalid_value"))
                    }
                }
            }
            "order" => {
                q.order = match value.as_str() {
                    "asc" => Order::Asc,
                    "desc" => Order::Desc,
                    _ => {
                        return Err(GatewayError::bad_request(
                            Some("order".to_string()),
                            format!("Invalid 'order': expected 'asc' or 'desc', got '{value}'."),
                        )
                        .with_code("invalid_value"))
                    }
                }
            }
            "after" if !value.is_empty() => q.after = Some(value),
            _ => {}
        }
    }
    Ok(q)
}

fn serde_urlencoded_pairs(raw: &str) -> Result<Vec<(String, String)>, GatewayError> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{raw}").parse().map_err(|_| GatewayError::bad_request(None, "Invalid query string."))?,
    )
    .map(|q| q.0)
    .map_err(|_| GatewayError::bad_request(None, "Invalid query string."))
}

/// `{object:"list", data, first_id, last_id, has_more}`.
pub fn render(page: Page) -> Value {
    let id = |v: Option<&Value>| v.and_then(|i| i.get("id")).cloned().unwrap_or(Value::Null);
    json!({
        "object": "list",
        "first_id": id(page.data.first()),
        "last_id": id(page.data.last()),
        "has_more": page.has_more,
        "data": page.data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let q = parse_query(None).unwrap();
        assert_eq!((q.limit, q.order, q.after), (20, Order::Desc, None));
        let q = parse_query(Some("limit=100&order=asc&after=msg_1&include[]=x")).unwrap();
        assert_eq!((q.limit, q.order, q.after.as_deref()), (100, Order::Asc, Some("msg_1")));
        for bad in ["limit=0", "limit=101", "limit=x", "order=up"] {
            let e = parse_query(Some(bad)).unwrap_err();
            assert_eq!(crate::http::error::status(e.kind).as_u16(), 400, "{bad}");
        }
    }
}
