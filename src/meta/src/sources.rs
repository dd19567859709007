//! Sources in the catalog (`CREATE SOURCE`): columns and connector options,
//! no fragments of their own. Every job reading a source plans a source
//! fragment of its own (`SourceDesc::Splits` naming the source), lists the
//! source as an upstream (so `DROP SOURCE` refuses, or cascades), and keeps
//! its own split progress; `ALTER SOURCE … SET PARALLELISM` rescales those
//! fragments in every such job.

use std::sync::Arc;

use super::catalog::{ColumnDesc, RelationDesc, RelationKind};
use super::service::{Meta, Parallelism, RelationEntry};
use super::MetaResult;
use ebbflow_plan::SourceDesc;
use ebbflow_stream::message::FragmentId;

impl Meta {
    /// Add a source (its options already checked by the connector);
    /// committed (durable) when this returns.
    pub async fn create_source(
        &self,
        name: String,
        columns: Vec<ColumnDesc>,
        pk: Vec<usize>,
        with_options: std::collections::BTreeMap<String, String>,
        watermark: Option<ebbflow_plan::WatermarkDesc>,
    ) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        {
            let mut st = self.state.lock();
            Self::check_name_free(&st, &name)?;
            let id = st.alloc_table_id();
            let desc = RelationDesc {
                id,
                name,
                kind: RelationKind::Source,
                columns,
                pk,
                user_pk: false,
                definition: None,
                with_options,
                append_only: true,
                watermark,
                on_conflict: Default::default(),
            };
            st.relations.insert(
                id,
                RelationEntry {
                    desc: Arc::new(desc),
                    dist_key: vec![],
                    singleton: false,
                    fragments: vec![],
                    materialize_fragment: 0,
                    upstreams: vec![],
                    internal_tables: vec![],
                    // Its fragments belong to the jobs reading it.
                    parallelism: Parallelism::Custom,
                },
            );
        }
        self.persist_catalog().await?;
        Ok(())
    }

    /// The fragments, in every job, that read source `source`.
    pub fn source_fragments(&self, source: crate::catalog::TableId) -> Vec<FragmentId> {
        self.with_state(|st| {
            st.fragments
                .values()
                .filter(|f| {
                    matches!(&f.source, SourceDesc::Splits { desc, .. } if desc.relation == source)
                })
                .map(|f| f.id)
                .collect()
        })
    }
}
