//! `pg_catalog` and `information_schema`: PostgreSQL's system catalogs as
//! clients (psql's `\d`, JDBC metadata, BI tools) query them, computed on
//! every read from meta's catalog like `rw_catalog` (see [`super::system`]).
//! Nothing here is stored, so nothing can drift from the real catalog.
//!
//! OIDs: a user relation's OID is [`USER_OID_BASE`] + its id (above
//! PostgreSQL's `FirstNormalObjectId`, stable for the relation's life), the
//! index of its primary key is [`INDEX_OID_BASE`] + its id, a system
//! relation's OID is its id (below 1000, like PostgreSQL's own catalogs),
//! and types carry their real PostgreSQL OIDs.

use std::sync::Arc;

use super::catalog::{ColumnDesc, RelationDesc, RelationKind, SessionInfo, TableId};
use super::service::MetaState;
use super::system::{system_desc, SYSTEM_RELATIONS};
use ebbflow_common::{DataType, Datum, Row, ScalarValue};

type Col = (&'static str, DataType);

mod columns;
mod rows;

pub use columns::PG_RELATIONS;
pub use rows::pg_rows;

/// OID of user relation `id`: `USER_OID_BASE + id`.
pub const USER_OID_BASE: i64 = 16384;
/// OID of the primary-key index of user relation `id`.
pub const INDEX_OID_BASE: i64 = 1_000_000_000;
/// Namespace OIDs (PostgreSQL's for `pg_catalog` and `public`).
pub const PG_CATALOG_OID: i32 = 11;
pub const PUBLIC_OID: i32 = 2200;
pub const INFORMATION_SCHEMA_OID: i32 = 13000;
pub const RW_CATALOG_OID: i32 = 13001;
/// The one role (`root`) and database (`dev`).
pub const ROLE_OID: i32 = 10;
pub const DATABASE_OID: i32 = 16383;
/// System relations with an id in this range are in `pg_catalog`, those
/// in [`INFO_SCHEMA_IDS`] in `information_schema`; smaller ids are
/// `rw_catalog`.
pub const PG_CATALOG_IDS: std::ops::Range<u32> = 100..200;
pub const INFO_SCHEMA_IDS: std::ops::Range<u32> = 200..300;

/// PostgreSQL catalogs that are always empty in ebbflow (no defaults,
/// inheritance, triggers, rules, policies, publications, extended
/// statistics, partitions, foreign tables or sequences): a subquery over
/// one is folded by the binder, so psql's `\d name` works without them.
pub const ALWAYS_EMPTY: &[&str] = &[
    "pg_attrdef",
    "pg_collation",
    "pg_inherits",
    "pg_description",
    "pg_trigger",
    "pg_rewrite",
    "pg_policy",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_statistic_ext",
    "pg_partitioned_table",
    "pg_foreign_table",
    "pg_sequence",
    "pg_depend",
    "pg_auth_members",
];

/// A built-in type: `(oid, typname, format_type name, typlen, category,
/// array oid)`.
pub type PgType = (i32, &'static str, &'static str, i16, &'static str, i32);

/// The types `pg_type` lists: ours, plus those the catalogs' own columns
/// are declared with in PostgreSQL.
pub const PG_TYPES: &[PgType] = &[
    (16, "bool", "boolean", 1, "B", 1000),
    (18, "char", "\"char\"", 1, "Z", 1002),
    (19, "name", "name", 64, "S", 1003),
    (20, "int8", "bigint", 8, "N", 1016),
    (21, "int2", "smallint", 2, "N", 1005),
    (23, "int4", "integer", 4, "N", 1007),
    (25, "text", "text", -1, "S", 1009),
    (26, "oid", "oid", 4, "N", 1028),
    (700, "float4", "real", 4, "N", 1021),
    (701, "float8", "double precision", 8, "N", 1022),
    (1042, "bpchar", "character", -1, "S", 1014),
    (1043, "varchar", "character varying", -1, "S", 1015),
    (1082, "date", "date", 4, "D", 1182),
    (
        1114,
        "timestamp",
        "timestamp without time zone",
        8,
        "D",
        1115,
    ),
    (
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        "D",
        1185,
    ),
    (1186, "interval", "interval", 16, "T", 1187),
    (3802, "jsonb", "jsonb", -1, "U", 3807),
    (2950, "uuid", "uuid", 16, "U", 2951),
    (17, "bytea", "bytea", -1, "U", 1001),
    (1083, "time", "time without time zone", 8, "D", 1183),
    (1700, "numeric", "numeric", -1, "N", 1231),
    (2205, "regclass", "regclass", 4, "N", 2210),
    (2206, "regtype", "regtype", 4, "N", 2211),
    // The array types of ours (`DataType::Array`).
    (1000, "_bool", "boolean[]", -1, "A", 0),
    (1005, "_int2", "smallint[]", -1, "A", 0),
    (1007, "_int4", "integer[]", -1, "A", 0),
    (1009, "_text", "text[]", -1, "A", 0),
    (1015, "_varchar", "character varying[]", -1, "A", 0),
    (1016, "_int8", "bigint[]", -1, "A", 0),
    (1021, "_float4", "real[]", -1, "A", 0),
    (1022, "_float8", "double precision[]", -1, "A", 0),
    (
        1115,
        "_timestamp",
        "timestamp without time zone[]",
        -1,
        "A",
        0,
    ),
    (1182, "_date", "date[]", -1, "A", 0),
    (1187, "_interval", "interval[]", -1, "A", 0),
    (1231, "_numeric", "numeric[]", -1, "A", 0),
];

/// The functions `pg_proc` lists: `(name, number of arguments, result
/// type oid)`. Their OIDs are PostgreSQL-like but not PostgreSQL's.
const PG_PROCS: &[(&str, i16, i32)] = &[
    ("col_description", 2, 25),
    ("current_database", 0, 19),
    ("current_schema", 0, 19),
    ("current_schemas", 1, 1003),
    ("format_type", 2, 25),
    ("has_database_privilege", 2, 16),
    ("has_schema_privilege", 2, 16),
    ("has_table_privilege", 2, 16),
    ("now", 0, 1184),
    ("obj_description", 2, 25),
    ("pg_backend_pid", 0, 23),
    ("pg_encoding_to_char", 1, 19),
    ("pg_get_expr", 2, 25),
    ("pg_get_indexdef", 1, 25),
    ("pg_get_userbyid", 1, 19),
    ("pg_get_viewdef", 1, 25),
    ("pg_table_is_visible", 1, 16),
    ("pg_typeof", 1, 2206),
    ("quote_ident", 1, 25),
    ("version", 0, 25),
];

/// OID of the `i`th entry of `pg_proc`.
const PROC_OID_BASE: i64 = 9000;

/// `(oid, result type name)` of every function `pg_proc` lists.
pub fn proc_results() -> Vec<(i64, String)> {
    PG_PROCS
        .iter()
        .zip(PROC_OID_BASE..)
        .map(|((_, _, ret), oid)| {
            let name = PG_TYPES
                .iter()
                .find(|t| t.0 == *ret)
                .map_or("text", |t| t.2);
            (oid, name.to_string())
        })
        .collect()
}

/// The schema a system relation lives in.
pub fn system_schema(id: TableId) -> &'static str {
    if PG_CATALOG_IDS.contains(&id) {
        "pg_catalog"
    } else if INFO_SCHEMA_IDS.contains(&id) {
        "information_schema"
    } else {
        "rw_catalog"
    }
}

/// The descriptor of a `pg_catalog` or `information_schema` relation.
pub fn pg_relation(schema: &str, name: &str) -> Option<Arc<RelationDesc>> {
    PG_RELATIONS
        .iter()
        .find(|(_, s, n, _)| *s == schema && *n == name)
        .map(|(id, _, n, cols)| system_desc(*id, n, cols))
}

/// Whether system relation `id` is computed here rather than in `system`.
pub fn is_pg_relation(id: TableId) -> bool {
    PG_CATALOG_IDS.contains(&id) || INFO_SCHEMA_IDS.contains(&id)
}

/// The OID of a relation (see the module doc).
pub fn relation_oid(r: &RelationDesc) -> i64 {
    match r.kind {
        RelationKind::System => i64::from(r.id),
        _ => USER_OID_BASE + i64::from(r.id),
    }
}

/// The OID of a relation's primary-key index, if it has one.
pub fn index_oid(r: &RelationDesc) -> Option<i64> {
    (r.kind == RelationKind::Table && r.user_pk).then(|| INDEX_OID_BASE + i64::from(r.id))
}

/// The name of a relation's primary-key constraint and index.
pub fn pk_name(r: &RelationDesc) -> String {
    format!("{}_pkey", r.name)
}

/// `CREATE UNIQUE INDEX …` as `pg_get_indexdef` prints it.
pub fn index_def(r: &RelationDesc) -> String {
    format!(
        "CREATE UNIQUE INDEX {} ON public.{} USING btree ({})",
        pk_name(r),
        r.name,
        pk_columns(r).join(", ")
    )
}

fn pk_columns(r: &RelationDesc) -> Vec<&str> {
    r.pk.iter()
        .filter_map(|i| r.columns.get(*i))
        .map(|c| c.name.as_str())
        .collect()
}

/// `(oid, schema, name)` of every namespace.
pub fn namespaces() -> [(i32, &'static str); 4] {
    [
        (PG_CATALOG_OID, "pg_catalog"),
        (PUBLIC_OID, "public"),
        (INFORMATION_SCHEMA_OID, "information_schema"),
        (RW_CATALOG_OID, "rw_catalog"),
    ]
}

fn namespace_oid(schema: &str) -> i32 {
    namespaces()
        .iter()
        .find(|(_, n)| *n == schema)
        .map_or(PUBLIC_OID, |(o, _)| *o)
}

/// Every relation `pg_class` shows, with its schema: user relations, then
/// the system relations.
pub fn all_relations(st: &MetaState) -> Vec<(&'static str, Arc<RelationDesc>)> {
    let mut out: Vec<(&'static str, Arc<RelationDesc>)> = st
        .relations
        .values()
        .map(|r| ("public", r.desc.clone()))
        .collect();
    for (_, name, _) in SYSTEM_RELATIONS {
        if let Some(r) = super::system::system_relation(name) {
            out.push(("rw_catalog", r));
        }
    }
    for (_, schema, name, _) in PG_RELATIONS {
        if let Some(r) = pg_relation(schema, name) {
            out.push((*schema, r));
        }
    }
    out
}

fn int(v: impl TryInto<i32>) -> Datum {
    v.try_into().ok().map(ScalarValue::Int32)
}

fn small(v: impl TryInto<i16>) -> Datum {
    v.try_into().ok().map(ScalarValue::Int16)
}

fn text(s: impl Into<Arc<str>>) -> Datum {
    Some(ScalarValue::Varchar(s.into()))
}

fn boolean(b: bool) -> Datum {
    Some(ScalarValue::Boolean(b))
}

/// The `pg_type` entry of one of our types.
pub fn pg_type_of(t: DataType) -> Option<&'static PgType> {
    let oid = i32::try_from(t.oid()).ok()?;
    PG_TYPES.iter().find(|p| p.0 == oid)
}

/// `relkind` of a relation.
fn relkind(schema: &str, r: &RelationDesc) -> &'static str {
    match r.kind {
        RelationKind::Table => "r",
        RelationKind::MaterializedView => "m",
        RelationKind::View => "v",
        // Data from outside, read by the jobs that name it: what
        // PostgreSQL calls a foreign table.
        RelationKind::Source => "f",
        // PostgreSQL's own catalogs are tables; the rest are views there.
        RelationKind::System if schema == "pg_catalog" && r.name.starts_with("pg_") => {
            match r.name.as_str() {
                "pg_roles" | "pg_user" | "pg_settings" | "pg_tables" | "pg_views"
                | "pg_matviews" => "v",
                _ => "r",
            }
        }
        RelationKind::System => "v",
    }
}
