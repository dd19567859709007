//! The DML side of the chaos test: the task that writes while the cluster
//! changes, the rule that decides what a FLUSH acknowledges (everything
//! sent, or after a fault the subset ebbflow kept), and the comparison of
//! the tables and MVs with PostgreSQL.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::common::describe_pg_error;
use super::common::mirror::Mirror;
use super::common::rows::{
    cell, diff_report, first_cell, multiset, mv_mismatch, run, run_raw_within, Row,
};
use super::common::workload::{Gen, MVS, TABLES};
use super::{
    eb_run, SeedState, DATAGEN_MV, DATAGEN_ROWS, DATAGEN_TABLE, FIXED_MVS, RECOVERY_WAIT,
    STMT_TIMEOUT, T2_MAX_ROWS,
};

/// Everything that happened, from both tasks, for failure reports.
#[derive(Clone, Default)]
pub(super) struct Log {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Log {
    /// Appends a line, stamped with the wall-clock time (UTC) to match the
    /// server's log.
    pub(super) fn push(&self, s: String) {
        let line = format!("/* {} */ {s}", chrono::Utc::now().format("%H:%M:%S%.3f"));
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }
    pub(super) fn all(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What the two tasks share.
pub(super) struct Shared {
    pub(super) log: Log,
    /// Bumped before a fault is injected and again once the cluster has
    /// recovered from it: odd while a fault is in progress. A statement or
    /// FLUSH may fail only if this moved since the last acknowledgement,
    /// and no reconciliation runs while it is odd.
    pub(super) faults: AtomicU64,
    /// Held while the mirror is reconciled and while a fault is injected:
    /// no fault lands in the middle of a reconciliation.
    pub(super) quiet: tokio::sync::Mutex<()>,
    pub(super) stop: AtomicBool,
}

impl Shared {
    pub(super) fn faults(&self) -> u64 {
        self.faults.load(Ordering::SeqCst)
    }

    /// Whether no fault was injected since `faults` was `since` (nor is
    /// one in progress): then every statement and FLUSH must succeed.
    pub(super) fn calm_since(&self, since: u64) -> bool {
        let now = self.faults();
        now == since && now.is_multiple_of(2)
    }
}

#[derive(Default)]
pub(super) struct DmlStats {
    pub(super) ok: usize,
    pub(super) failed: usize,
    pub(super) acks: usize,
    pub(super) reconciles: usize,
    /// Uncertain statements found lost (or kept) by reconciliations.
    pub(super) lost: usize,
    pub(super) kept: usize,
}

/// The DML workload, its session and its acknowledged state.
pub(super) struct Workload {
    /// The session that writes: its FLUSH vouches for what it wrote.
    pub(super) eb: Client,
    pub(super) gen: Gen,
    pub(super) mirror: Mirror,
    /// `Shared::faults` when the mirror was last acknowledged or reconciled.
    pub(super) ack_faults: u64,
    /// Whether a statement failed since then (it may or may not have been
    /// applied, so no FLUSH can vouch for it).
    pub(super) failed: bool,
    /// Rows of t2 at the last acknowledgement (less the deletes since).
    pub(super) t2_rows: i64,
    pub(super) stats: DmlStats,
}

impl Workload {
    /// A workload writing through `eb`, mirrored into `pg`.
    pub(super) fn new(eb: Client, pg: Client, seed: u64) -> Workload {
        Workload {
            eb,
            gen: Gen::new(seed),
            mirror: Mirror::new(pg),
            ack_faults: 0,
            failed: false,
            t2_rows: 0,
            stats: DmlStats::default(),
        }
    }

    /// The schema, created through `eb`: the tables with acknowledged
    /// rows, the workload's MVs, the fixed MVs (views in PostgreSQL) and
    /// the datagen feed; the adaptive policy ticks every 200 ms.
    pub(super) async fn create_schema(&mut self, eb: &Client) -> Result<(), String> {
        eb_run(eb, "ALTER SYSTEM SET adaptive_scaling_interval_ms = 200").await?;
        self.mirror.create_schema(eb, &mut self.gen).await?;
        for (name, n, def) in FIXED_MVS {
            run(self.mirror.pg(), &format!("CREATE VIEW {name} AS {def}")).await?;
            let sql = format!("CREATE MATERIALIZED VIEW {name} WITH (parallelism = {n}) AS {def}");
            self.mirror.note(&sql);
            eb_run(eb, &sql).await?;
        }
        for sql in [DATAGEN_TABLE, DATAGEN_MV] {
            self.mirror.note(sql);
            eb_run(eb, sql).await?;
        }
        self.gen.refresh_ids(self.mirror.pg()).await
    }

    fn next_dml(&mut self) -> String {
        if self.t2_rows > T2_MAX_ROWS {
            self.t2_rows -= self.t2_rows / 5;
            let k = self.gen.rng.gen_range(0..6);
            return format!("DELETE FROM t2 WHERE k = {k} OR k IS NULL");
        }
        self.gen.statement()
    }

    /// FLUSH from the writing session and make PostgreSQL the acknowledged
    /// state. A FLUSH that succeeds vouches for every statement the session
    /// wrote before it, faults or not (one that cannot fails instead): all
    /// of them are acknowledged. After a FLUSH that failed, or a statement
    /// that failed, what ebbflow kept is found by `Mirror::reconcile` once
    /// the cluster has recovered.
    pub(super) async fn settle(&mut self, sh: &Shared) -> Result<(), String> {
        let first = run_raw_within(&self.eb, "FLUSH", STMT_TIMEOUT)
            .await
            .map_err(|e| format!("FLUSH: {e}"))?;
        match first {
            Ok(_) if !self.failed => {
                self.mirror.acknowledge().await?;
                self.stats.acks += 1;
                self.ack_faults = sh.faults();
            }
            first => {
                if let Err(e) = &first {
                    if sh.calm_since(self.ack_faults) {
                        return Err(format!(
                            "FLUSH failed with no fault injected: {}",
                            describe_pg_error(e)
                        ));
                    }
                    sh.log
                        .push(format!("-- FLUSH failed (fault): {}", describe_pg_error(e)));
                }
                self.reconcile(sh).await?;
            }
        }
        self.failed = false;
        self.gen.refresh_ids(self.mirror.pg()).await?;
        self.t2_rows =
            first_cell(&run(self.mirror.pg(), "SELECT count(*) FROM t2").await?).unwrap_or(0);
        Ok(())
    }

    /// Once no fault is in progress (and none can start), FLUSH and find
    /// which uncertain statements ebbflow kept.
    async fn reconcile(&mut self, sh: &Shared) -> Result<(), String> {
        let deadline = Instant::now() + RECOVERY_WAIT * 2;
        loop {
            wait_no_fault(sh, deadline).await?;
            let _q = sh.quiet.lock().await;
            if !sh.faults().is_multiple_of(2) {
                continue;
            }
            // The committed state is final for every statement sent.
            flush(&self.eb, sh, u64::MAX, deadline).await?;
            let kept = self
                .mirror
                .reconcile(&self.eb)
                .await
                .map_err(|e| format!("after a fault: {e}"))?;
            // `t1 [101], t2 [], …`: per table, 1 for a statement kept.
            let bits: String = kept
                .split('[')
                .skip(1)
                .filter_map(|x| x.split(']').next())
                .collect();
            sh.log.push(format!(
                "-- reconciled after a fault: uncertain statements kept {kept}"
            ));
            self.stats.reconciles += 1;
            self.stats.lost += bits.matches('0').count();
            self.stats.kept += bits.matches('1').count();
            self.ack_faults = sh.faults();
            return Ok(());
        }
    }
}

/// Waits (until `deadline`) while a fault is in progress.
pub(super) async fn wait_no_fault(sh: &Shared, deadline: Instant) -> Result<(), String> {
    while !sh.faults().is_multiple_of(2) {
        if Instant::now() > deadline {
            return Err("a fault was still in progress after 40 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// FLUSH until it succeeds (until `deadline`); it may fail only if a fault
/// was injected since `ack_faults`.
pub(super) async fn flush(
    eb: &Client,
    sh: &Shared,
    ack_faults: u64,
    deadline: Instant,
) -> Result<(), String> {
    loop {
        let r = run_raw_within(eb, "FLUSH", STMT_TIMEOUT)
            .await
            .map_err(|e| format!("FLUSH: {e}"))?;
        match r {
            Ok(_) => return Ok(()),
            Err(e) if sh.calm_since(ack_faults) => {
                return Err(format!(
                    "FLUSH failed with no fault injected: {}",
                    describe_pg_error(&e)
                ))
            }
            Err(e) => {
                if Instant::now() > deadline {
                    return Err(format!(
                        "FLUSH still fails 40 s after a fault: {}",
                        describe_pg_error(&e)
                    ));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The DML task: rounds of one to four statements, each round holding
/// the workload (the checks pause it by taking it), a FLUSH now and then.
pub(super) async fn dml_task(
    work: Arc<tokio::sync::Mutex<Workload>>,
    sh: Arc<Shared>,
) -> Result<(), String> {
    while !sh.stop.load(Ordering::SeqCst) {
        {
            let mut w = work.lock().await;
            if sh.stop.load(Ordering::SeqCst) {
                break;
            }
            let n = w.gen.rng.gen_range(1..=4);
            for _ in 0..n {
                let sql = w.next_dml();
                w.mirror.sent(&sql);
                sh.log.push(format!("/* dml */ {sql}"));
                let r = tokio::time::timeout(STMT_TIMEOUT, w.eb.simple_query(&sql))
                    .await
                    .map_err(|_| format!("DML `{sql}`: no answer within 20 s"))?;
                match r {
                    Ok(msgs) => {
                        w.stats.ok += 1;
                        let n: u64 = msgs
                            .iter()
                            .map(|m| match m {
                                SimpleQueryMessage::CommandComplete(n) => *n,
                                _ => 0,
                            })
                            .sum();
                        sh.log.push(format!("-- {n} rows"));
                    }
                    Err(e) if sh.calm_since(w.ack_faults) => {
                        w.failed = true;
                        return Err(format!(
                            "DML `{sql}` failed with no fault injected: {}",
                            describe_pg_error(&e)
                        ));
                    }
                    Err(e) => {
                        sh.log
                            .push(format!("-- failed (fault): {}", describe_pg_error(&e)));
                        w.stats.failed += 1;
                        w.failed = true;
                    }
                }
            }
            if w.mirror.uncertain_max_per_table() >= 6 || w.gen.rng.gen_bool(0.2) {
                sh.log.push("/* dml */ FLUSH".into());
                w.settle(&sh).await?;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Pauses DML, settles the mirror and compares the tables and every MV
/// with PostgreSQL; checks the datagen MV.
pub(super) async fn compare_all(
    st: &SeedState,
    work: &tokio::sync::Mutex<Workload>,
    eb: &Client,
    check: usize,
) -> Result<(), String> {
    let mut w = tokio::time::timeout(STMT_TIMEOUT * 3, work.lock())
        .await
        .map_err(|_| "the DML task did not pause within 60 s".to_string())?;
    st.note(format!("-- check {check}: FLUSH"));
    w.settle(&st.sh).await?;
    let pg = w.mirror.pg();
    let when = format!("at check {check}");
    for t in TABLES.iter().filter_map(|t| t.split_whitespace().nth(2)) {
        let sql = format!("SELECT * FROM {t}");
        let (exp, act) = (
            multiset(&run(pg, &sql).await?),
            multiset(&eb_run(eb, &sql).await?),
        );
        if exp != act {
            return Err(format!(
                "table {t} differs from the acknowledged state {when} (PostgreSQL = expected)\n{}",
                diff_report(&exp, &act, 20)
            ));
        }
    }
    let fixed = FIXED_MVS.iter().map(|(n, _, d)| (*n, *d));
    for (name, def) in MVS.iter().copied().chain(fixed) {
        let sql = format!("SELECT * FROM {name}");
        let expected = run(pg, &sql)
            .await
            .map_err(|e| format!("PostgreSQL {name}: {e}"))?;
        let actual = eb_run(eb, &sql).await?;
        if let Some(what) = mv_mismatch(name, def, &when, &expected, &actual) {
            return Err(what);
        }
    }
    let mv = eb_run(eb, "SELECT c, d FROM mv_dg").await?;
    let t = eb_run(eb, "SELECT count(*), count(DISTINCT id), max(id) FROM dg").await?;
    let num = |r: &[Row], i: usize| r.first().and_then(|r| cell::<i64>(&r[i]));
    let (c, d, tc, td, tmax) = (num(&mv, 0), num(&mv, 1), num(&t, 0), num(&t, 1), num(&t, 2));
    match (c, d, tc, td) {
        (Some(c), Some(d), Some(tc), Some(td))
            if c == d
                && tc == td
                && c <= tc
                && tc <= DATAGEN_ROWS
                && (tc == 0 || tmax == Some(tc)) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "datagen {when}: mv_dg count={c:?} distinct={d:?}, table count={tc:?} \
             distinct={td:?} max={tmax:?} (sequence 1..{DATAGEN_ROWS})"
        )),
    }
}
