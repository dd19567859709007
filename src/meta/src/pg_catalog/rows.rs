//! The rows of the `pg_catalog` and `information_schema` relations,
//! computed from meta's catalog on each read.

use super::*;

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
                    Some(ScalarValue::Float32(ebbflow_common::F64(-1.0))),
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
        // The session's user (OID 10, owner of everything), then the other
        // users of `CREATE USER`, all superusers (there are no privileges).
        (_, "pg_roles") => roles(st, user)
            .map(|(name, oid)| {
                vec![
                    text(name),
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
                    int(oid),
                ]
            })
            .collect(),
        (_, "pg_user") => roles(st, user)
            .map(|(name, oid)| {
                vec![
                    text(name),
                    int(oid),
                    boolean(true),
                    boolean(true),
                    boolean(true),
                    boolean(true),
                    text("********"),
                    None,
                    None,
                ]
            })
            .collect(),
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
        (_, "pg_views") => by_kind(RelationKind::View)
            .map(|r| {
                vec![
                    text("public"),
                    text(r.name.as_str()),
                    text(user),
                    text(format!(" {};", r.definition.clone().unwrap_or_default())),
                ]
            })
            .collect(),
        ("information_schema", "views") => by_kind(RelationKind::View)
            .map(|r| {
                vec![
                    text(db),
                    text("public"),
                    text(r.name.as_str()),
                    text(r.definition.clone().unwrap_or_default()),
                    text("NONE"),
                    text("NO"),
                    text("NO"),
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
                        if matches!(t, DataType::Timestamp | DataType::Timestamptz) {
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
        // pg_description, pg_attrdef, pg_inherits: always empty.
        _ => vec![],
    }
}

/// OIDs of users other than the session's (which is [`ROLE_OID`]).
const OTHER_ROLE_OID_BASE: i64 = 16_000;

/// `(name, oid)` of every role: the session's user first.
fn roles<'a>(
    st: &'a crate::service::MetaState,
    user: &'a str,
) -> impl Iterator<Item = (&'a str, i64)> + 'a {
    std::iter::once((user, i64::from(ROLE_OID))).chain(
        st.users
            .keys()
            .filter(move |u| u.as_str() != user)
            .enumerate()
            .map(|(i, u)| (u.as_str(), OTHER_ROLE_OID_BASE + i as i64)),
    )
}
