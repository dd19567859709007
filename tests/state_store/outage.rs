//! The outage scenarios of the state store test: under steady DML with
//! FLUSH acknowledgements the object store (SeaweedFS) or the meta store
//! (PostgreSQL) is stopped for a while and started again; FLUSHes meanwhile
//! may wait or fail, never succeed while rows were lost, and once the store
//! is back the cluster must commit again by itself.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio_postgres::Client;

use super::common::describe_pg_error;
use super::common::driver::say;
use super::model::{Stats, Writer};
use super::{setup, Ctx, Node, STMT_TIMEOUT};

/// Bound of a statement or FLUSH while a store is away: the retry window
/// (30 s), the recovery after it, the store's return.
const OUTAGE_STMT_TIMEOUT: Duration = Duration::from_secs(100);
/// How long after a store is back a FLUSH must have succeeded.
const COMMIT_AGAIN_WAIT: Duration = Duration::from_secs(60);
/// Steady writes before and after each outage.
const STEADY: Duration = Duration::from_secs(2);

/// Which store goes away.
#[derive(Clone, Copy, Debug)]
pub(super) enum Outage {
    ObjectStore,
    MetaStore,
}

impl Outage {
    pub(super) fn label(self) -> &'static str {
        match self {
            Outage::ObjectStore => "object store",
            Outage::MetaStore => "meta store",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Outage::ObjectStore => "s3out",
            Outage::MetaStore => "metaout",
        }
    }
}

/// Stops or starts the store. Blocking (a restart waits until it serves).
fn set_store(ctx: &mut Ctx, which: Outage, up: bool) -> Result<(), String> {
    tokio::task::block_in_place(|| match which {
        Outage::ObjectStore => {
            let weed = ctx
                .stores
                .weed_mut()
                .ok_or_else(|| "no SeaweedFS".to_string())?;
            if up {
                weed.restart()
            } else {
                weed.stop();
                Ok(())
            }
        }
        Outage::MetaStore => {
            let pg = ctx.pg.as_mut().ok_or_else(|| "no PostgreSQL".to_string())?;
            if up {
                pg.restart()
            } else {
                pg.stop();
                Ok(())
            }
        }
    })
}

/// What the writing task and the outages share.
#[derive(Default)]
struct Shared {
    /// Bumped when a store is stopped and again when it is back: odd
    /// during an outage. A statement or FLUSH may fail only if it moved
    /// since the last acknowledgement.
    faults: AtomicU64,
    stop: AtomicBool,
    /// Whether a store is stopped (set once it is down, cleared before it
    /// starts again).
    away: AtomicBool,
    /// When a FLUSH last succeeded.
    last_ok_flush: Mutex<Option<Instant>>,
    /// FLUSHes sent and answered with success while a store was down.
    ok_during_outage: AtomicU64,
    /// Events of the main task, merged into the log at the end.
    events: Mutex<Vec<String>>,
}

impl Shared {
    fn calm_since(&self, since: u64) -> bool {
        let now = self.faults.load(Ordering::SeqCst);
        now == since && now.is_multiple_of(2)
    }

    fn event(&self, what: &str) {
        let line = format!(
            "/* {} */ -- {what}",
            chrono::Utc::now().format("%H:%M:%S%.3f")
        );
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }
}

/// Once no store is away: FLUSH until one succeeds (each bounded; all
/// within `deadline`), then find which uncertain statements ebbflow kept.
/// Reads need the object store, so this waits for it.
async fn settle(w: &mut Writer, eb: &Client, sh: &Shared, deadline: Instant) -> Result<(), String> {
    loop {
        while !sh.faults.load(Ordering::SeqCst).is_multiple_of(2) {
            if Instant::now() > deadline {
                return Err("a store was still away at the deadline".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match w.flush(eb, OUTAGE_STMT_TIMEOUT).await? {
            None => break,
            Some(e) if Instant::now() > deadline => {
                return Err(format!(
                    "FLUSH still fails: {} (the cluster does not commit again)",
                    describe_pg_error(&e)
                ))
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    if w.failed {
        w.reconcile(eb, OUTAGE_STMT_TIMEOUT).await?;
    }
    Ok(())
}

/// Steady DML with FLUSH points until told to stop. After a failure no
/// new statement is sent until a FLUSH succeeded and the uncertain ones
/// are reconciled.
async fn write_steadily(
    mut w: Writer,
    eb: Client,
    sh: Arc<Shared>,
) -> (Writer, Client, Result<(), String>) {
    let mut ack_faults = 0;
    let result = async {
        while !sh.stop.load(Ordering::SeqCst) {
            let mut failure = None;
            for _ in 0..w.rng.gen_range(1..=5) {
                let op = w.next_op();
                if let Some(e) = w.send(&eb, op, OUTAGE_STMT_TIMEOUT).await? {
                    failure = Some(format!("a statement failed: {}", describe_pg_error(&e)));
                    break;
                }
            }
            if failure.is_none() {
                let away_before = sh.away.load(Ordering::SeqCst);
                let flushed = w.flush(&eb, OUTAGE_STMT_TIMEOUT).await?;
                if flushed.is_none() && away_before && sh.away.load(Ordering::SeqCst) {
                    sh.ok_during_outage.fetch_add(1, Ordering::SeqCst);
                    w.note("-- FLUSH succeeded while the store was down");
                }
                if let Some(e) = flushed {
                    // A FLUSH that cannot vouch for what was written says so:
                    // the store failed (58030), a recovery is under way
                    // (57P03) or one came between (XX000). A closed session
                    // or another code is not that.
                    let code = e.as_db_error().map(|d| d.code().code().to_string());
                    if !matches!(code.as_deref(), Some("58030" | "57P03" | "XX000")) {
                        return Err(format!(
                            "FLUSH failed with {} instead of SQLSTATE 58030, 57P03 or XX000: {}",
                            code.unwrap_or_else(|| "no server error".into()),
                            describe_pg_error(&e)
                        ));
                    }
                    failure = Some(format!("FLUSH failed: {}", describe_pg_error(&e)));
                }
            }
            if let Some(what) = failure {
                if sh.calm_since(ack_faults) {
                    return Err(format!(
                        "{what}, with no outage since the last acknowledgement"
                    ));
                }
                settle(&mut w, &eb, &sh, Instant::now() + OUTAGE_STMT_TIMEOUT * 2).await?;
            }
            ack_faults = sh.faults.load(Ordering::SeqCst);
            *sh.last_ok_flush.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
    .await;
    (w, eb, result)
}

/// What an outage scenario did.
pub(super) struct OutageReport {
    pub(super) which: Outage,
    /// Per outage: how long the store was away and how long after its
    /// return a FLUSH succeeded.
    pub(super) outages: Vec<(u128, u128)>,
    pub(super) ok_during_outage: u64,
    pub(super) stats: Stats,
}

pub(super) async fn outage(
    ctx: &mut Ctx,
    seed: u64,
    which: Outage,
    lengths: &[Duration],
) -> Result<OutageReport, String> {
    let name = format!("{}{seed}", which.tag());
    let mut node = Node::new(ctx, &name).await?;
    let mut w = Writer::new(seed ^ 0x5eed);
    let result = outage_body(ctx, &mut node, &mut w, which, lengths).await;
    // The store is back even after a failure, for the next scenario.
    let restored = set_store(ctx, which, true);
    node.stop().await;
    if let Some(pg) = &ctx.pg {
        ctx.stores.drop_meta(pg, &name).await;
    }
    let scenario = format!("{}-outage", which.tag());
    result
        .and_then(|r| restored.map(|()| r))
        .map_err(|e| node.fail(&w, &scenario, seed, &e))
}

async fn outage_body(
    ctx: &mut Ctx,
    node: &mut Node,
    w: &mut Writer,
    which: Outage,
    lengths: &[Duration],
) -> Result<OutageReport, String> {
    let eb = node.start(false).await?;
    setup(&eb, w).await?;
    let sh = Arc::new(Shared::default());
    let writer = std::mem::replace(w, Writer::new(0));
    let task = tokio::spawn(write_steadily(writer, eb, sh.clone()));
    let mut outages = Vec::new();
    let store = which.label();
    let timeline: Result<(), String> = async {
        tokio::time::sleep(STEADY).await;
        for len in lengths {
            if task.is_finished() {
                break;
            }
            sh.faults.fetch_add(1, Ordering::SeqCst);
            sh.event(&format!("{store} stopped for {} s", len.as_secs()));
            let down = Instant::now();
            set_store(ctx, which, false)?;
            sh.away.store(true, Ordering::SeqCst);
            tokio::time::sleep(*len).await;
            sh.away.store(false, Ordering::SeqCst);
            set_store(ctx, which, true)?;
            let back = Instant::now();
            sh.faults.fetch_add(1, Ordering::SeqCst);
            sh.event(&format!("{store} back"));
            let deadline = back + COMMIT_AGAIN_WAIT;
            loop {
                let last = *sh.last_ok_flush.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(t) = last.filter(|t| *t > back) {
                    let again = t.duration_since(back).as_millis();
                    sh.event(&format!(
                        "a FLUSH succeeded {again} ms after the {store} came back"
                    ));
                    say(&format!(
                        "state_store: {store} away {} ms: a FLUSH succeeded {again} ms after \
                         it came back",
                        back.duration_since(down).as_millis()
                    ));
                    outages.push((back.duration_since(down).as_millis(), again));
                    break;
                }
                if task.is_finished() {
                    // Its error is reported below.
                    return Ok(());
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "no FLUSH succeeded within {} s of the {store} coming back after {} s \
                         away: the cluster does not commit again by itself",
                        COMMIT_AGAIN_WAIT.as_secs(),
                        len.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tokio::time::sleep(STEADY).await;
        }
        Ok(())
    }
    .await;
    sh.stop.store(true, Ordering::SeqCst);
    let joined = tokio::time::timeout(OUTAGE_STMT_TIMEOUT * 3, task).await;
    let (writer, eb, written) = match joined {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(format!("the writing task panicked: {e}")),
        Err(_) => return Err("the writing task did not stop within 300 s".into()),
    };
    *w = writer;
    // The main task's events into the log, in time order.
    w.log.extend(
        sh.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..),
    );
    w.log.sort_by(|a, b| a.get(..18).cmp(&b.get(..18)));
    timeline?;
    written?;
    settle(w, &eb, &sh, Instant::now() + COMMIT_AGAIN_WAIT).await?;
    w.check(&eb, STMT_TIMEOUT).await?;
    Ok(OutageReport {
        which,
        outages,
        ok_during_outage: sh.ok_during_outage.load(Ordering::SeqCst),
        stats: w.stats.clone(),
    })
}
