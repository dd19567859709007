//! Where the ebbflow servers of a test keep their state.
//!
//! With SeaweedFS and PostgreSQL 15 installed (both required under
//! `CI=true`), a test binary starts one SeaweedFS and every server gets its
//! own prefix `s3://ebbflow/<test>/<name>` as state store and its own
//! database `<test>_meta_<name>` on the test's PostgreSQL as meta store: its
//! data dir then holds nothing needed, and a server restarted on a fresh one
//! must come back from the two stores alone. Otherwise servers keep both in
//! their data dir (the defaults) and the test says so in one line.

use std::collections::BTreeSet;
use std::path::Path;

use super::driver::say;
use super::seaweed::{weed_bin, SeaweedFs};
use super::{pg_bin_dir, postgres_available, Postgres, ServerOptions};

/// The stores of one test binary.
pub struct Stores {
    /// Names prefixes and databases (`crash`, `state_store`).
    test: String,
    /// The one SeaweedFS of the binary; `None`: the defaults.
    weed: Option<SeaweedFs>,
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

impl Stores {
    /// Starts SeaweedFS when it and PostgreSQL are installed; else (not in
    /// CI) says in one line that the servers use the defaults.
    pub fn start(test: &str) -> Result<Stores, String> {
        let missing = match (weed_bin(), postgres_available()) {
            (Ok(_), true) => None,
            (Err(e), _) => Some(e),
            (Ok(_), false) => Some(format!(
                "PostgreSQL 15 is not installed ({}) for the meta stores",
                pg_bin_dir().display()
            )),
        };
        let weed = match missing {
            None => {
                let weed = SeaweedFs::start().map_err(|e| format!("start SeaweedFS: {e}"))?;
                say(&format!(
                    "{test}: state on SeaweedFS (s3://{}/{test}/<server> at {}), meta on \
                     PostgreSQL (database {test}_meta_<server>)",
                    weed.bucket(),
                    weed.endpoint()
                ));
                Some(weed)
            }
            Some(e) if in_ci() => {
                return Err(format!(
                    "CI=true but the S3 + PostgreSQL stores are not available: {e}"
                ))
            }
            Some(e) => {
                say(&format!(
                    "{test}: servers keep state and meta in their data dir (the defaults): {e}"
                ));
                None
            }
        };
        Ok(Stores {
            test: test.to_string(),
            weed,
        })
    }

    /// Whether servers run on S3 + PostgreSQL.
    pub fn remote(&self) -> bool {
        self.weed.is_some()
    }

    pub fn weed(&self) -> Option<&SeaweedFs> {
        self.weed.as_ref()
    }

    pub fn weed_mut(&mut self) -> Option<&mut SeaweedFs> {
        self.weed.as_mut()
    }

    /// The state store prefix of server `name` in the bucket.
    pub fn prefix(&self, name: &str) -> String {
        format!("{}/{name}", self.test)
    }

    /// The meta store database of server `name`.
    pub fn meta_db(&self, name: &str) -> String {
        format!("{}_meta_{name}", self.test)
    }

    /// `base` with the stores of server `name`: on S3 + PostgreSQL its
    /// prefix and a fresh database on `pg` (dropped by
    /// [`Stores::drop_meta`]); else `base` unchanged.
    pub async fn options(
        &self,
        pg: &Postgres,
        name: &str,
        base: ServerOptions,
    ) -> Result<ServerOptions, String> {
        let Some(weed) = &self.weed else {
            return Ok(base);
        };
        let db = self.meta_db(name);
        pg.create_database(&db)
            .await
            .map_err(|e| format!("create meta database {db}: {e}"))?;
        let mut opts = base;
        opts.state_store = Some(weed.url(&self.prefix(name)));
        opts.meta_store = Some(pg.db_url(&db));
        opts.env.extend(weed.env());
        Ok(opts)
    }

    /// Drops the meta database of server `name`, if any. Best effort.
    pub async fn drop_meta(&self, pg: &Postgres, name: &str) {
        if self.weed.is_none() || !pg.is_running() {
            return;
        }
        if let Ok(admin) = super::open(&pg.conn_str("postgres")).await {
            Postgres::drop_database(&admin, &self.meta_db(name)).await;
        }
    }

    /// The ids (16 hex digits) of the state file objects of server `name`,
    /// live or garbage: under `<prefix>/sst/` on S3, else in
    /// `<data_dir>/state/sst/`.
    pub fn sst_objects(&self, name: &str, data_dir: &Path) -> Result<BTreeSet<String>, String> {
        let names: Vec<String> = match &self.weed {
            Some(weed) => weed.object_keys(&format!("{}/sst", self.prefix(name)))?,
            None => {
                let dir = data_dir.join("state").join("sst");
                match std::fs::read_dir(&dir) {
                    Ok(entries) => entries
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(format!("list {}: {e}", dir.display())),
                }
            }
        };
        Ok(names
            .iter()
            .filter_map(|n| n.rsplit('/').next())
            .filter_map(|n| n.strip_suffix(".sst"))
            .map(str::to_string)
            .collect())
    }
}
