//! One operation of the chaos test run and checked: the outcome it must
//! have, the layout it must leave, the invariants after it, the adaptive
//! policy settling, and for a fault the fail-over and recovery.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use super::cluster::{Par, Snapshot, State};
use super::common::describe_pg_error;
use super::common::rows::{cell, first_cell, run_raw_within, Row};
use super::ops::{Chaos, Kind, Op, DEFAULT_UNITS};
use super::workload::flush;
use super::{eb_run, SeedState, RECOVERY_WAIT, SETTLE_WAIT, STMT_TIMEOUT};

/// Reads the cluster until `ready` accepts it (tolerating errors: a
/// recovery may be running), until `limit`.
pub(super) async fn poll<T>(
    eb: &Client,
    limit: Duration,
    what: &str,
    mut ready: impl FnMut(&Snapshot) -> Option<T>,
) -> Result<T, String> {
    let deadline = Instant::now() + limit;
    loop {
        let last = match Snapshot::read(eb).await {
            Ok(s) => match ready(&s) {
                Some(t) => return Ok(t),
                None => s.describe(),
            },
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(format!(
                "{what}: not within {} s (last read: {last})",
                limit.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The invariants; with the adaptive policy on, also waits until the jobs
/// fit the cluster.
pub(super) async fn checked(
    eb: &Client,
    snap: Snapshot,
    adaptive: bool,
) -> Result<Snapshot, String> {
    let v = snap.violations();
    if !v.is_empty() {
        return Err(format!("invariant violated: {}", v.join("; ")));
    }
    if !adaptive || snap.unsettled().is_none() {
        return Ok(snap);
    }
    let deadline = Instant::now() + SETTLE_WAIT;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let s = Snapshot::read(eb).await?;
        let v = s.violations();
        if !v.is_empty() {
            return Err(format!("invariant violated: {}", v.join("; ")));
        }
        match s.unsettled() {
            None => return Ok(s),
            Some(why) if Instant::now() > deadline => {
                return Err(format!(
                    "the adaptive policy did not fit the jobs to the running units within {} s: \
                     {why}",
                    SETTLE_WAIT.as_secs()
                ))
            }
            Some(_) => {}
        }
    }
}

/// Injects the faults of `op` (while its scale, if any, runs on `aux`)
/// and waits until the cluster has recovered: the nodes are down, a
/// `fail-over` is recorded for a node that held actors, a FLUSH succeeds.
/// Without a scale, checks the fail-over: each fragment keeps its actor
/// count as far as the running units allow, and only fragments with
/// actors on a failed node move.
pub(super) async fn fault(
    st: &mut SeedState,
    eb: &Client,
    aux: &Client,
    op: &Op,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    let Kind::Fail { faults, during } = &op.kind else {
        return Err(format!("`{}` is not a fault", op.sql));
    };
    let ids: Vec<u32> = faults.iter().map(|f| f.0).collect();
    st.new_history(eb).await?;
    let t0 = Instant::now();
    let (scaled, injected) = {
        let _q = st.sh.quiet.lock().await;
        st.sh.faults.fetch_add(1, Ordering::SeqCst);
        let scale = async {
            match during {
                Some(sql) => Some(run_raw_within(aux, sql, STMT_TIMEOUT).await),
                None => None,
            }
        };
        let inject = async {
            for (_, sql, ms) in faults {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                eb_run(eb, sql).await?;
            }
            Ok::<_, String>(())
        };
        tokio::join!(scale, inject)
    };
    injected?;
    match (during, scaled) {
        (Some(sql), Some(Err(e))) => return Err(format!("`{sql}` during a fault: {e}")),
        (Some(sql), Some(Ok(Err(e)))) => st.note(format!(
            "-- `{sql}` failed during the fault: {}",
            describe_pg_error(&e)
        )),
        (Some(sql), Some(Ok(Ok(_)))) => st.note(format!("-- `{sql}` succeeded during the fault")),
        _ => {}
    }
    poll(
        eb,
        RECOVERY_WAIT,
        &format!("nodes {ids:?} marked down"),
        |s| {
            ids.iter()
                .all(|id| s.state(*id) == Some(State::Down))
                .then_some(())
        },
    )
    .await?;
    let down_ms = t0.elapsed().as_millis();
    let held: usize = ids.iter().map(|id| before.actors_on(*id)).sum();
    if held > 0 && during.is_none() {
        let deadline = Instant::now() + RECOVERY_WAIT;
        while !st.op_history.iter().any(|(s, _)| s == "fail-over") {
            if Instant::now() > deadline {
                return Err(format!(
                    "no fail-over in rw_scale_history within {} s of the fault (nodes {ids:?} \
                     held {held} actors)",
                    RECOVERY_WAIT.as_secs(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = st.new_history(eb).await;
        }
    }
    flush(eb, &st.sh, u64::MAX, Instant::now() + RECOVERY_WAIT).await?;
    // No actor is left on a failed node once the recovery is done.
    poll(eb, RECOVERY_WAIT, "the failed nodes' actors moved", |s| {
        ids.iter().all(|id| s.actors_on(*id) == 0).then_some(())
    })
    .await?;
    let recovered_ms = t0.elapsed().as_millis();
    st.note(format!(
        "-- nodes {ids:?} down after {down_ms} ms, recovered after {recovered_ms} ms"
    ));
    st.fault_ms.push((down_ms, recovered_ms));
    st.sh.faults.fetch_add(1, Ordering::SeqCst);
    let after = Snapshot::read(eb).await?;
    if during.is_some() {
        return Ok(after);
    }
    let avail = after.running_units().len();
    for f in before.frags.keys() {
        let want = if before.single(*f) {
            1
        } else {
            before.count(*f).min(avail)
        };
        if after.count(*f) != want {
            return Err(format!(
                "after the fail-over fragment {f} has {} actors, expected {want} (it had {}, \
                 {avail} units run)",
                after.count(*f),
                before.count(*f)
            ));
        }
        let on_failed = ids
            .iter()
            .any(|id| before.fragments_on(*id).contains_key(f));
        if !on_failed && after.units(*f) != before.units(*f) {
            return Err(format!(
                "the fail-over moved fragment {f}, which had no actor on nodes {ids:?}: units \
                 {:?} → {:?}",
                before.units(*f),
                after.units(*f)
            ));
        }
    }
    Ok(after)
}

/// Runs one operation and checks its outcome; returns the cluster after.
pub(super) async fn apply(
    st: &mut SeedState,
    eb: &Client,
    aux: &Client,
    chaos: &mut Chaos,
    op: &Op,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    if let (Kind::Fail { .. }, None) = (&op.kind, op.refusal) {
        return fault(st, eb, aux, op, before).await;
    }
    let res = run_raw_within(eb, &op.sql, STMT_TIMEOUT)
        .await
        .map_err(|e| format!("`{}`: {e}", op.sql))?;
    let after = Snapshot::read(eb).await?;
    let history = st.new_history(eb).await?;
    let rows = match (op.refusal, res) {
        (Some(code), Ok(_)) => {
            return Err(format!(
                "`{}` succeeded; expected SQLSTATE {code} ({})",
                op.sql, op.why
            ))
        }
        (Some(code), Err(e)) => {
            if e.code().map(|c| c.code()) != Some(code) {
                return Err(format!(
                    "`{}` failed with {}; expected SQLSTATE {code} ({})",
                    op.sql,
                    describe_pg_error(&e),
                    op.why
                ));
            }
            if after != *before {
                return Err(format!(
                    "refused `{}` changed the cluster\nbefore: {}\nafter:  {}",
                    op.sql,
                    before.describe(),
                    after.describe()
                ));
            }
            if history.iter().any(|(s, _)| *s == op.sql) {
                return Err(format!("refused `{}` is in rw_scale_history", op.sql));
            }
            let msg = e.as_db_error().map(|d| d.message()).unwrap_or_default();
            if let Some(m) = op.mention.iter().find(|m| !msg.contains(m.as_str())) {
                return Err(format!(
                    "`{}` was refused with \"{msg}\", which does not name {m} ({})",
                    op.sql, op.why
                ));
            }
            return Ok(after);
        }
        (None, Err(e)) => {
            return Err(format!(
                "valid `{}` failed: {}",
                op.sql,
                describe_pg_error(&e)
            ))
        }
        (None, Ok(rows)) => rows,
    };
    succeeded(chaos, op, &rows, before, &after, &history)?;
    Ok(after)
}

/// The checks of an operation that succeeded: the nodes and layout it
/// must leave, its row in `rw_scale_history` (`history`: the rows since
/// it began).
fn succeeded(
    chaos: &mut Chaos,
    op: &Op,
    rows: &[Row],
    before: &Snapshot,
    after: &Snapshot,
    history: &[(String, String)],
) -> Result<(), String> {
    let recorded = |sql: &str| {
        history
            .iter()
            .any(|(s, status)| s == sql && status == "succeeded")
    };
    let same_states = |skip: u32| {
        before
            .workers
            .iter()
            .filter(|(id, _)| **id != skip)
            .all(|(id, w)| after.workers.get(id) == Some(w))
    };
    match &op.kind {
        Kind::Add { units } => {
            let id: u32 = first_cell(rows).unwrap_or(0);
            let n = units.unwrap_or(DEFAULT_UNITS);
            let want: BTreeSet<u32> = (chaos.max_unit + 1..=chaos.max_unit + n).collect();
            if id != chaos.max_node + 1 {
                return Err(format!(
                    "`{}` returned node {id}, expected {} (ids are never reused)",
                    op.sql,
                    chaos.max_node + 1
                ));
            }
            let w = after.workers.get(&id);
            if w.map(|w| (w.state, &w.units)) != Some((State::Running, &want)) {
                return Err(format!(
                    "after `{}` node {id} is {w:?}, expected running on units {want:?}",
                    op.sql
                ));
            }
            if !same_states(id) {
                return Err(format!("`{}` changed other nodes", op.sql));
            }
            chaos.max_node = id;
            chaos.max_unit += n;
            // The new node gets actors only from the adaptive policy.
            if !chaos.adaptive && after.actors_on(id) != 0 {
                return Err(format!(
                    "with adaptive_scaling off, node {id} got {} actors after `{}`",
                    after.actors_on(id),
                    op.sql
                ));
            }
        }
        Kind::Drain { id, dry: true } => {
            let on = before.fragments_on(*id);
            let got: BTreeMap<u32, usize> = rows
                .iter()
                .map(|r| (cell(&r[0]).unwrap_or(0), cell(&r[2]).unwrap_or(0)))
                .collect();
            if got != on {
                return Err(format!(
                    "`{}` plans to remove (fragment → actors) {got:?}, but node {id} holds {on:?}",
                    op.sql
                ));
            }
            if after != before {
                return Err(format!("`{}` changed the cluster", op.sql));
            }
        }
        Kind::Drain { id, dry: false } => {
            let avail = after.running_units().len();
            if after.state(*id) != Some(State::Draining) || after.actors_on(*id) != 0 {
                return Err(format!(
                    "after `{}` node {id} is {:?} with {} actors, expected draining with none",
                    op.sql,
                    after.state(*id),
                    after.actors_on(*id)
                ));
            }
            if !same_states(*id) {
                return Err(format!("`{}` changed other nodes", op.sql));
            }
            let on = before.fragments_on(*id);
            for f in before.frags.keys() {
                let want = if before.single(*f) {
                    1
                } else {
                    before.count(*f).min(avail)
                };
                if after.count(*f) != want
                    || (!on.contains_key(f) && after.units(*f) != before.units(*f))
                {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?} (before {:?}, {avail} units \
                         run): a drain keeps actor counts and moves only the drained node's \
                         actors",
                        op.sql,
                        after.units(*f),
                        before.units(*f)
                    ));
                }
            }
            if !on.is_empty() && !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Remove { id } => {
            if after.workers.contains_key(id) || !same_states(*id) || after.actors != before.actors
            {
                return Err(format!(
                    "after `{}`: {}, expected node {id} gone and nothing else changed",
                    op.sql,
                    after.describe()
                ));
            }
        }
        Kind::Restart { id } => {
            let (b, a) = (before.workers.get(id), after.workers.get(id));
            if a.map(|w| (w.state, &w.units)) != b.map(|w| (State::Running, &w.units)) {
                return Err(format!(
                    "after `{}` node {id} is {a:?}, expected running on its units (before: {b:?})",
                    op.sql
                ));
            }
        }
        Kind::SetPar { job, n } => {
            let want_par = n.map_or(Par::Adaptive, Par::Fixed);
            if after.jobs.get(job) != Some(&want_par) {
                return Err(format!(
                    "after `{}` job {job} has parallelism {:?}",
                    op.sql,
                    after.jobs.get(job)
                ));
            }
            let running = after.running_units();
            for f in after.job_frags(*job) {
                let ok = match n {
                    _ if after.single(f) => after.count(f) == 1,
                    Some(n) => after.count(f) == *n,
                    None => after.units(f) == running,
                };
                if !ok {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?} (running units {running:?})",
                        op.sql,
                        after.units(f)
                    ));
                }
            }
            if after.actors != before.actors && !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Reschedule { dry: true, .. } => {
            if rows.is_empty() || after != before {
                return Err(format!(
                    "`{}` returned {} rows and {} the cluster",
                    op.sql,
                    rows.len(),
                    if after == before {
                        "did not change"
                    } else {
                        "changed"
                    }
                ));
            }
        }
        Kind::Reschedule { expect, dry: false } => {
            for (f, want) in expect {
                if after.units(*f) != *want {
                    return Err(format!(
                        "after `{}` fragment {f} is on units {:?}, expected {want:?}",
                        op.sql,
                        after.units(*f)
                    ));
                }
                if want.len() != before.count(*f) && after.par(*f) != Par::Custom {
                    return Err(format!(
                        "`{}` resized fragment {f}, yet its job's parallelism is {:?}, not custom",
                        op.sql,
                        after.par(*f)
                    ));
                }
            }
            if !recorded(&op.sql) {
                return Err(format!("`{}` is not in rw_scale_history", op.sql));
            }
        }
        Kind::Adaptive(on) => chaos.adaptive = *on,
        Kind::Fail { .. } | Kind::Bad => {}
    }
    Ok(())
}

/// The history of one operation: no scale failed unless a fault was
/// injected; when the adaptive policy changed the layout (a node joined or
/// came back, the policy was turned on), it recorded an `adaptive` row.
pub(super) async fn policy_history(
    st: &mut SeedState,
    eb: &Client,
    op: &Op,
    before: &Snapshot,
    settled: &Snapshot,
) -> Result<(), String> {
    st.new_history(eb).await?;
    let by_policy = op.refusal.is_none()
        && matches!(
            op.kind,
            Kind::Add { .. } | Kind::Restart { .. } | Kind::Adaptive(true)
        )
        && settled.actors != before.actors;
    let deadline = Instant::now() + SETTLE_WAIT;
    while by_policy
        && !st
            .op_history
            .iter()
            .any(|(s, status)| s == "adaptive" && status == "succeeded")
    {
        if Instant::now() > deadline {
            return Err(format!(
                "after `{}` the adaptive policy changed the layout but rw_scale_history has no                  succeeded `adaptive` row (new rows: {:?})",
                op.sql, st.op_history
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        st.new_history(eb).await?;
    }
    let fault = matches!(op.kind, Kind::Fail { .. }) && op.refusal.is_none();
    if let Some(failed) = st.op_history.iter().find(|(_, s)| s != "succeeded") {
        if !fault {
            return Err(format!(
                "a scale failed with no fault injected: rw_scale_history row {failed:?} (during                  `{}`)",
                op.sql
            ));
        }
    }
    Ok(())
}
