//! The `package_version` server tool: answers the installed version of one allowed
//! component, read from build metadata (Cargo.lock via the `built` crate), never hard-coded.

use futures_util::future::BoxFuture;

use super::ServerTool;

mod build_info {
    include!(concat!(env!("OUT_DIR"), "/built.rs"));
}

pub use crate::config::{default_allow, SELF_NAME};

/// `package_version`: input names one component; output is its installed version.
#[derive(Debug, Clone)]
pub struct PackageVersion {
    allow: Vec<String>,
}

impl PackageVersion {
    /// A tool that answers only for the names in `allow`.
    pub fn new(allow: Vec<String>) -> Self {
        PackageVersion { allow }
    }

    /// The installed version(s) of `name` from build metadata; `None` if not built in.
    pub fn lookup(name: &str) -> Option<String> {
        if name == SELF_NAME {
            return Some(build_info::PKG_VERSION.to_string());
        }
        let versions: Vec<&str> =
            build_info::DEPENDENCIES.iter().filter(|(n, _)| *n == name).map(|(_, v)| *v).collect();
        if versions.is_empty() {
            None
        } else {
            Some(versions.join(", "))
        }
    }

    /// Normalizes the model's input: trims whitespace, quotes and a trailing version word.
    fn component(input: &str) -> String {
        let t = input.trim().trim_matches(|c: char| c == '"' || c == '\'' || c == '`').trim();
        // Accept a JSON object like {"name": "axum"} or {"component": "axum"} too.
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(t) {
            for key in ["name", "component", "package", "input"] {
                if let Some(serde_json::Value::String(s)) = m.get(key) {
                    return s.trim().to_ascii_lowercase();
                }
            }
        }
        t.to_ascii_lowercase()
    }
}

impl ServerTool for PackageVersion {
    fn name(&self) -> &str {
        "package_version"
    }

    fn description(&self) -> String {
        format!(
            "Report the installed version of one software component of this server. \
             Input: the component name only, one of: {}.",
            self.allow.join(", ")
        )
    }

    fn progress(&self, input: &str) -> String {
        format!("Looking up the installed version of {}", Self::component(input))
    }

    fn run<'a>(&'a self, input: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let name = Self::component(input);
            if !self.allow.iter().any(|a| a.eq_ignore_ascii_case(&name)) {
                return Err(format!(
                    "unknown component '{name}'. Allowed components: {}.",
                    self.allow.join(", ")
                ));
            }
            match Self::lookup(&name) {
                Some(v) => Ok(format!("{name} {v}")),
                None => Err(format!("component '{name}' is not part of this build.")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn versions_come_from_build_metadata() {
        let t = PackageVersion::new(default_allow());
        let axum = t.run("axum").await.unwrap();
        let locked = build_info::DEPENDENCIES.iter().find(|(n, _)| *n == "axum").unwrap().1;
        assert_eq!(axum, format!("axum {locked}"));
        assert!(locked.starts_with("0.8"), "{locked}");
        assert_eq!(t.run(" \"responses-gateway\" ").await.unwrap(), format!("responses-gateway {}", env!("CARGO_PKG_VERSION")));
        let err = t.run("openssl").await.unwrap_err();
        assert!(err.contains("tokio") && err.contains("axum"), "lists the allowed names: {err}");
        assert!(t.run("serde_json").await.is_err(), "outside the allowlist even though built in");
    }
}
