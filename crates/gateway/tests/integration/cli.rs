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
