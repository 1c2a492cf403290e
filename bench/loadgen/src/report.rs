//! `loadgen report`: the comparison table of one bench run.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{json, Map, Value};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Directory holding <scenario>.direct.json and <scenario>.gateway.json.
    #[arg(long)]
    dir: PathBuf,
    /// Write the combined JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// KEY=VALUE facts about the run (revision, mode, …), stored in the JSON.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
    /// Scenario names, in table order.
    #[arg(required = true)]
    scenarios: Vec<String>,
}

fn read(path: &PathBuf) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn cell(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

pub fn report(args: ReportArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for name in &args.scenarios {
        let direct = read(&args.dir.join(format!("{name}.direct.json")))?;
        let gateway = read(&args.dir.join(format!("{name}.gateway.json")))?;
        let get = |v: &Value, a: &str, b: &str| f(&v[a][b]);
        let d50 = get(&direct, "ttft_ms", "p50");
        let d99 = get(&direct, "ttft_ms", "p99");
        let g50 = get(&gateway, "ttft_ms", "p50");
        let g99 = get(&gateway, "ttft_ms", "p99");
        let sub = |a: Option<f64>, b: Option<f64>| Some(r3(a? - b?));
        let div = |a: Option<f64>, b: Option<f64>| Some(r3(a? / b?));
        let cpu = f(&gateway["server"]["cpu_ms_per_request"]);
        let rss = f(&gateway["server"]["vm_hwm_kib"]).map(|k| k / 1024.0);
        let (drps, grps) = (f(&direct["rps"]), f(&gateway["rps"]));
        let added50 = sub(g50, d50);
        let targets = &gateway["targets"];
        let mut checks = Map::new();
        let mut check = |key: &str, value: Option<f64>, limit: Option<f64>| {
            if let Some(limit) = limit {
                checks.insert(
                    key.to_owned(),
                    json!({"value": value, "limit": limit, "met": value.is_some_and(|v| v <= limit)}),
                );
            }
        };
        check("cpu_ms_per_request", cpu, f(&targets["cpu_ms_per_request"]));
        check("added_ttft_p50_ms", added50, f(&targets["added_ttft_p50_ms"]));
        check("peak_rss_mib", rss, f(&targets["peak_rss_mib"]));
        let errors = direct["errors"].as_u64().unwrap_or(0)
            + gateway["errors"].as_u64().unwrap_or(0)
            + direct["scripts_left_in_queue"].as_u64().unwrap_or(0)
            + gateway["scripts_left_in_queue"].as_u64().unwrap_or(0);
        let other = [&direct, &gateway]
            .iter()
            .filter_map(|v| f(&v["machine"]["other_cpu_pct"]))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        rows.push(json!({
            "scenario": name,
            "other_load_pct": other,
            "concurrency": gateway["concurrency"],
            "requests": gateway["requests"],
            "stream": gateway["stream"],
            "direct_ttft_ms": {"p50": d50, "p99": d99},
            "gateway_ttft_ms": {"p50": g50, "p99": g99},
            "added_ttft_ms": {"p50": added50, "p99": sub(g99, d99)},
            "ttft_ratio": {"p50": div(g50, d50), "p99": div(g99, d99)},
            "direct_latency_ms": {"p50": get(&direct, "latency_ms", "p50"), "p99": get(&direct, "latency_ms", "p99")},
            "gateway_latency_ms": {"p50": get(&gateway, "latency_ms", "p50"), "p99": get(&gateway, "latency_ms", "p99")},
            "added_latency_ms": {
                "p50": sub(get(&gateway, "latency_ms", "p50"), get(&direct, "latency_ms", "p50")),
                "p99": sub(get(&gateway, "latency_ms", "p99"), get(&direct, "latency_ms", "p99")),
            },
            "rps": {"direct": drps.map(|x| x.round()), "gateway": grps.map(|x| x.round()), "ratio": div(grps, drps)},
            "gateway_cpu_ms_per_request": cpu.map(|x| (x * 10000.0).round() / 10000.0),
            "gateway_peak_rss_mib": rss.map(|x| (x * 10.0).round() / 10.0),
            "errors": errors,
            "targets": checks,
            "direct": direct,
            "gateway": gateway,
        }));
    }

    print!("{}", table(&rows));

    if let Some(out) = &args.out {
        let mut meta = Map::new();
        for kv in &args.meta {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            meta.insert(k.to_owned(), json!(v));
        }
        let generated = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let doc = json!({"generated_at_unix": generated, "meta": meta, "scenarios": rows});
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")?;
        println!("\nwritten: {}", out.display());
    }
    Ok(())
}

fn table(rows: &[Value]) -> String {
    let head = [
        "scenario",
        "direct TTFT p50/p99",
        "gateway TTFT p50/p99",
        "added TTFT p50/p99",
        "ratio p50/p99",
        "gw CPU ms/req",
        "req/s direct / gw (ratio)",
        "peak RSS MiB",
        "errors",
        "other load %",
        "targets",
    ];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        let pair = |v: &Value, d: usize| format!("{} / {}", cell(f(&v["p50"]), d), cell(f(&v["p99"]), d));
        let targets = r["targets"].as_object().map_or_else(String::new, |t| {
            t.iter()
                .map(|(k, v)| {
                    let short = match k.as_str() {
                        "cpu_ms_per_request" => "cpu",
                        "added_ttft_p50_ms" => "ttft",
                        "peak_rss_mib" => "rss",
                        k => k,
                    };
                    format!("{short}:{}", if v["met"] == true { "ok" } else { "MISS" })
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
        cells.push(vec![
            r["scenario"].as_str().unwrap_or("?").to_owned(),
            pair(&r["direct_ttft_ms"], 3),
            pair(&r["gateway_ttft_ms"], 3),
            pair(&r["added_ttft_ms"], 3),
            pair(&r["ttft_ratio"], 2),
            cell(f(&r["gateway_cpu_ms_per_request"]), 3),
            format!(
                "{} / {} ({})",
                cell(f(&r["rps"]["direct"]), 0),
                cell(f(&r["rps"]["gateway"]), 0),
                cell(f(&r["rps"]["ratio"]), 2)
            ),
            cell(f(&r["gateway_peak_rss_mib"]), 1),
            r["errors"].to_string(),
            cell(f(&r["other_load_pct"]), 1),
            targets,
        ]);
    }
    let mut out = render(&cells);
    out.push_str("\nTTFT / latency in ms; ratio = gateway / direct; added = gateway - direct.\n");
    out.push_str("other load % = CPU used by processes outside the benchmark while measuring (worst of the two runs,\n");
    out.push_str("share of all CPUs); a few % is kernel noise, more means the figures are skewed.\n");
    out.push_str("Latency (ms) p50/p99 direct -> gateway:\n");
    for r in rows {
        let _ = writeln!(
            out,
            "  {:<12} {} / {} -> {} / {}",
            r["scenario"].as_str().unwrap_or("?"),
            cell(f(&r["direct_latency_ms"]["p50"]), 3),
            cell(f(&r["direct_latency_ms"]["p99"]), 3),
            cell(f(&r["gateway_latency_ms"]["p50"]), 3),
            cell(f(&r["gateway_latency_ms"]["p99"]), 3),
        );
    }
    out
}

fn render(cells: &[Vec<String>]) -> String {
    let cols = cells[0].len();
    let width: Vec<usize> =
        (0..cols).map(|c| cells.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row.iter().enumerate().map(|(c, s)| format!("{s:<w$}", w = width[c])).collect();
        let _ = writeln!(out, "| {} |", line.join(" | "));
        if i == 0 {
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "|-{}-|", rule.join("-|-"));
        }
    }
    out
}
