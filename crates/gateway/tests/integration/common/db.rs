//! Test databases: a fresh SQLite file in its own directory, or a uniquely named database
//! on the PostgreSQL server at `$RESPONSES_GATEWAY_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, the machine's trust-auth server).
//! Dropping a `TestDb` removes the directory or drops the database.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use responses_gateway::store::sql::{SqlStore, Target};
use responses_gateway::store::{BackendKind, StoreConfig};
use sqlx::Connection;

/// The variable naming the PostgreSQL server the tests use (a database on it is created
/// and dropped per test).
pub const POSTGRES_URL_ENV: &str = "RESPONSES_GATEWAY_TEST_POSTGRES_URL";
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}_{}_{:08x}", std::process::id(), COUNTER.fetch_add(1, Ordering::SeqCst), rand::random::<u32>())
}

#[derive(Debug)]
pub enum TestDb {
    Sqlite { dir: PathBuf },
    Postgres { admin: String, name: String, url: String },
}

fn admin_url() -> String {
    std::env::var(POSTGRES_URL_ENV).ok().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_POSTGRES_URL.to_string())
}

fn without_password(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "<unparsable url>".into(),
    }
}

impl TestDb {
    /// A new SQLite database file in a fresh directory.
    pub fn sqlite() -> TestDb {
        let dir = std::env::temp_dir().join(unique("rg-store"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TestDb::Sqlite { dir }
    }

    /// A new, empty database on the test PostgreSQL server. Panics with a clear message
    /// when no server answers.
    pub async fn postgres() -> TestDb {
        let admin = admin_url();
        let mut conn = sqlx::postgres::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is not reachable at {} ({e}); start one or set {POSTGRES_URL_ENV} (scripts/pg.sh starts the machine's server)",
                without_password(&admin)
            )
        });
        let name = unique("rg_test");
        sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut conn).await.expect("create database");
        let _ = conn.close().await;
        let mut url = reqwest::Url::parse(&admin).expect("postgres url");
        url.set_path(&format!("/{name}"));
        TestDb::Postgres { admin, name, url: url.to_string() }
    }

    pub fn backend(&self) -> BackendKind {
        match self {
            TestDb::Sqlite { .. } => BackendKind::Sqlite,
            TestDb::Postgres { .. } => BackendKind::Postgres,
        }
    }

    /// The SQLite file (SQLite only).
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        match self {
            TestDb::Sqlite { dir } => Some(dir.join("store.sqlite3")),
            TestDb::Postgres { .. } => None,
        }
    }

    /// The database URL (PostgreSQL only).
    pub fn postgres_url(&self) -> Option<&str> {
        match self {
            TestDb::Postgres { url, .. } => Some(url),
            TestDb::Sqlite { .. } => None,
        }
    }

    /// Opens a store on this database with `config`'s pool settings.
    pub async fn open(&self, config: &StoreConfig) -> anyhow::Result<SqlStore> {
        match self {
            TestDb::Sqlite { .. } => {
                let path = self.sqlite_path().unwrap_or_default();
                SqlStore::connect(config, Target::Sqlite(&path)).await
            }
            TestDb::Postgres { url, .. } => SqlStore::connect(config, Target::Postgres(url)).await,
        }
    }

    /// Makes the database go away under a running gateway: PostgreSQL drops the database
    /// (terminating its connections); SQLite closes the store's pool.
    pub async fn take_away(&self, store: &SqlStore) {
        match self {
            TestDb::Sqlite { .. } => store.close().await,
            TestDb::Postgres { admin, name, .. } => {
                let mut conn = sqlx::postgres::PgConnection::connect(admin).await.expect("admin connection");
                sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .expect("drop database");
                let _ = conn.close().await;
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match self {
            TestDb::Sqlite { dir } => {
                let _ = std::fs::remove_dir_all(dir);
            }
            TestDb::Postgres { admin, name, .. } => {
                let (admin, name) = (admin.clone(), name.clone());
                // Its own thread and runtime: Drop may run inside (or outside) a runtime.
                let _ = std::thread::spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
                    rt.block_on(async move {
                        if let Ok(mut conn) = sqlx::postgres::PgConnection::connect(&admin).await {
                            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut conn).await;
                            let _ = conn.close().await;
                        }
                    });
                })
                .join();
            }
        }
    }
}

/// Runs each named `async fn(Arc<TestDb>)` once on SQLite and once on PostgreSQL, as
/// `sqlite::<name>` and `postgres::<name>`: the same suite on both backends.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new($crate::common::db::TestDb::sqlite())).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new($crate::common::db::TestDb::postgres().await)).await
                }
            )*
        }
    };
}
