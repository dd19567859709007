//! Backfill in slices (issue 4, point 4): a job that is still backfilling
//! can be scaled, and its backfill continues where it was; a backfill cut
//! by `kill -9` continues after the restart.
//!
//! The server backfills `backfill_rows_per_barrier = 40` rows per scan
//! actor per barrier, so creating an MV over 12,000 rows takes many epochs.
//! While it runs, one connection keeps changing the table and another
//! keeps rescaling the job's fragments. The MVs must then equal the same
//! queries answered by the batch engine over the table (the batch engine is
//! checked against PostgreSQL by the differential test).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::driver::{runtime, say};
use common::rows::{diff_report, multiset, must, run};
use common::{open, EbbflowServer, ServerOptions, TempDir};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

const ROWS: i64 = 12_000;
const LIMIT: Duration = Duration::from_secs(60);

const MVS: &[(&str, &str, &str)] = &[
    (
        "m_agg",
        "SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k",
        "SELECT k, c, s FROM m_agg",
    ),
    (
        "m_join",
        "SELECT t.id, t.v, u.w FROM t JOIN u ON t.k = u.k",
        "SELECT id, v, w FROM m_join",
    ),
];

async fn load(c: &Client) -> Result<(), String> {
    must(
        c,
        "CREATE TABLE t (id int PRIMARY KEY, k int, v int)",
        LIMIT,
    )
    .await?;
    must(c, "CREATE TABLE u (k int PRIMARY KEY, w int)", LIMIT).await?;
    let us: Vec<String> = (0..50).map(|k| format!("({k}, {})", k * 7)).collect();
    must(c, &format!("INSERT INTO u VALUES {}", us.join(", ")), LIMIT).await?;
    for start in (0..ROWS).step_by(1000) {
        let rows: Vec<String> = (start..start + 1000)
            .map(|i| format!("({i}, {}, {})", i % 50, i % 13))
            .collect();
        must(
            c,
            &format!("INSERT INTO t VALUES {}", rows.join(", ")),
            LIMIT,
        )
        .await?;
    }
    must(c, "FLUSH", LIMIT).await?;
    Ok(())
}

/// Random changes to `t` until `stop`.
async fn write_until(c: Client, stop: Arc<AtomicBool>, seed: u64) -> Result<usize, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut next_id = ROWS;
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let sql = match rng.gen_range(0..3) {
            0 => {
                next_id += 1;
                format!(
                    "INSERT INTO t VALUES ({next_id}, {}, 1)",
                    rng.gen_range(0..50)
                )
            }
            1 => format!(
                "UPDATE t SET v = v + 1 WHERE id % 97 = {}",
                rng.gen_range(0..97)
            ),
            _ => format!("DELETE FROM t WHERE id % 211 = {}", rng.gen_range(0..211)),
        };
        must(&c, &sql, LIMIT).await?;
        n += 1;
    }
    Ok(n)
}

/// The job's fragments and the units of the cluster.
async fn fragments_of(c: &Client, mv: &str) -> Result<Vec<(u32, bool)>, String> {
    let rows = must(
        c,
        &format!(
            "SELECT f.fragment_id, f.distribution_type FROM rw_fragments f \
             JOIN rw_materialized_views m ON f.table_id = m.id WHERE m.name = '{mv}'"
        ),
        LIMIT,
    )
    .await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let id = r[0].as_deref()?.parse().ok()?;
            Some((id, r[1].as_deref() == Some("single")))
        })
        .collect())
}

/// Rescale the job's hash fragments at random until `done`; returns how
/// many changes were applied.
async fn scale_until(
    c: Client,
    mv: &'static str,
    done: Arc<AtomicBool>,
    seed: u64,
) -> Result<usize, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut applied = 0;
    while !done.load(Ordering::SeqCst) {
        let frags = fragments_of(&c, mv).await?;
        let hash: Vec<u32> = frags.iter().filter(|f| !f.1).map(|f| f.0).collect();
        if hash.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        let f = hash[rng.gen_range(0..hash.len())];
        let sql = match rng.gen_range(0..3) {
            0 => format!(
                "ALTER MATERIALIZED VIEW {mv} SET PARALLELISM = {}",
                rng.gen_range(1..=4)
            ),
            1 => format!(
                "ALTER FRAGMENT {f} SET PARALLELISM = {}",
                rng.gen_range(1..=4)
            ),
            _ => format!("ALTER FRAGMENT {f} SET PARALLELISM = ADAPTIVE"),
        };
        match run(&c, &sql).await {
            Ok(_) => applied += 1,
            // The job may finish (or its catalog change) between the read
            // and the statement; anything else is a failure.
            Err(e) if e.contains("does not exist") => {}
            Err(e) => return Err(format!("`{sql}`: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..20))).await;
    }
    Ok(applied)
}

async fn check(c: &Client, mvs: &[(&str, &str, &str)]) -> Result<(), String> {
    must(c, "FLUSH", LIMIT).await?;
    for (name, query, read) in mvs {
        let expected = multiset(&must(c, query, LIMIT).await?);
        let actual = multiset(&must(c, read, LIMIT).await?);
        if expected != actual {
            return Err(format!(
                "{name} differs from its query:\n{}",
                diff_report(&expected, &actual, 10)
            ));
        }
    }
    Ok(())
}

async fn scaled_while_backfilling(server: &EbbflowServer) -> Result<(), String> {
    let c = open(&server.conn_str()).await?;
    load(&c).await?;
    must(&c, "ALTER SYSTEM SET backfill_rows_per_barrier = 40", LIMIT).await?;
    for (i, (name, query, _)) in MVS.iter().enumerate() {
        let stop = Arc::new(AtomicBool::new(false));
        let created = Arc::new(AtomicBool::new(false));
        let writer = tokio::spawn(write_until(
            open(&server.conn_str()).await?,
            stop.clone(),
            i as u64,
        ));
        let scaler = tokio::spawn(scale_until(
            open(&server.conn_str()).await?,
            name,
            created.clone(),
            100 + i as u64,
        ));
        let started = Instant::now();
        let r = must(
            &c,
            &format!("CREATE MATERIALIZED VIEW {name} AS {query}"),
            LIMIT,
        )
        .await;
        created.store(true, Ordering::SeqCst);
        let took = started.elapsed();
        let scales = scaler.await.map_err(|e| e.to_string())??;
        stop.store(true, Ordering::SeqCst);
        let writes = writer.await.map_err(|e| e.to_string())??;
        r?;
        say(&format!(
            "backfill: {name} created in {:.2} s with {scales} rescales and {writes} writes meanwhile",
            took.as_secs_f64()
        ));
        if scales < 2 {
            return Err(format!(
                "{name}: only {scales} rescales landed during its backfill ({:.2} s); the test proves nothing",
                took.as_secs_f64()
            ));
        }
        check(&c, &MVS[..=i]).await?;
    }
    Ok(())
}

async fn resumed_after_kill(dir: &TempDir) -> Result<(), String> {
    let opts = ServerOptions::default();
    let mut server = EbbflowServer::spawn(opts.clone(), Some(dir.path().to_path_buf())).await?;
    let c = open(&server.conn_str()).await?;
    load(&c).await?;
    must(&c, "ALTER SYSTEM SET backfill_rows_per_barrier = 10", LIMIT).await?;
    let (name, query, _) = MVS[0];
    let creator = {
        let c2 = open(&server.conn_str()).await?;
        tokio::spawn(async move {
            run(&c2, &format!("CREATE MATERIALIZED VIEW {name} AS {query}")).await
        })
    };
    // Kill once the job is in the catalog and part of it is backfilled.
    let deadline = Instant::now() + LIMIT;
    let at_kill = loop {
        let n = run(&c, &format!("SELECT sum(c) FROM {name}")).await;
        if let Ok(rows) = n {
            if let Some(n) = rows.first().and_then(|r| r[0].clone()) {
                break n;
            }
        }
        if Instant::now() > deadline {
            return Err("the MV never showed backfilled rows".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    server.kill9();
    let _ = creator.await;
    let server = EbbflowServer::spawn(opts, Some(dir.path().to_path_buf())).await?;
    let c = open(&server.conn_str()).await?;
    // Nobody waits for the job now: the periodic barriers finish it.
    let deadline = Instant::now() + LIMIT;
    loop {
        let expected = multiset(&must(&c, MVS[0].1, LIMIT).await?);
        let actual = multiset(&must(&c, MVS[0].2, LIMIT).await?);
        if expected == actual {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the backfill did not complete after the restart:\n{}",
                diff_report(&expected, &actual, 10)
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    say(&format!(
        "backfill: killed with {at_kill} of {ROWS} rows backfilled; resumed after the restart and completed"
    ));
    server.shut_down().await;
    Ok(())
}

#[test]
fn backfill_scales_and_resumes() {
    let rt = runtime();
    rt.block_on(async {
        let server = EbbflowServer::spawn(ServerOptions::default(), None)
            .await
            .unwrap_or_else(|e| panic!("ebbflow did not start: {e}"));
        if let Err(e) = scaled_while_backfilling(&server).await {
            panic!("{e}\n--- server log ---\n{}", server.log.tail(40));
        }
        server.shut_down().await;
        let dir = TempDir::new("ebbflow-backfill").expect("temp dir");
        if let Err(e) = resumed_after_kill(&dir).await {
            panic!("{e}");
        }
    });
}
