//! `require_approval` of an `mcp` declaration (issue 18 "Approvals"): which of a server's
//! tools need the user's approval before a call runs. Omitted means `"always"`, as at
//! OpenAI (contract §2 `mcp`).

use serde_json::Value;

use crate::executors::mcp::ListedTool;

/// Tools named by a filter: `{tool_names?, read_only?}`; an empty filter names every tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    tool_names: Option<Vec<String>>,
    /// Only tools annotated `readOnlyHint` (true) or only the others (false).
    read_only: Option<bool>,
}

impl Filter {
    fn parse(v: &Value, key: &str) -> Result<Filter, String> {
        let Value::Object(o) = v else { return Err(format!("require_approval.{key} must be an object {{\"tool_names\": [...], \"read_only\": bool}}.")) };
        if let Some(k) = o.keys().find(|k| *k != "tool_names" && *k != "read_only") {
            return Err(format!("require_approval.{key}: unknown field '{k}'."));
        }
        let tool_names = match o.get("tool_names") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(
                a.iter()
                    .map(|n| n.as_str().map(str::to_string).ok_or_else(|| format!("require_approval.{key}.tool_names must be a list of strings.")))
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) => return Err(format!("require_approval.{key}.tool_names must be a list of strings.")),
        };
        let read_only = match o.get("read_only") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(format!("require_approval.{key}.read_only must be a boolean.")),
        };
        Ok(Filter { tool_names, read_only })
    }

    fn names(&self, tool: &ListedTool) -> bool {
        self.tool_names.as_ref().is_none_or(|n| n.contains(&tool.name)) && self.read_only.is_none_or(|ro| ro == tool.read_only)
    }
}

/// A declaration's approval policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Approval {
    Always,
    Never,
    /// `{always?, never?}`: a tool `always` names needs approval; else one `never` names
    /// does not; any other tool does (the default, `"always"`).
    Filtered { always: Option<Filter>, never: Option<Filter> },
}

impl Approval {
    /// Parses `require_approval`: `"always"`, `"never"`, `{always?, never?}` or omitted
    /// (`"always"`). Errors: the message of the 400 on `require_approval`.
    pub fn parse(v: Option<&Value>) -> Result<Approval, String> {
        match v {
            None | Some(Value::Null) => Ok(Approval::Always),
            Some(Value::String(s)) if s == "always" => Ok(Approval::Always),
            Some(Value::String(s)) if s == "never" => Ok(Approval::Never),
            Some(Value::Object(o)) => {
                if let Some(k) = o.keys().find(|k| *k != "always" && *k != "never") {
                    return Err(format!("require_approval: unknown field '{k}' (use \"always\" and \"never\")."));
                }
                let filter = |key: &str| o.get(key).filter(|v| !v.is_null()).map(|v| Filter::parse(v, key)).transpose();
                Ok(Approval::Filtered { always: filter("always")?, never: filter("never")? })
            }
            Some(_) => Err("require_approval must be \"always\", \"never\" or {\"always\": {...}, \"never\": {...}}.".into()),
        }
    }

    /// True when a call of `tool` needs approval.
    pub fn needs(&self, tool: &ListedTool) -> bool {
        match self {
            Approval::Always => true,
            Approval::Never => false,
            Approval::Filtered { always, never } => {
                always.as_ref().is_some_and(|f| f.names(tool)) || !never.as_ref().is_some_and(|f| f.names(tool))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, read_only: bool) -> ListedTool {
        ListedTool { name: name.into(), description: None, input_schema: json!({}), annotations: None, read_only }
    }

    #[test]
    fn policies_name_the_tools_that_need_approval() {
        let (echo, slow) = (tool("echo", true), tool("slow", false));
        assert!(Approval::parse(None).unwrap().needs(&echo), "omitted means always");
        assert!(!Approval::parse(Some(&json!("never"))).unwrap().needs(&echo));
        let never_echo = Approval::parse(Some(&json!({"never": {"tool_names": ["echo"]}}))).unwrap();
        assert!(!never_echo.needs(&echo) && never_echo.needs(&slow), "a tool no filter names needs approval");
        let read_only_free = Approval::parse(Some(&json!({"never": {"read_only": true}}))).unwrap();
        assert!(!read_only_free.needs(&echo) && read_only_free.needs(&slow));
        let both = Approval::parse(Some(&json!({"always": {"tool_names": ["echo"]}, "never": {}}))).unwrap();
        assert!(both.needs(&echo) && !both.needs(&slow), "always wins; an empty filter names every tool");
        for bad in [json!("sometimes"), json!(1), json!({"maybe": {}}), json!({"never": {"tool_names": "echo"}}), json!({"never": {"read_only": "yes"}})] {
            assert!(Approval::parse(Some(&bad)).is_err(), "{bad}");
        }
    }
}
