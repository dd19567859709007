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
use crate::common::{DataType, Datum, Row, ScalarValue};

type Col = (&'static str, DataType);

const I: DataType = DataType::Int32;
const V: DataType = DataType::Varchar;
const B: DataType = DataType::Boolean;
const S: DataType = DataType::Int16;

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

/// `(id, schema, name, columns)` of every `pg_catalog` and
/// `information_schema` relation; column lists are the subset of
/// PostgreSQL 15's that clients read, in PostgreSQL's order.
pub const PG_RELATIONS: &[(u32, &str, &str, &[Col])] = &[
    (
        100,
        "pg_catalog",
        "pg_namespace",
        &[("oid", I), ("nspname", V), ("nspowner", I), ("nspacl", V)],
    ),
    (
        101,
        "pg_catalog",
        "pg_class",
        &[
            ("oid", I),
            ("relname", V),
            ("relnamespace", I),
            ("reltype", I),
            ("reloftype", I),
            ("relowner", I),
            ("relam", I),
            ("relfilenode", I),
            ("reltablespace", I),
            ("relpages", I),
            ("reltuples", DataType::Float32),
            ("relallvisible", I),
            ("reltoastrelid", I),
            ("relhasindex", B),
            ("relisshared", B),
            ("relpersistence", V),
            ("relkind", V),
            ("relnatts", S),
            ("relchecks", S),
            ("relhasrules", B),
            ("relhastriggers", B),
            ("relhassubclass", B),
            ("relrowsecurity", B),
            ("relforcerowsecurity", B),
            ("relispopulated", B),
            ("relreplident", V),
            ("relispartition", B),
            ("relrewrite", I),
            ("relfrozenxid", I),
            ("relminmxid", I),
            ("relacl", V),
            ("reloptions", V),
            ("relpartbound", V),
        ],
    ),
    (
        102,
        "pg_catalog",
        "pg_attribute",
        &[
            ("attrelid", I),
            ("attname", V),
            ("atttypid", I),
            ("attstattarget", I),
            ("attlen", S),
            ("attnum", S),
            ("attndims", I),
            ("attcacheoff", I),
            ("atttypmod", I),
            ("attbyval", B),
            ("attalign", V),
            ("attstorage", V),
            ("attcompression", V),
            ("attnotnull", B),
            ("atthasdef", B),
            ("atthasmissing", B),
            ("attidentity", V),
            ("attgenerated", V),
            ("attisdropped", B),
            ("attislocal", B),
            ("attinhcount", I),
            ("attcollation", I),
            ("attacl", V),
            ("attoptions", V),
            ("attfdwoptions", V),
            ("attmissingval", V),
        ],
    ),
    (
        103,
        "pg_catalog",
        "pg_type",
        &[
            ("oid", I),
            ("typname", V),
            ("typnamespace", I),
            ("typowner", I),
            ("typlen", S),
            ("typbyval", B),
            ("typtype", V),
            ("typcategory", V),
            ("typispreferred", B),
            ("typisdefined", B),
            ("typdelim", V),
            ("typrelid", I),
            ("typelem", I),
            ("typarray", I),
            ("typinput", V),
            ("typoutput", V),
            ("typreceive", V),
            ("typsend", V),
            ("typbasetype", I),
            ("typtypmod", I),
            ("typndims", I),
            ("typcollation", I),
            ("typnotnull", B),
            ("typdefault", V),
            ("typacl", V),
        ],
    ),
    (
        104,
        "pg_catalog",
        "pg_index",
        &[
            ("indexrelid", I),
            ("indrelid", I),
            ("indnatts", S),
            ("indnkeyatts", S),
            ("indisunique", B),
            ("indnullsnotdistinct", B),
            ("indisprimary", B),
            ("indisexclusion", B),
            ("indimmediate", B),
            ("indisclustered", B),
            ("indisvalid", B),
            ("indcheckxmin", B),
            ("indisready", B),
            ("indislive", B),
            ("indisreplident", B),
            ("indkey", V),
            ("indcollation", V),
            ("indclass", V),
            ("indoption", V),
            ("indexprs", V),
            ("indpred", V),
        ],
    ),
    (
        105,
        "pg_catalog",
        "pg_constraint",
        &[
            ("oid", I),
            ("conname", V),
            ("connamespace", I),
            ("contype", V),
            ("condeferrable", B),
            ("condeferred", B),
            ("convalidated", B),
            ("conrelid", I),
            ("contypid", I),
            ("conindid", I),
            ("conparentid", I),
            ("confrelid", I),
            ("confupdtype", V),
            ("confdeltype", V),
            ("confmatchtype", V),
            ("conislocal", B),
            ("coninhcount", I),
            ("connoinherit", B),
            ("conkey", V),
            ("confkey", V),
            ("conbin", V),
        ],
    ),
    (
        106,
        "pg_catalog",
        "pg_database",
        &[
            ("oid", I),
            ("datname", V),
            ("datdba", I),
            ("encoding", I),
            ("datlocprovider", V),
            ("datistemplate", B),
            ("datallowconn", B),
            ("datconnlimit", I),
            ("datfrozenxid", I),
            ("datminmxid", I),
            ("dattablespace", I),
            ("datcollate", V),
            ("datctype", V),
            ("daticulocale", V),
            ("datcollversion", V),
            ("datacl", V),
        ],
    ),
    (
        107,
        "pg_catalog",
        "pg_roles",
        &[
            ("rolname", V),
            ("rolsuper", B),
            ("rolinherit", B),
            ("rolcreaterole", B),
            ("rolcreatedb", B),
            ("rolcanlogin", B),
            ("rolreplication", B),
            ("rolconnlimit", I),
            ("rolpassword", V),
            ("rolvaliduntil", DataType::Timestamp),
            ("rolbypassrls", B),
            ("rolconfig", V),
            ("oid", I),
        ],
    ),
    (
        108,
        "pg_catalog",
        "pg_user",
        &[
            ("usename", V),
            ("usesysid", I),
            ("usecreatedb", B),
            ("usesuper", B),
            ("userepl", B),
            ("usebypassrls", B),
            ("passwd", V),
            ("valuntil", DataType::Timestamp),
            ("useconfig", V),
        ],
    ),
    (
        109,
        "pg_catalog",
        "pg_settings",
        &[
            ("name", V),
            ("setting", V),
            ("unit", V),
            ("category", V),
            ("short_desc", V),
            ("extra_desc", V),
            ("context", V),
            ("vartype", V),
            ("source", V),
            ("min_val", V),
            ("max_val", V),
            ("enumvals", V),
            ("boot_val", V),
            ("reset_val", V),
            ("sourcefile", V),
            ("sourceline", I),
            ("pending_restart", B),
        ],
    ),
    (
        110,
        "pg_catalog",
        "pg_description",
        &[
            ("objoid", I),
            ("classoid", I),
            ("objsubid", I),
            ("description", V),
        ],
    ),
    (
        111,
        "pg_catalog",
        "pg_am",
        &[("oid", I), ("amname", V), ("amhandler", V), ("amtype", V)],
    ),
    (
        112,
        "pg_catalog",
        "pg_proc",
        &[
            ("oid", I),
            ("proname", V),
            ("pronamespace", I),
            ("proowner", I),
            ("prolang", I),
            ("prokind", V),
            ("proretset", B),
            ("pronargs", S),
            ("prorettype", I),
            ("proargtypes", V),
            ("prosrc", V),
        ],
    ),
    (
        113,
        "pg_catalog",
        "pg_tables",
        &[
            ("schemaname", V),
            ("tablename", V),
            ("tableowner", V),
            ("tablespace", V),
            ("hasindexes", B),
            ("hasrules", B),
            ("hastriggers", B),
            ("rowsecurity", B),
        ],
    ),
    (
        114,
        "pg_catalog",
        "pg_views",
        &[
            ("schemaname", V),
            ("viewname", V),
            ("viewowner", V),
            ("definition", V),
        ],
    ),
    (
        115,
        "pg_catalog",
        "pg_matviews",
        &[
            ("schemaname", V),
            ("matviewname", V),
            ("matviewowner", V),
            ("tablespace", V),
            ("hasindexes", B),
            ("ispopulated", B),
            ("definition", V),
        ],
    ),
    (
        116,
        "pg_catalog",
        "pg_attrdef",
        &[("oid", I), ("adrelid", I), ("adnum", S), ("adbin", V)],
    ),
    (
        117,
        "pg_catalog",
        "pg_collation",
        &[("oid", I), ("collname", V), ("collnamespace", I)],
    ),
    (
        118,
        "pg_catalog",
        "pg_inherits",
        &[
            ("inhrelid", I),
            ("inhparent", I),
            ("inhseqno", I),
            ("inhdetachpending", B),
        ],
    ),
    (
        119,
        "pg_catalog",
        "pg_tablespace",
        &[("oid", I), ("spcname", V), ("spcowner", I)],
    ),
    (
        200,
        "information_schema",
        "schemata",
        &[("catalog_name", V), ("schema_name", V), ("schema_owner", V)],
    ),
    (
        201,
        "information_schema",
        "tables",
        &[
            ("table_catalog", V),
            ("table_schema", V),
            ("table_name", V),
            ("table_type", V),
            ("is_insertable_into", V),
        ],
    ),
    (
        202,
        "information_schema",
        "columns",
        &[
            ("table_catalog", V),
            ("table_schema", V),
            ("table_name", V),
            ("column_name", V),
            ("ordinal_position", I),
            ("column_default", V),
            ("is_nullable", V),
            ("data_type", V),
            ("character_maximum_length", I),
            ("numeric_precision", I),
            ("numeric_scale", I),
            ("datetime_precision", I),
            ("udt_catalog", V),
            ("udt_schema", V),
            ("udt_name", V),
        ],
    ),
    (
        203,
        "information_schema",
        "views",
        &[
            ("table_catalog", V),
            ("table_schema", V),
            ("table_name", V),
            ("view_definition", V),
            ("check_option", V),
            ("is_updatable", V),
            ("is_insertable_into", V),
        ],
    ),
    (
        204,
        "information_schema",
        "table_constraints",
        &[
            ("constraint_catalog", V),
            ("constraint_schema", V),
            ("constraint_name", V),
            ("table_catalog", V),
            ("table_schema", V),
            ("table_name", V),
            ("constraint_type", V),
            ("is_deferrable", V),
            ("initially_deferred", V),
            ("enforced", V),
        ],
    ),
    (
        205,
        "information_schema",
        "key_column_usage",
        &[
            ("constraint_catalog", V),
            ("constraint_schema", V),
            ("constraint_name", V),
            ("table_catalog", V),
            ("table_schema", V),
            ("table_name", V),
            ("column_name", V),
            ("ordinal_position", I),
            ("position_in_unique_constraint", I),
        ],
    ),
];

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
    (1700, "numeric", "numeric", -1, "N", 1231),
    (2205, "regclass", "regclass", 4, "N", 2210),
    (2206, "regtype", "regtype", 4, "N", 2211),
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
    ("now", 0, 1114),
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

/// The rows of a `pg_catalog` or `information_schema` relation.
pub fn pg_rows(st: &MetaState, name: &str, id: TableId, session: &SessionInfo) -> Vec<Row> {
    let user = session.user.as_str();
    let db = session.database.as_str();
    let rels = all_relations(st);
    let user_rels = || rels.iter().filter(|(_, r)| r.kind != RelationKind::System);
    let by_kind = |k: RelationKind| {
        st.relations
            .values()
            .filter(move |r| r.desc.kind == k)
            .map(|r| r.desc.clone())
    };
    match (system_schema(id), name) {
        (_, "pg_namespace") => namespaces()
            .iter()
            .map(|(oid, n)| vec![int(*oid), text(*n), int(ROLE_OID), None])
            .collect(),
        (_, "pg_class") => {
            let mut rows = Vec::new();
            for (schema, r) in &rels {
                let visible = r.visible_columns().count();
                let index = index_oid(r);
                let row = vec![
                    int(relation_oid(r)),
                    text(r.name.as_str()),
                    int(namespace_oid(schema)),
                    int(0),
                    int(0),
                    int(ROLE_OID),
                    int(if r.kind == RelationKind::System { 0 } else { 2 }),
                    int(0),
                    int(0),
                    int(0),
                    Some(ScalarValue::Float32(crate::common::F64(-1.0))),
                    int(0),
                    int(0),
                    boolean(index.is_some()),
                    boolean(false),
                    text("p"),
                    text(relkind(schema, r)),
                    small(visible),
                    small(0),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                    boolean(true),
                    text("d"),
                    boolean(false),
                    int(0),
                    int(0),
                    int(0),
                    None,
                    None,
                    None,
                ];
                rows.push(row.clone());
                if let Some(index) = index {
                    let mut row = row;
                    row[0] = int(index);
                    row[1] = text(pk_name(r));
                    row[6] = int(403);
                    row[13] = boolean(false);
                    row[16] = text("i");
                    row[17] = small(r.pk.len());
                    rows.push(row);
                }
            }
            rows
        }
        (_, "pg_attribute") => {
            let mut rows = Vec::new();
            for (_, r) in &rels {
                let attribute = |relid: i64, num: usize, c: &ColumnDesc, not_null: bool| {
                    let ty = pg_type_of(c.data_type);
                    vec![
                        int(relid),
                        text(c.name.as_str()),
                        int(c.data_type.oid()),
                        int(-1),
                        small(ty.map_or(-1, |t| t.3)),
                        small(num),
                        int(0),
                        int(-1),
                        int(-1),
                        boolean(ty.is_some_and(|t| (1..=8).contains(&t.3))),
                        text(if ty.is_some_and(|t| t.3 == 8) {
                            "d"
                        } else {
                            "i"
                        }),
                        // PostgreSQL's typstorage: numeric is `main`, other
                        // variable-length types `extended`.
                        text(match c.data_type {
                            DataType::Decimal => "m",
                            _ if ty.is_some_and(|t| t.3 < 0) => "x",
                            _ => "p",
                        }),
                        text(""),
                        boolean(not_null),
                        boolean(false),
                        boolean(false),
                        text(""),
                        text(""),
                        boolean(false),
                        boolean(true),
                        int(0),
                        int(if c.data_type == DataType::Varchar {
                            100
                        } else {
                            0
                        }),
                        None,
                        None,
                        None,
                        None,
                    ]
                };
                for (num, (i, c)) in r.visible_columns().enumerate() {
                    let not_null = r.user_pk && r.pk.contains(&i);
                    rows.push(attribute(relation_oid(r), num + 1, c, not_null));
                }
                if let Some(index) = index_oid(r) {
                    for (num, i) in r.pk.iter().enumerate() {
                        if let Some(c) = r.columns.get(*i) {
                            rows.push(attribute(index, num + 1, c, false));
                        }
                    }
                }
            }
            rows
        }
        (_, "pg_type") => PG_TYPES
            .iter()
            .map(|(oid, name, _, len, cat, array)| {
                vec![
                    int(*oid),
                    text(*name),
                    int(PG_CATALOG_OID),
                    int(ROLE_OID),
                    small(*len),
                    boolean((1..=8).contains(len)),
                    text("b"),
                    text(*cat),
                    boolean(matches!(*name, "bool" | "float8" | "text" | "oid")),
                    boolean(true),
                    text(","),
                    int(0),
                    int(0),
                    int(*array),
                    text(format!("{name}in")),
                    text(format!("{name}out")),
                    text(format!("{name}recv")),
                    text(format!("{name}send")),
                    int(0),
                    int(-1),
                    int(0),
                    int(if *cat == "S" { 100 } else { 0 }),
                    boolean(false),
                    None,
                    None,
                ]
            })
            .collect(),
        (_, "pg_index") => user_rels()
            .filter_map(|(_, r)| {
                let index = index_oid(r)?;
                let n = r.pk.len();
                let key = r.pk.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>();
                Some(vec![
                    int(index),
                    int(relation_oid(r)),
                    small(n),
                    small(n),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(true),
                    boolean(false),
                    text(key.join(" ")),
                    text(vec!["0"; n].join(" ")),
                    text(vec!["0"; n].join(" ")),
                    text(vec!["0"; n].join(" ")),
                    None,
                    None,
                ])
            })
            .collect(),
        (_, "pg_constraint") => user_rels()
            .filter_map(|(_, r)| {
                let index = index_oid(r)?;
                let key = r.pk.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>();
                Some(vec![
                    int(index + 1),
                    text(pk_name(r)),
                    int(PUBLIC_OID),
                    text("p"),
                    boolean(false),
                    boolean(false),
                    boolean(true),
                    int(relation_oid(r)),
                    int(0),
                    int(index),
                    int(0),
                    int(0),
                    text(" "),
                    text(" "),
                    text(" "),
                    boolean(true),
                    int(0),
                    boolean(true),
                    text(format!("{{{}}}", key.join(","))),
                    None,
                    None,
                ])
            })
            .collect(),
        (_, "pg_database") => vec![vec![
            int(DATABASE_OID),
            text(db),
            int(ROLE_OID),
            int(6),
            text("c"),
            boolean(false),
            boolean(true),
            int(-1),
            int(0),
            int(0),
            int(1663),
            text("C"),
            text("C"),
            None,
            None,
            None,
        ]],
        (_, "pg_roles") => vec![vec![
            text(user),
            boolean(true),
            boolean(true),
            boolean(true),
            boolean(true),
            boolean(true),
            boolean(true),
            int(-1),
            text("********"),
            None,
            boolean(true),
            None,
            int(ROLE_OID),
        ]],
        (_, "pg_user") => vec![vec![
            text(user),
            int(ROLE_OID),
            boolean(true),
            boolean(true),
            boolean(true),
            boolean(true),
            text("********"),
            None,
            None,
        ]],
        (_, "pg_settings") => session
            .settings
            .iter()
            .map(|(k, v)| {
                let mut row: Row = vec![None; 17];
                row[0] = text(k.as_str());
                row[1] = text(v.as_str());
                row[6] = text("user");
                row[7] = text("string");
                row[8] = text("session");
                row[15] = None;
                row[16] = boolean(false);
                row
            })
            .collect(),
        (_, "pg_am") => vec![
            vec![
                int(2),
                text("heap"),
                text("heap_tableam_handler"),
                text("t"),
            ],
            vec![int(403), text("btree"), text("bthandler"), text("i")],
        ],
        (_, "pg_proc") => PG_PROCS
            .iter()
            .enumerate()
            .map(|(i, (name, nargs, ret))| {
                vec![
                    int(PROC_OID_BASE + i as i64),
                    text(*name),
                    int(PG_CATALOG_OID),
                    int(ROLE_OID),
                    int(12),
                    text("f"),
                    boolean(false),
                    small(*nargs),
                    int(*ret),
                    text(""),
                    text(*name),
                ]
            })
            .collect(),
        (_, "pg_tables") => by_kind(RelationKind::Table)
            .map(|r| {
                vec![
                    text("public"),
                    text(r.name.as_str()),
                    text(user),
                    None,
                    boolean(r.user_pk),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                ]
            })
            .collect(),
        (_, "pg_matviews") => by_kind(RelationKind::MaterializedView)
            .map(|r| {
                vec![
                    text("public"),
                    text(r.name.as_str()),
                    text(user),
                    None,
                    boolean(false),
                    boolean(true),
                    text(r.definition.clone().unwrap_or_default()),
                ]
            })
            .collect(),
        (_, "pg_tablespace") => vec![
            vec![int(1663), text("pg_default"), int(ROLE_OID)],
            vec![int(1664), text("pg_global"), int(ROLE_OID)],
        ],
        ("information_schema", "schemata") => namespaces()
            .iter()
            .map(|(_, n)| vec![text(db), text(*n), text(user)])
            .collect(),
        ("information_schema", "tables") => rels
            .iter()
            .map(|(schema, r)| {
                let ty = match relkind(schema, r) {
                    "r" if *schema == "public" => "BASE TABLE",
                    "r" => "SYSTEM TABLE",
                    "m" => "MATERIALIZED VIEW",
                    _ => "VIEW",
                };
                let insertable = r.kind == RelationKind::Table;
                vec![
                    text(db),
                    text(*schema),
                    text(r.name.as_str()),
                    text(ty),
                    text(if insertable { "YES" } else { "NO" }),
                ]
            })
            .collect(),
        ("information_schema", "columns") => {
            let mut rows = Vec::new();
            for (schema, r) in &rels {
                for (num, (i, c)) in r.visible_columns().enumerate() {
                    let t = c.data_type;
                    let (precision, scale) = match t {
                        DataType::Int16 => (int(16), int(0)),
                        DataType::Int32 => (int(32), int(0)),
                        DataType::Int64 => (int(64), int(0)),
                        DataType::Float32 => (int(24), None),
                        DataType::Float64 => (int(53), None),
                        _ => (None, None),
                    };
                    let not_null = r.user_pk && r.pk.contains(&i);
                    rows.push(vec![
                        text(db),
                        text(*schema),
                        text(r.name.as_str()),
                        text(c.name.as_str()),
                        int(num + 1),
                        None,
                        text(if not_null { "NO" } else { "YES" }),
                        text(t.pg_name()),
                        None,
                        precision,
                        scale,
                        if t == DataType::Timestamp {
                            int(6)
                        } else {
                            None
                        },
                        text(db),
                        text("pg_catalog"),
                        text(pg_type_of(t).map_or("", |p| p.1)),
                    ]);
                }
            }
            rows
        }
        ("information_schema", "table_constraints") => user_rels()
            .filter(|(_, r)| index_oid(r).is_some())
            .map(|(_, r)| {
                vec![
                    text(db),
                    text("public"),
                    text(pk_name(r)),
                    text(db),
                    text("public"),
                    text(r.name.as_str()),
                    text("PRIMARY KEY"),
                    text("NO"),
                    text("NO"),
                    text("YES"),
                ]
            })
            .collect(),
        ("information_schema", "key_column_usage") => user_rels()
            .filter(|(_, r)| index_oid(r).is_some())
            .flat_map(|(_, r)| {
                pk_columns(r)
                    .into_iter()
                    .enumerate()
                    .map(|(n, c)| {
                        vec![
                            text(db),
                            text("public"),
                            text(pk_name(r)),
                            text(db),
                            text("public"),
                            text(r.name.as_str()),
                            text(c),
                            int(n + 1),
                            None,
                        ]
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
        // pg_views, information_schema.views (ebbflow has no plain views
        // yet), pg_description, pg_attrdef, pg_inherits.
        _ => vec![],
    }
}
