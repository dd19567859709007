//! Plain views in the catalog: a relation with a query text and columns
//! but no fragments, actors or state. It is persisted with the rest of the
//! catalog (so it survives a restart), lists the relations its query names
//! as upstreams (so `DROP TABLE` refuses, or cascades, as for a
//! materialized view), and is dropped like any relation.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use super::service::{Meta, MetaState, Parallelism, RelationEntry};
use super::{MetaError, MetaResult};

impl Meta {
    /// Add a view; committed (durable) when this returns.
    pub async fn create_view(
        &self,
        name: String,
        columns: Vec<ColumnDesc>,
        definition: String,
        upstreams: Vec<TableId>,
    ) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        {
            let mut st = self.state.lock();
            Self::check_name_free(&st, &name)?;
            if let Some(gone) = upstreams.iter().find(|t| !st.relations.contains_key(t)) {
                return Err(MetaError::new(
                    "42P01",
                    format!("relation with id {gone} does not exist"),
                ));
            }
            let id = st.alloc_table_id();
            insert_view(&mut st, id, name, columns, definition, upstreams);
        }
        self.persist_catalog().await?;
        Ok(())
    }
}

fn insert_view(
    st: &mut MetaState,
    id: TableId,
    name: String,
    columns: Vec<ColumnDesc>,
    definition: String,
    upstreams: Vec<TableId>,
) {
    let desc = RelationDesc {
        id,
        name,
        kind: RelationKind::View,
        columns,
        pk: vec![],
        user_pk: false,
        definition: Some(definition),
        with_options: BTreeMap::new(),
    };
    st.relations.insert(
        id,
        RelationEntry {
            desc: Arc::new(desc),
            dist_key: vec![],
            singleton: true,
            fragments: vec![],
            materialize_fragment: 0,
            upstreams,
            internal_tables: vec![],
            // Nothing to scale: the adaptive policy leaves it alone.
            parallelism: Parallelism::Custom,
        },
    );
}
