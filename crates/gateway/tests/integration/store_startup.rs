//! The store at start: an unreachable database is a clear error and exit code 2 (the
//! process never serves without its store), and the database URL never appears in it.

use std::process::{Command, Output};

fn serve(env: &[(&str, &str)], data_dir: &std::path::Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_responses-gateway"));
    cmd.args(["serve", "--upstream-url", "http://127.0.0.1:9/v1", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RESPONSES_GATEWAY_STORE__ACQUIRE_TIMEOUT_MS", "1000")
        .env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the gateway")
}

fn temp(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("rg-startup-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn unreachable_postgres_is_a_clear_error_and_exit() {
    let dir = temp("pg");
    let out = serve(
        &[
            ("RESPONSES_GATEWAY_STORE__BACKEND", "postgres"),
            ("RESPONSES_GATEWAY_STORE__URL_ENV", "RG_STARTUP_TEST_PG_URL"),
            ("RG_STARTUP_TEST_PG_URL", "postgres://gw:s3cretpw@127.0.0.1:1/nowhere"),
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("store (postgres): cannot connect to the database"), "{stderr}");
    assert!(!stderr.contains("s3cretpw") && !stderr.contains("127.0.0.1:1/nowhere"), "the URL leaked: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn postgres_without_its_url_variable_names_the_variable() {
    let dir = temp("pg-unset");
    let out = serve(
        &[
            ("RESPONSES_GATEWAY_STORE__BACKEND", "postgres"),
            ("RESPONSES_GATEWAY_STORE__URL_ENV", "RG_STARTUP_TEST_UNSET_URL"),
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("RG_STARTUP_TEST_UNSET_URL"), "{stderr}");
    let out = serve(&[("RESPONSES_GATEWAY_STORE__BACKEND", "postgres")], &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("store.url_env"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_file_that_cannot_be_created_is_a_clear_error_and_exit() {
    // The data directory is a regular file, so the database directory cannot be made.
    let file = temp("sqlite-file");
    std::fs::write(&file, b"not a directory").expect("write");
    let out = serve(&[], &file.join("sub"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("store (sqlite)"), "{stderr}");
    let _ = std::fs::remove_file(&file);
}

/// Several processes starting at once on a new SQLite file all open and migrate it
/// (SQLite has no migration lock and switching to WAL cannot wait for a busy file: the
/// losers of the race retry).
#[test]
fn concurrent_first_starts_on_one_sqlite_file() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = temp("sqlite-race");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_responses-gateway"))
                .args(["serve", "--upstream-url", "http://127.0.0.1:9/v1", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(&dir)
                .env("RUST_LOG", "info")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut child in children {
        let stderr = child.stderr.take().expect("stderr");
        let mut log = String::new();
        let mut listening = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            if line.contains("listening on http://") {
                listening = true;
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(listening, "a gateway failed to start on the shared file:\n{log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store written before tenants existed (migrations 1 and 2 only) is migrated at open:
/// its rows belong to the default project, which the gateway without keys uses; another
/// project sees them as unknown ids.
#[tokio::test]
async fn rows_from_before_tenants_belong_to_the_default_project() {
    use responses_gateway::store::sql::{SqlStore, Target};
    use responses_gateway::store::{Store, StoreConfig};
    use sqlx::Connection;
    let dir = temp("pre-tenants");
    let old = dir.join("migrations");
    std::fs::create_dir_all(&old).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for name in ["0001_init.sql", "0002_tool_results.sql"] {
        std::fs::copy(src.join(name), old.join(name)).unwrap();
    }
    let db = dir.join("store.sqlite3");
    {
        let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(&db).create_if_missing(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&opts).await.unwrap();
        sqlx::migrate::Migrator::new(old.as_path()).await.unwrap().run(&mut conn).await.unwrap();
        sqlx::query(
            "INSERT INTO responses (id, created_at, status, response, input_items, transcript) \
             VALUES ('resp_old', 1, 'completed', '{\"id\":\"resp_old\"}', '[]', '{}')",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        sqlx::query("INSERT INTO conversations (id, created_at, metadata, version, next_seq) VALUES ('conv_old', 1, '{}', 0, 0)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let store = SqlStore::connect(&StoreConfig::default(), Target::Sqlite(&db)).await.unwrap();
    assert_eq!(store.response("default", "resp_old").await.unwrap(), Some(serde_json::json!({"id":"resp_old"})));
    assert_eq!(store.response("team-a", "resp_old").await.unwrap(), None);
    assert!(store.conversation("default", "conv_old").await.unwrap().is_some());
    assert!(store.conversation("team-a", "conv_old").await.unwrap().is_none());
    assert!(!store.delete_response("team-a", "resp_old").await.unwrap());
    assert!(store.delete_response("default", "resp_old").await.unwrap());
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
