//! The metrics recorded as things happen, through one-line calls from the
//! code that sees them: barrier latency and the committed epoch (the
//! barrier manager), rows into and out of each fragment's actors and the
//! time actors wait on full outputs (the actor loop), sessions (pgwire),
//! the memory of aggregation groups and join caches (the executors) and of
//! the state store's caches, writes and compactions.
//!
//! Every layer records here, so this crate knows none of them: it depends
//! on no other crate of ours. The `/metrics` endpoint, which adds what it
//! reads from meta's catalog at each scrape, is the binary's
//! (`ebbflow::metrics`).
//!
//! Names follow Prometheus conventions: `ebbflow_` prefix, `_total` for
//! counters, `_seconds` for durations.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

/// Everything recorded as it happens (see the module doc).
struct Recorded {
    registry: Registry,
    barrier_latency: Histogram,
    committed_epoch: IntGauge,
    rows_in: IntCounterVec,
    rows_out: IntCounterVec,
    backpressure: prometheus::CounterVec,
    sessions: IntGauge,
    connections: IntCounter,
    agg_cache_bytes: IntGauge,
    agg_cache_groups: IntGauge,
    join_cache_rows: IntGauge,
    store_cache_bytes: IntGauge,
    store_write_bytes: IntGauge,
    store_compaction_bytes: IntGauge,
}

fn build() -> prometheus::Result<Recorded> {
    let registry = Registry::new();
    let barrier_latency = Histogram::with_opts(
        HistogramOpts::new(
            "ebbflow_barrier_latency_seconds",
            "Time from a barrier's injection to its epoch's commit",
        )
        .buckets(vec![
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
        ]),
    )?;
    let committed_epoch = IntGauge::new("ebbflow_committed_epoch", "The last committed epoch")?;
    let rows_in = IntCounterVec::new(
        Opts::new(
            "ebbflow_fragment_rows_in_total",
            "Rows entering a fragment's actors",
        ),
        &["fragment"],
    )?;
    let rows_out = IntCounterVec::new(
        Opts::new(
            "ebbflow_fragment_rows_out_total",
            "Rows a fragment's actors sent downstream",
        ),
        &["fragment"],
    )?;
    let backpressure = prometheus::CounterVec::new(
        Opts::new(
            "ebbflow_backpressure_wait_seconds_total",
            "Time a fragment's actors spent sending to their outputs (waiting while they are full)",
        ),
        &["fragment"],
    )?;
    let sessions = IntGauge::new("ebbflow_sessions", "Open client connections")?;
    let connections = IntCounter::new(
        "ebbflow_connections_total",
        "Client connections accepted since the start",
    )?;
    let agg_cache_bytes = IntGauge::new(
        "ebbflow_agg_cache_bytes",
        "Bytes of groups the hash aggregations of this process hold in memory (their packed state, not what the store caches)",
    )?;
    let agg_cache_groups = IntGauge::new(
        "ebbflow_agg_cache_groups",
        "Groups the hash aggregations of this process hold in memory",
    )?;
    let join_cache_rows = IntGauge::new(
        "ebbflow_join_cache_rows",
        "Rows the hash joins of this process hold in memory (both sides)",
    )?;
    let store_cache_bytes = IntGauge::new(
        "ebbflow_store_cache_bytes",
        "Bytes of state-file blocks and indexes cached in memory by this process's state store",
    )?;
    let store_write_bytes = IntGauge::new(
        "ebbflow_store_write_bytes",
        "Bytes of state writes this process's state store holds in memory until their epoch is committed",
    )?;
    let store_compaction_bytes = IntGauge::new(
        "ebbflow_store_compaction_bytes",
        "Bytes held by this process's running compactions (input chunks, the output file being built)",
    )?;
    registry.register(Box::new(store_compaction_bytes.clone()))?;
    registry.register(Box::new(store_cache_bytes.clone()))?;
    registry.register(Box::new(store_write_bytes.clone()))?;
    registry.register(Box::new(agg_cache_bytes.clone()))?;
    registry.register(Box::new(agg_cache_groups.clone()))?;
    registry.register(Box::new(join_cache_rows.clone()))?;
    registry.register(Box::new(barrier_latency.clone()))?;
    registry.register(Box::new(committed_epoch.clone()))?;
    registry.register(Box::new(rows_in.clone()))?;
    registry.register(Box::new(rows_out.clone()))?;
    registry.register(Box::new(backpressure.clone()))?;
    registry.register(Box::new(sessions.clone()))?;
    registry.register(Box::new(connections.clone()))?;
    Ok(Recorded {
        registry,
        barrier_latency,
        committed_epoch,
        rows_in,
        rows_out,
        backpressure,
        sessions,
        connections,
        agg_cache_bytes,
        agg_cache_groups,
        join_cache_rows,
        store_cache_bytes,
        store_write_bytes,
        store_compaction_bytes,
    })
}

/// `None` only if the metric definitions above are invalid (a bug caught
/// by the unit test); recording is then a no-op rather than a panic.
static RECORDED: LazyLock<Option<Recorded>> = LazyLock::new(|| match build() {
    Ok(r) => Some(r),
    Err(e) => {
        tracing::error!(error = %e, "metrics are disabled");
        None
    }
});

/// An epoch committed `latency` after its barrier was injected.
pub fn barrier_committed(epoch: u64, latency: Duration) {
    if let Some(r) = RECORDED.as_ref() {
        r.barrier_latency.observe(latency.as_secs_f64());
        r.committed_epoch
            .set(i64::try_from(epoch).unwrap_or(i64::MAX));
    }
}

/// `rows` rows entered an actor of `fragment`.
pub fn rows_in(fragment: u32, rows: usize) {
    if let Some(r) = RECORDED.as_ref() {
        r.rows_in
            .with_label_values(&[&fragment.to_string()])
            .inc_by(rows as u64);
    }
}

/// An actor of `fragment` sent `rows` rows downstream; the send began at
/// `started` (so the wait on full outputs is the time since).
pub fn chunk_sent(fragment: u32, rows: usize, started: Instant) {
    if let Some(r) = RECORDED.as_ref() {
        let label = fragment.to_string();
        r.rows_out.with_label_values(&[&label]).inc_by(rows as u64);
        r.backpressure
            .with_label_values(&[&label])
            .inc_by(started.elapsed().as_secs_f64());
    }
}

/// The groups a hash aggregation holds in memory grew by `groups` (and
/// `bytes`); negative when they shrank.
pub fn agg_cache_changed(bytes: i64, groups: i64) {
    if let Some(r) = RECORDED.as_ref() {
        r.agg_cache_bytes.add(bytes);
        r.agg_cache_groups.add(groups);
    }
}

/// The hash joins' caches hold `rows` more rows (negative: fewer).
pub fn join_cache_changed(rows: i64) {
    if let Some(r) = RECORDED.as_ref() {
        r.join_cache_rows.add(rows);
    }
}

/// The state store's caches hold `bytes` (set at each committed version).
pub fn store_cache_bytes(bytes: u64) {
    if let Some(r) = RECORDED.as_ref() {
        r.store_cache_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
}

/// State writes held in memory until their epoch commits grew (or, when
/// negative, shrank) by `delta` bytes.
pub fn store_write_bytes(delta: i64) {
    if let Some(r) = RECORDED.as_ref() {
        r.store_write_bytes.add(delta);
    }
}

/// Memory held by running compactions grew (or, when negative, shrank) by
/// `delta` bytes.
pub fn store_compaction_bytes(delta: i64) {
    if let Some(r) = RECORDED.as_ref() {
        r.store_compaction_bytes.add(delta);
    }
}

/// A client connection opened; the session count drops when the returned
/// guard does.
pub fn session_opened() -> SessionGuard {
    if let Some(r) = RECORDED.as_ref() {
        r.sessions.inc();
        r.connections.inc();
    }
    SessionGuard(())
}

/// Counts one open session while it lives.
pub struct SessionGuard(());

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if let Some(r) = RECORDED.as_ref() {
            r.sessions.dec();
        }
    }
}

/// Everything recorded so far, in Prometheus' text format (empty if the
/// metrics are disabled).
pub fn recorded_text() -> String {
    let mut body = Vec::new();
    if let Some(r) = RECORDED.as_ref() {
        if let Err(e) = TextEncoder::new().encode(&r.registry.gather(), &mut body) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_definitions_are_valid() {
        assert!(build().is_ok());
        barrier_committed(7, Duration::from_millis(20));
        rows_in(3, 10);
        chunk_sent(3, 5, Instant::now());
        let g = session_opened();
        drop(g);
        agg_cache_changed(0, 0);
        store_cache_bytes(0);
        let text = recorded_text();
        // Other unit tests record too: only the names are certain here.
        for name in [
            "ebbflow_fragment_rows_in_total{fragment=\"3\"}",
            "ebbflow_fragment_rows_out_total{fragment=\"3\"}",
            "ebbflow_barrier_latency_seconds_count",
            "ebbflow_committed_epoch",
            "ebbflow_sessions",
            "ebbflow_agg_cache_bytes",
            "ebbflow_agg_cache_groups",
            "ebbflow_store_cache_bytes",
        ] {
            assert!(text.contains(name), "{name} missing from {text}");
        }
    }
}
