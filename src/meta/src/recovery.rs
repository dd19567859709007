//! Recovery: every streaming job rebuilt from the last committed epoch
//! after a failure (an actor, a compute node, a commit), when a compute
//! process comes back after a restart, and when meta starts.

use ebbflow_common::ErrorKind;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::barrier::{BarrierCommand, BarrierSpec, ResetInfo};
use super::fragment::actor_desc;
use super::key_format;
use super::service::Meta;
use super::{MetaError, MetaResult};
use ebbflow_stream::message::FragmentId;

/// Runs a recovery whenever the barrier manager reports a failure.
pub(super) async fn recovery_loop(
    meta: std::sync::Weak<Meta>,
    mut rx: mpsc::UnboundedReceiver<String>,
) {
    while let Some(reason) = rx.recv().await {
        while rx.try_recv().is_ok() {}
        let Some(meta) = meta.upgrade() else { return };
        meta.recovering.store(true, Ordering::SeqCst);
        tracing::warn!(%reason, "recovering every streaming job from the last committed epoch");
        let mut delay = Duration::from_millis(10);
        loop {
            match meta.recover().await {
                Ok(()) => {
                    tracing::info!(epoch = meta.committed_epoch(), "recovery done");
                    meta.recovering.store(false, Ordering::SeqCst);
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "recovery failed; retrying");
                    while rx.try_recv().is_ok() {}
                    // A node that joins or comes back retries at once.
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = meta.nodes_changed.notified() => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

impl Meta {
    /// After a start over a store with a catalog: rebuild every job's actors
    /// from the last committed epoch. Returns once they run.
    pub async fn resume(&self) -> MetaResult<()> {
        if self.state.lock().relations.is_empty() {
            return Ok(());
        }
        self.recover().await
    }

    /// Rebuild every job by a recovery, which retries until the compute
    /// nodes it needs are there (a cluster's meta at start). Nothing to do
    /// without jobs.
    pub fn recover_in_background(&self, reason: &str) {
        if self.state.lock().relations.is_empty() {
            return;
        }
        let _ = self
            .services
            .events
            .send(ebbflow_stream::actor::ComputeEvent::Recover {
                reason: reason.to_string(),
            });
    }

    /// Where compute nodes' events go (a compute process's client forwards
    /// them here).
    pub fn events_sender(
        &self,
    ) -> tokio::sync::mpsc::UnboundedSender<ebbflow_stream::actor::ComputeEvent> {
        self.services.events.clone()
    }

    /// Make the next chunk processed by an actor of `fragment` fail that
    /// actor (a test fault; the cluster then recovers).
    pub fn inject_actor_failure(&self, fragment: FragmentId) {
        self.fault.store(fragment, Ordering::SeqCst);
    }

    /// How many recoveries ran since start.
    pub fn recovery_count(&self) -> i64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Rebuild every actor from the catalog and resume from the last
    /// committed epoch: state written after it is discarded, sources rewind
    /// to the offsets committed with it, caches start cold.
    async fn recover(&self) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        let mut routes = self.routes.write().await;
        routes.clear();
        self.state.lock().mark_dead_workers();
        self.reset_nodes().await;
        self.registry.clear();
        self.store.abort_uncommitted();
        self.committer.resync().await?;
        if self.state.lock().legacy_keys {
            self.migrate_state_keys().await?;
        }
        // Fail-over: actors of nodes that are down move to the surviving
        // units before everything is rebuilt.
        if let Some(summary) = self.fail_over() {
            let mut pending = self.failover_pending.lock();
            match pending.as_mut() {
                Some(p) => p.2.fragments.extend(summary.fragments),
                None => {
                    *pending = Some((chrono::Utc::now().naive_utc(), Instant::now(), summary));
                }
            }
        }
        let (per_worker, actors, sources) = {
            let st = self.state.lock();
            if st.total_units() == 0 && st.fragments.values().any(|f| !f.actors.is_empty()) {
                return Err(MetaError::new(
                    ErrorKind::ObjectNotInPrerequisiteState,
                    "no compute node is running: add or restart one",
                ));
            }
            let mut per_worker = Vec::new();
            let mut actors = Vec::new();
            let mut sources = Vec::new();
            for f in st.fragments.values() {
                for a in &f.actors {
                    actors.push(a.actor_id);
                    if !matches!(f.source, ebbflow_plan::SourceDesc::None) {
                        sources.push((a.worker, a.actor_id));
                    }
                    per_worker.push((a.worker, actor_desc(f, a, &st.fragments, &st.edges)));
                }
            }
            (per_worker, actors, sources)
        };
        self.build_actors_on(per_worker).await?;
        let (done, rx) = oneshot::channel();
        self.barrier_tx
            .send(BarrierCommand {
                spec: BarrierSpec {
                    meta_snapshot: Some(self.state.lock().snapshot()),
                    ..Default::default()
                },
                reset: Some(ResetInfo {
                    actors,
                    sources,
                    writes: Vec::new(),
                }),
                done,
            })
            .map_err(|_| MetaError::internal("barrier manager is gone"))?;
        drop(routes);
        rx.await
            .map_err(|_| MetaError::internal("barrier manager is gone"))??;
        self.recoveries.fetch_add(1, Ordering::Relaxed);
        if let Some((started_at, started, mut summary)) = self.failover_pending.lock().take() {
            summary.total_ms = started.elapsed().as_secs_f64() * 1000.0;
            summary.pause_ms = summary.total_ms;
            self.state
                .lock()
                .record_scale(started_at, "fail-over", &summary, true);
            self.persist_catalog_soon();
        }
        Ok(())
    }

    /// Re-key the committed state of an earlier version (see
    /// [`super::key_format`]) in one epoch, committed with the catalog
    /// that records the new format, before any actor is built.
    async fn migrate_state_keys(&self) -> MetaResult<()> {
        let (tables, names) = {
            let st = self.state.lock();
            let names: HashMap<_, _> = st
                .relations
                .iter()
                .map(|(id, r)| (*id, r.desc.name.clone()))
                .collect();
            (key_format::tables_to_migrate(&st.fragments), names)
        };
        let snapshot = self.store.snapshot();
        let (mut deletes, mut puts) = (Vec::new(), std::collections::BTreeMap::new());
        let mut moved = 0;
        for t in &tables {
            let found = key_format::rekey_table(&*snapshot, t, &mut deletes, &mut puts).await?;
            moved += found.moved;
            if found.collisions > 0 {
                let job = names.get(&t.job).map_or("?", String::as_str);
                tracing::warn!(
                    job,
                    table_id = t.table_id,
                    rows = found.collisions,
                    "state held rows for equal keys written differently (numerics of another \
                     scale, intervals): the job's results were wrong before this version and \
                     one row of each key was kept; recreate it to recompute them"
                );
            }
        }
        drop(snapshot);
        let catalog = {
            let mut st = self.state.lock();
            st.legacy_keys = false;
            st.snapshot()
        };
        let (done, rx) = oneshot::channel();
        let sent = self.barrier_tx.send(BarrierCommand {
            spec: BarrierSpec {
                meta_snapshot: Some(catalog),
                ..Default::default()
            },
            reset: Some(ResetInfo {
                actors: Vec::new(),
                sources: Vec::new(),
                writes: key_format::into_writes(deletes, puts),
            }),
            done,
        });
        let result = match sent {
            Ok(()) => rx
                .await
                .map_err(|_| MetaError::internal("barrier manager is gone"))
                .and_then(|r| r.map_err(MetaError::from)),
            Err(_) => Err(MetaError::internal("barrier manager is gone")),
        };
        match result {
            Ok(_) => {
                tracing::info!(
                    tables = tables.len(),
                    rows = moved,
                    "state keys re-encoded in the canonical format"
                );
                Ok(())
            }
            Err(e) => {
                self.state.lock().legacy_keys = true;
                Err(e)
            }
        }
    }
}
