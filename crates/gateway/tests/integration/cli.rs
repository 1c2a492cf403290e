//! The command line: `check-config` prints the effective configuration without any URL
//! credential (user info or query-string values).

use std::process::Command;

#[test]
fn check_config_masks_every_url_credential() {
    let out = Command::new(env!("CARGO_BIN_EXE_responses-gateway"))
        .args(["check-config", "--upstream-url", "http://up:upsecret1@127.0.0.1:8000/v1"])
        .env("RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__R1__URL", "http://vs:vssecret2@127.0.0.1:8321/v1")
        .env("RESPONSES_GATEWAY_WEB_SEARCH__HTTP__URL", "https://s:searchsecret3@searx.example/search")
        .env("RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__R2__URL", "https://vs.example/v1?token=querysecret4&x=1")
        .env("RESPONSES_GATEWAY_FILE_SEARCH__REMOTES__R3__URL", "http://u:badportsecret5@h:99999/x")
        .output()
        .expect("run check-config");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    for secret in ["upsecret1", "vssecret2", "searchsecret3", "querysecret4", "badportsecret5"] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    assert!(text.contains("127.0.0.1:8321"), "the remote is still shown:\n{text}");
    assert!(text.contains("vs.example/v1?token=***&x=***"), "query keys are kept, values masked:\n{text}");
}

/// `check-config` fails where `serve` would at start: a named secret variable that is not
/// set is an error (exit 2) naming the variable; once set, the check passes and the value is
/// never printed.
#[test]
fn check_config_fails_on_an_unset_secret() {
    let run = |envs: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_responses-gateway"));
        cmd.args(["check-config", "--upstream-url", "http://127.0.0.1:1/v1"]).args(extra);
        cmd.env_remove("RG_TEST_UNSET_KEY").env_remove("RG_TEST_PG_URL");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().expect("run check-config")
    };
    let out = run(&[], &["--upstream-api-key-env", "RG_TEST_UNSET_KEY"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RG_TEST_UNSET_KEY (upstream.api_key_env) is not set"));
    let out = run(&[("RG_TEST_UNSET_KEY", "sk-checksecret")], &["--upstream-api-key-env", "RG_TEST_UNSET_KEY"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-checksecret"));
    // A key saved with a trailing line break is trimmed; one with a break inside is refused.
    let out = run(&[("RG_TEST_UNSET_KEY", "sk-checksecret\n")], &["--upstream-api-key-env", "RG_TEST_UNSET_KEY"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&[("RG_TEST_UNSET_KEY", "sk-check\nsecret")], &["--upstream-api-key-env", "RG_TEST_UNSET_KEY"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RG_TEST_UNSET_KEY (upstream.api_key_env) holds a control character") && !err.contains("sk-check"), "{err}");
    let pg = [("RESPONSES_GATEWAY_STORE__BACKEND", "postgres"), ("RESPONSES_GATEWAY_STORE__URL_ENV", "RG_TEST_PG_URL")];
    let out = run(&pg, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RG_TEST_PG_URL (store.url_env) is not set"));
}

/// `serve` beyond loopback without API keys warns at start; with a key, or on loopback, it
/// does not (and says how many keys it requires, never which).
#[test]
fn serve_warns_when_open_beyond_loopback() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("rg-cli-warn-{}-{:x}", std::process::id(), rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    std::fs::write(&keys, "sk-cli-warn-secret\n").unwrap();
    // The log lines up to "listening on" (the warning comes just before it).
    let start = |listen: &str, keys: Option<&std::path::Path>| -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_responses-gateway"));
        cmd.args(["serve", "--upstream-url", "http://127.0.0.1:1/v1", "--listen", listen, "--data-dir"])
            .arg(dir.join(format!("data-{}", rand::random::<u32>())))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if let Some(k) = keys {
            cmd.env("RESPONSES_GATEWAY_AUTH__KEYS_FILE", k);
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = Vec::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            let done = line.contains("listening on");
            lines.push(line);
            if done {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        lines.join("\n")
    };
    let open = start("0.0.0.0:0", None);
    assert!(open.contains("no API key is configured"), "{open}");
    let keyed = start("0.0.0.0:0", Some(&keys));
    assert!(!keyed.contains("no API key is configured") && keyed.contains("API keys required"), "{keyed}");
    assert!(!keyed.contains("sk-cli-warn-secret"), "{keyed}");
    let local = start("127.0.0.1:0", None);
    assert!(!local.contains("no API key is configured"), "{local}");
    std::fs::remove_dir_all(&dir).unwrap();
}
