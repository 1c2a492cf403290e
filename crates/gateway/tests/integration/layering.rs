//! The layering rules of DESIGN.md, checked on the source (`crates/gateway/src`): no file
//! imports another in a loop; the core names no HTTP-framework type (only `http/`, `main.rs`
//! and `lib.rs` may); the turn loop names no tool type.
//!
//! An import is a `crate::…` path (in a `use` or inline) or a `super::name` naming a
//! sibling module, resolved to the deepest module file it names. A module declaring its
//! children is structure, not an import: edges from a file into its own ancestors are not
//! counted. Test code (from a file's `#[cfg(test)]` on) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src`, by module path (`crate::turn::run` → `["turn", "run"]`).
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src()).expect("under src");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            if rel == Path::new("main.rs") {
                parts = vec!["<main>".to_string()];
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The file's code before its tests, with `//` comments removed.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read");
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let line = match line.find("//") {
            // Not inside a string on this line (an even number of quotes before it).
            Some(i) if line[..i].matches('"').count() % 2 == 0 => &line[..i],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The paths `prefix::…` in `code`, each as its segments; a group `prefix::{a, b::c}` gives
/// one path per member (its first segments).
fn paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| word(c) || c == ':') {
            continue;
        }
        let mut segs = Vec::new();
        let mut s = rest;
        loop {
            let end = s.find(|c: char| !word(c)).unwrap_or(s.len());
            if end > 0 {
                segs.push(s[..end].to_string());
            }
            s = &s[end..];
            if let Some(t) = s.strip_prefix("::") {
                if let Some(group) = t.strip_prefix('{') {
                    let close = group.find('}').unwrap_or(group.len());
                    for member in group[..close].split(',') {
                        let member = member.trim();
                        let mut p = segs.clone();
                        p.extend(member.split("::").map(|m| m.trim().to_string()).filter(|m| !m.is_empty() && m.chars().all(word)));
                        out.push(p);
                    }
                    segs.clear();
                    break;
                }
                s = t;
                continue;
            }
            break;
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The deepest module that `path` names, if any.
fn resolve(path: &[String], mods: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| mods.contains_key(p))
}

fn imports() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mods = modules();
    let mut graph = BTreeMap::new();
    for (module, file) in &mods {
        let code = code(file);
        let mut to = BTreeSet::new();
        for p in paths(&code, "crate::") {
            if let Some(m) = resolve(&p, &mods) {
                to.insert(m);
            }
        }
        let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
        for p in paths(&code, "super::") {
            let mut full = parent.clone();
            full.extend(p);
            if let Some(m) = resolve(&full, &mods) {
                to.insert(m);
            }
        }
        // A file's own ancestors declare it: not an import.
        to.retain(|m| m != module && !module.starts_with(m));
        graph.insert(module.clone(), to);
    }
    graph
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct T<'g> {
        g: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on: BTreeSet<&'g Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g Vec<String>) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(lw));
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T { g: graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_module_imports_another_in_a_loop() {
    let graph = imports();
    assert!(graph.len() > 50, "the source was read: {} modules", graph.len());
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(edges > 100, "imports were found: {edges}");
    let found = cycles(&graph);
    assert!(found.is_empty(), "import cycles: {found:?}");
}

#[test]
fn the_checker_sees_a_loop() {
    let mut graph = BTreeMap::new();
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    graph.insert(m("a"), BTreeSet::from([m("b")]));
    graph.insert(m("b"), BTreeSet::from([m("c::d")]));
    graph.insert(m("c::d"), BTreeSet::from([m("a")]));
    graph.insert(m("e"), BTreeSet::from([m("a")]));
    assert_eq!(cycles(&graph).len(), 1);
    let p = paths("use crate::tools::{custom, duties::Tool};\nlet x = crate::events::ids::new_id(\"x\");", "crate::");
    assert_eq!(p, vec![m("tools::custom"), m("tools::duties::Tool"), m("events::ids::new_id")]);
}

/// The core (everything but `http/`, `main.rs`, `lib.rs`) uses no HTTP-framework type.
#[test]
fn only_http_knows_the_http_framework() {
    let mut offenders = Vec::new();
    for (module, file) in modules() {
        if matches!(module.first().map(String::as_str), Some("http" | "<main>")) || module.is_empty() {
            continue;
        }
        let code = code(&file);
        // (An HTTP client's own types, `reqwest::StatusCode`, are an executor's business.)
        for needle in ["axum::", "hyper::", "hyper_util::", "tower_http::", "tower::", "http::StatusCode", "crate::http"] {
            if code.contains(needle) {
                offenders.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The turn loop names no tool type: outside comments, `turn/` has no `web_search` or
/// `file_search` (tests included).
#[test]
fn the_turn_names_no_tool_type() {
    let mut offenders = Vec::new();
    for (module, file) in modules() {
        if module.first().map(String::as_str) != Some("turn") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("web_search") || code.contains("file_search") {
                offenders.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// OpenTelemetry is named only where the `otel` feature adds it: the exporter
/// (`telemetry/otel.rs`) and a request's trace context (`http/trace_context.rs`). The core
/// makes plain `tracing` spans.
#[test]
fn only_the_otel_modules_know_opentelemetry() {
    let mut offenders = Vec::new();
    let mut seen = 0;
    for (module, file) in modules() {
        let code = code(&file);
        let names = ["opentelemetry::", "opentelemetry_sdk", "opentelemetry_otlp", "opentelemetry_http", "tracing_opentelemetry"];
        let named: Vec<_> = names.iter().filter(|n| code.contains(*n)).collect();
        if module == ["telemetry", "otel"] || module == ["http", "trace_context"] {
            seen += usize::from(!named.is_empty());
            continue;
        }
        if !named.is_empty() {
            offenders.push(format!("{}: {named:?}", file.display()));
        }
    }
    assert_eq!(seen, 2, "the checker sees the two OpenTelemetry modules");
    assert!(offenders.is_empty(), "{offenders:#?}");
}
