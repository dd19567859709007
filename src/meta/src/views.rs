//! Plain views in the catalog: a relation with a query text and columns
//! but no fragments, actors or state. It is persisted with the rest of the
//! catalog (so it survives a restart), lists the relations its query names
//! as upstreams (so `DROP TABLE` refuses, or cascades, as for a
//! materialized view), and is dropped like any relation.
//!
//! `CREATE OR REPLACE VIEW` keeps the view's id, and so what depends on it,
//! and follows PostgreSQL: the new query must yield the old columns, same
//! names and types in the same order, and may add columns after them
//! (invalid_table_definition otherwise); a view cannot come to depend on
//! itself (invalid_object_definition).

use ebbflow_common::ErrorKind;
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
        or_replace: bool,
    ) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        {
            let mut st = self.state.lock();
            let existing = st.relation_by_name(&name).map(|r| r.desc.clone());
            let id = match existing {
                Some(old) if or_replace => {
                    check_replacement(&st, &old, &columns, &upstreams)?;
                    Some(old.id)
                }
                _ => {
                    Self::check_name_free(&st, &name)?;
                    None
                }
            };
            if let Some(gone) = upstreams.iter().find(|t| !st.relations.contains_key(t)) {
                return Err(MetaError::new(
                    ErrorKind::UndefinedTable,
                    format!("relation with id {gone} does not exist"),
                ));
            }
            let id = match id {
                Some(id) => id,
                None => st.alloc_table_id(),
            };
            insert_view(&mut st, id, name, columns, definition, upstreams);
        }
        self.persist_catalog().await?;
        Ok(())
    }
}

/// Whether `old` may be replaced by a view of `columns` reading
/// `upstreams` (see the module doc).
fn check_replacement(
    st: &MetaState,
    old: &RelationDesc,
    columns: &[ColumnDesc],
    upstreams: &[TableId],
) -> MetaResult<()> {
    if old.kind != RelationKind::View {
        return Err(MetaError::new(
            ErrorKind::WrongObjectType,
            format!("\"{}\" is not a view", old.name),
        ));
    }
    if columns.len() < old.columns.len() {
        return Err(MetaError::new(
            ErrorKind::InvalidTableDefinition,
            "cannot drop columns from view",
        ));
    }
    for (o, n) in old.columns.iter().zip(columns) {
        if o.name != n.name {
            return Err(MetaError::new(
                ErrorKind::InvalidTableDefinition,
                format!(
                    "cannot change name of view column \"{}\" to \"{}\"",
                    o.name, n.name
                ),
            ));
        }
        if o.data_type != n.data_type {
            return Err(MetaError::new(
                ErrorKind::InvalidTableDefinition,
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    o.name,
                    o.data_type.pg_name(),
                    n.data_type.pg_name()
                ),
            ));
        }
    }
    // Everything the new query reads, transitively, must not be the view.
    let mut seen: Vec<TableId> = Vec::new();
    let mut todo: Vec<TableId> = upstreams.to_vec();
    while let Some(t) = todo.pop() {
        if t == old.id {
            return Err(MetaError::new(
                ErrorKind::InvalidObjectDefinition,
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    old.name
                ),
            ));
        }
        if seen.contains(&t) {
            continue;
        }
        seen.push(t);
        if let Some(r) = st.relations.get(&t) {
            todo.extend(r.upstreams.iter().copied());
        }
    }
    Ok(())
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
        append_only: false,
        watermark: None,
        on_conflict: Default::default(),
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
