//! JSON bodies of the Conversations and Vector Stores endpoints: one parser, one error
//! shape (contract §9).

use serde::de::DeserializeOwned;

use crate::error::GatewayError;

/// Parses `bytes` as `T`. A blank body is `T::default()`. Not JSON, or anything but
/// whitespace after the value → 400 with `param: null`; a value that is not an object → 400
/// `expected a JSON object` (serde would read an array as positional fields); a wrong type →
/// 400 `invalid_type` naming the field path (e.g. `items[0].content`); a key repeated at
/// any depth → 400 `invalid_type` naming it.
pub fn parse<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, GatewayError> {
    match bytes.trim_ascii_start().first() {
        None => return Ok(T::default()),
        Some(b'{') => {}
        Some(_) => {
            // Broken JSON is still named as such.
            serde_json::from_slice::<serde::de::IgnoredAny>(bytes).map_err(|e| unparsable(&e))?;
            return Err(GatewayError::bad_request(None, "Invalid request body: expected a JSON object.").with_code("invalid_type"));
        }
    }
    // A key repeated at any depth is refused as a repeated top-level field is.
    if let Some(dup) = protocol::dupkeys::find(bytes) {
        return Err(crate::turn::validate::duplicate_key(&dup).into());
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return unparsable(&inner);
        }
        let param = (!path.is_empty() && path != ".").then_some(path);
        let inner = crate::error::short_numbers(&inner.to_string());
        GatewayError::bad_request(param, format!("Invalid request body: {inner}")).with_code("invalid_type")
    })?;
    de.end().map_err(|e| unparsable(&e))?;
    Ok(value)
}

fn unparsable(e: &serde_json::Error) -> GatewayError {
    let e = crate::error::short_numbers(&e.to_string());
    GatewayError::bad_request(None, format!("We could not parse the JSON body of your request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    struct Body {
        #[serde(default)]
        name: Option<String>,
    }

    #[test]
    fn trailing_bytes_and_broken_json_are_400_without_param() {
        for bad in [&b"{} trailing"[..], b"{\"name\":\"a\"}}", b"{}{}", b"{\"name\":"] {
            let e = parse::<Body>(bad).expect_err("must fail");
            assert_eq!(e.kind, crate::error::ErrorKind::BadRequest);
            assert_eq!(e.error.param, None, "{}", String::from_utf8_lossy(bad));
        }
        let e = parse::<Body>(b"{\"name\":3}").expect_err("wrong type");
        assert_eq!(e.error.param.as_deref(), Some("name"));
        assert_eq!(parse::<Body>(b" {\"name\":\"a\"} \n").expect("ok").name.as_deref(), Some("a"));
        assert!(parse::<Body>(b"  ").expect("blank").name.is_none());
        for not_object in [&b"[\"a\"]"[..], b"[]", b"null", b"\"x\"", b"12"] {
            let e = parse::<Body>(not_object).expect_err("not an object");
            assert_eq!(e.error.message, "Invalid request body: expected a JSON object.", "{}", String::from_utf8_lossy(not_object));
        }
    }
}
