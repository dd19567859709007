//! The pgwire server against real clients: tokio-postgres for the simple and
//! extended protocols, and a raw socket for exact messages and bad clients.
//! A mock session answers a handful of canned statements.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use chrono::NaiveDate;
use rust_decimal::Decimal;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::{NoTls, SimpleQueryMessage};

use ebbflow::common::{DataType, Datum, ErrorKind, Field, Interval, ScalarValue};
use ebbflow::frontend::{FrontendError, Session, SessionFactory, StatementResult};
use ebbflow::sql::ParamContext;

// ------------------------------------------------------------ mock session

struct MockFactory;

impl SessionFactory for MockFactory {
    fn new_session(&self, user: &str, database: &str) -> Arc<dyn Session> {
        Arc::new(MockSession {
            user: user.to_owned(),
            database: database.to_owned(),
        })
    }
}

struct MockSession {
    user: String,
    database: String,
}

fn rows(fields: &[(&str, DataType)], rows: Vec<Vec<Datum>>, tag: &str) -> StatementResult {
    StatementResult::Rows {
        fields: fields.iter().map(|(n, t)| Field::new(*n, *t)).collect(),
        rows,
        tag: tag.to_owned(),
    }
}

fn command(tag: &str) -> StatementResult {
    StatementResult::Command {
        tag: tag.to_owned(),
    }
}

fn every_type_row() -> (Vec<(&'static str, DataType)>, Vec<Datum>) {
    let ts = NaiveDate::from_ymd_opt(2024, 2, 29)
        .unwrap()
        .and_hms_micro_opt(12, 34, 56, 789_000)
        .unwrap();
    let fields = vec![
        ("i2", DataType::Int16),
        ("i4", DataType::Int32),
        ("i8", DataType::Int64),
        ("f4", DataType::Float32),
        ("f8", DataType::Float64),
        ("n", DataType::Decimal),
        ("s", DataType::Varchar),
        ("b", DataType::Boolean),
        ("d", DataType::Date),
        ("ts", DataType::Timestamp),
        ("iv", DataType::Interval),
    ];
    let values = vec![
        Some(ScalarValue::Int16(-2)),
        Some(ScalarValue::Int32(-3)),
        Some(ScalarValue::Int64(1 << 40)),
        Some(ScalarValue::float32(1.5)),
        Some(ScalarValue::float64(-2.25)),
        Some(ScalarValue::decimal(
            Decimal::from_str("12345.678").unwrap(),
        )),
        Some(ScalarValue::varchar("héllo")),
        Some(ScalarValue::Boolean(true)),
        Some(ScalarValue::Date(
            NaiveDate::from_ymd_opt(2024, 2, 29).unwrap(),
        )),
        Some(ScalarValue::Timestamp(ts)),
        Some(ScalarValue::Interval(Interval::new(1, 2, 3_000_000))),
    ];
    (fields, values)
}

/// The canned statements of the simple protocol (and of the extended one,
/// except `echo`).
fn canned(session: &MockSession, sql: &str) -> Result<StatementResult, FrontendError> {
    let sql = sql.trim().to_ascii_lowercase();
    Ok(match sql.as_str() {
        "select 1" => rows(
            &[("one", DataType::Int32)],
            vec![vec![Some(ScalarValue::Int32(1))]],
            "SELECT 1",
        ),
        "show x" => rows(
            &[("x", DataType::Varchar)],
            vec![vec![Some(ScalarValue::varchar("on"))]],
            "SHOW",
        ),
        "whoami" => rows(
            &[("user", DataType::Varchar), ("database", DataType::Varchar)],
            vec![vec![
                Some(ScalarValue::varchar(session.user.as_str())),
                Some(ScalarValue::varchar(session.database.as_str())),
            ]],
            "SELECT 1",
        ),
        "nulls" => rows(
            &[
                ("a", DataType::Int32),
                ("b", DataType::Varchar),
                ("c", DataType::Float64),
            ],
            vec![vec![None, Some(ScalarValue::varchar("x")), None]],
            "SELECT 1",
        ),
        "many" => rows(
            &[("i", DataType::Int64)],
            (0..10).map(|i| vec![Some(ScalarValue::Int64(i))]).collect(),
            "SELECT 10",
        ),
        "values" => {
            let (fields, values) = every_type_row();
            rows(&fields, vec![values], "SELECT 1")
        }
        "create table t" => command("CREATE TABLE"),
        "insert" => command("INSERT 0 3"),
        "begin" | "start transaction" => command("BEGIN"),
        "commit" => command("COMMIT"),
        "fail" => {
            return Err(FrontendError::new(
                ErrorKind::UndefinedTable,
                "relation \"nope\" does not exist",
            )
            .with_detail("some detail")
            .with_hint("some hint"));
        }
        "fail_exec" => {
            return Err(FrontendError::new(
                ErrorKind::DivisionByZero,
                "division by zero",
            ))
        }
        "" => StatementResult::Empty,
        _ => {
            return Err(FrontendError::new(
                ErrorKind::SyntaxError,
                format!("syntax error at \"{sql}\""),
            ))
        }
    })
}

/// `echo t1 t2 ...` takes one parameter per type name (`any` lets the
/// client's declared type win, defaulting to varchar) and returns them.
/// Placeholders (`$1`) may follow, for clients that insist on them.
fn echo_types(sql: &str, declared: &[Option<DataType>]) -> Option<Vec<DataType>> {
    let mut words = sql.split_whitespace();
    if words.next() != Some("echo") {
        return None;
    }
    let types = words
        .filter(|w| !w.starts_with('$'))
        .enumerate()
        .map(|(i, w)| {
            let named = match w {
                "int2" => Some(DataType::Int16),
                "int4" => Some(DataType::Int32),
                "int8" => Some(DataType::Int64),
                "float4" => Some(DataType::Float32),
                "float8" => Some(DataType::Float64),
                "numeric" => Some(DataType::Decimal),
                "varchar" => Some(DataType::Varchar),
                "bool" => Some(DataType::Boolean),
                "date" => Some(DataType::Date),
                "timestamp" => Some(DataType::Timestamp),
                "interval" => Some(DataType::Interval),
                _ => None,
            };
            declared
                .get(i)
                .copied()
                .flatten()
                .or(named)
                .unwrap_or(DataType::Varchar)
        })
        .collect();
    Some(types)
}

#[async_trait]
impl Session for MockSession {
    async fn run_simple(&self, sql: &str) -> (Vec<StatementResult>, Option<FrontendError>) {
        let mut results = vec![];
        for stmt in sql.split(';').filter(|s| !s.trim().is_empty()) {
            match canned(self, stmt) {
                Ok(r) => results.push(r),
                Err(e) => return (results, Some(e)),
            }
        }
        (results, None)
    }

    async fn describe(
        &self,
        sql: &str,
        param_types: &[Option<DataType>],
    ) -> Result<(Vec<DataType>, Vec<Field>), FrontendError> {
        if let Some(types) = echo_types(sql, param_types) {
            let fields = (0..types.len())
                .map(|i| Field::new(format!("c{i}"), types[i]))
                .collect();
            return Ok((types, fields));
        }
        if sql.trim() == "fail_exec" {
            return Ok((vec![], vec![Field::new("x", DataType::Int32)]));
        }
        if sql.trim() == "setvar" {
            return Ok((vec![DataType::Varchar], vec![]));
        }
        match canned(self, sql)? {
            StatementResult::Rows { fields, .. } => Ok((vec![], fields)),
            _ => Ok((vec![], vec![])),
        }
    }

    async fn run_extended(
        &self,
        sql: &str,
        params: ParamContext,
    ) -> Result<StatementResult, FrontendError> {
        if let Some(types) = echo_types(sql, &params.types) {
            let values = params.values.unwrap_or_default();
            assert_eq!(values.len(), types.len());
            for (v, t) in values.iter().zip(&types) {
                if let Some(v) = v {
                    assert_eq!(v.data_type(), *t, "parameter decoded with the wrong type");
                }
            }
            let fields = (0..types.len())
                .map(|i| Field::new(format!("c{i}"), types[i]))
                .collect();
            return Ok(StatementResult::Rows {
                fields,
                rows: vec![values],
                tag: "SELECT 1".to_owned(),
            });
        }
        if sql.trim() == "setvar" {
            return Ok(command("SET"));
        }
        canned(self, sql)
    }
}

// ------------------------------------------------------------------ harness

struct TestServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<()>,
}

async fn start() -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let handle = tokio::spawn(ebbflow::pgwire::serve(
        listener,
        Arc::new(MockFactory),
        async move {
            let _ = stopped.await;
        },
    ));
    TestServer {
        addr,
        stop: Some(stop),
        handle,
    }
}

async fn connect(server: &TestServer) -> tokio_postgres::Client {
    let config = format!(
        "host=127.0.0.1 port={} user=alice dbname=dev",
        server.addr.port()
    );
    let (client, connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

fn simple_rows(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn completions(messages: &[SimpleQueryMessage]) -> Vec<u64> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect()
}

/// The raw binary bytes of a value, whatever its type.
#[derive(Debug, PartialEq)]
struct RawValue(Vec<u8>);

impl<'a> FromSql<'a> for RawValue {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

impl ToSql for RawValue {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.put_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

fn words(v: &[i16]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_be_bytes()).collect()
}

// ------------------------------------------------------------- simple query

#[tokio::test]
async fn simple_query_results_nulls_and_tags() {
    let server = start().await;
    let client = connect(&server).await;

    let msgs = client.simple_query("select 1").await.unwrap();
    assert_eq!(simple_rows(&msgs), vec![vec![Some("1".to_owned())]]);
    assert_eq!(completions(&msgs), vec![1]);

    let msgs = client.simple_query("nulls").await.unwrap();
    assert_eq!(
        simple_rows(&msgs),
        vec![vec![None, Some("x".to_owned()), None]]
    );

    let msgs = client
        .simple_query("create table t; insert; whoami")
        .await
        .unwrap();
    assert_eq!(completions(&msgs), vec![0, 3, 1]);
    assert_eq!(
        simple_rows(&msgs),
        vec![vec![Some("alice".to_owned()), Some("dev".to_owned())]]
    );

    let msgs = client.simple_query("values").await.unwrap();
    assert_eq!(
        simple_rows(&msgs)[0][..3],
        [
            Some("-2".to_owned()),
            Some("-3".to_owned()),
            Some((1i64 << 40).to_string())
        ]
    );

    // An empty query string is not an error.
    client.simple_query("").await.unwrap();
    client.simple_query(" ; ").await.unwrap();
}

#[tokio::test]
async fn simple_query_errors_carry_sqlstate_detail_hint() {
    let server = start().await;
    let client = connect(&server).await;

    let err = client.simple_query("fail").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNDEFINED_TABLE));
    let db = err.as_db_error().unwrap();
    assert_eq!(db.message(), "relation \"nope\" does not exist");
    assert_eq!(db.detail(), Some("some detail"));
    assert_eq!(db.hint(), Some("some hint"));
    assert_eq!(db.severity(), "ERROR");

    let err = client
        .simple_query("select 1; fail_exec")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::DIVISION_BY_ZERO));

    // The session carries on.
    let msgs = client.simple_query("select 1").await.unwrap();
    assert_eq!(completions(&msgs), vec![1]);
}

// ----------------------------------------------------------- extended query

#[tokio::test]
async fn prepared_statements_infer_and_decode_parameters() {
    let server = start().await;
    let client = connect(&server).await;

    let stmt = client
        .prepare("echo int2 int4 int8 float4 float8 varchar bool")
        .await
        .unwrap();
    assert_eq!(
        stmt.params(),
        &[
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::VARCHAR,
            Type::BOOL
        ]
    );
    assert_eq!(stmt.columns().len(), 7);
    assert_eq!(stmt.columns()[2].type_(), &Type::INT8);

    // tokio-postgres sends binary parameters and asks for binary results.
    let row = client
        .query_one(
            &stmt,
            &[
                &7i16,
                &-42i32,
                &(1i64 << 50),
                &1.25f32,
                &-0.5f64,
                &"héllo",
                &true,
            ],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i16>(0), 7);
    assert_eq!(row.get::<_, i32>(1), -42);
    assert_eq!(row.get::<_, i64>(2), 1 << 50);
    assert_eq!(row.get::<_, f32>(3), 1.25);
    assert_eq!(row.get::<_, f64>(4), -0.5);
    assert_eq!(row.get::<_, String>(5), "héllo");
    assert!(row.get::<_, bool>(6));

    // NULL parameters come back as NULL.
    let row = client
        .query_one(
            &stmt,
            &[
                &None::<i16>,
                &None::<i32>,
                &None::<i64>,
                &None::<f32>,
                &None::<f64>,
                &None::<String>,
                &None::<bool>,
            ],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i32>>(1), None);
    assert_eq!(row.get::<_, Option<String>>(5), None);

    // Declared types win over the statement's own.
    let stmt = client
        .prepare_typed("echo any any", &[Type::INT8, Type::TEXT])
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::INT8, Type::VARCHAR]);
    let row = client.query_one(&stmt, &[&5i64, &"x"]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 5);
    assert_eq!(row.get::<_, &str>(1), "x");
}

#[tokio::test]
async fn binary_numeric_date_timestamp_interval() {
    let server = start().await;
    let client = connect(&server).await;

    // Results in binary, checked byte for byte against PostgreSQL's format.
    let row = client.query_one("values", &[]).await.unwrap();
    assert_eq!(row.get::<_, f32>(3), 1.5);
    assert_eq!(row.get::<_, f64>(4), -2.25);
    assert_eq!(row.get::<_, &str>(6), "héllo");
    let numeric = row.get::<_, RawValue>(5);
    assert_eq!(numeric.0, words(&[3, 1, 0, 3, 1, 2345, 6780]));
    // 2024-02-29 is 8825 days after 2000-01-01.
    assert_eq!(row.get::<_, RawValue>(8).0, 8825i32.to_be_bytes());
    let micros = 8825i64 * 86_400_000_000 + (12 * 3600 + 34 * 60 + 56) * 1_000_000 + 789_000;
    assert_eq!(row.get::<_, RawValue>(9).0, micros.to_be_bytes());
    let mut interval = 3_000_000i64.to_be_bytes().to_vec();
    interval.extend(2i32.to_be_bytes());
    interval.extend(1i32.to_be_bytes());
    assert_eq!(row.get::<_, RawValue>(10).0, interval);
    let types: Vec<_> = row.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types[5], Type::NUMERIC);
    assert_eq!(types[9], Type::TIMESTAMP);

    // The same values as binary parameters round-trip.
    let stmt = client
        .prepare("echo numeric date timestamp interval")
        .await
        .unwrap();
    let params = [
        RawValue(words(&[2, 0, 0x4000, 2, 1, 1000])), // -1.10
        RawValue(8825i32.to_be_bytes().to_vec()),
        RawValue(micros.to_be_bytes().to_vec()),
        RawValue(interval.clone()),
    ];
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
    let row = client.query_one(&stmt, &refs).await.unwrap();
    for (i, p) in params.iter().enumerate() {
        assert_eq!(&row.get::<_, RawValue>(i), p);
    }
}

#[tokio::test]
async fn errors_in_the_extended_protocol_leave_the_connection_usable() {
    let server = start().await;
    let client = connect(&server).await;

    // At Parse.
    let err = client.prepare("fail").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNDEFINED_TABLE));
    assert_eq!(err.as_db_error().unwrap().hint(), Some("some hint"));
    assert_eq!(
        client
            .query_one("select 1", &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        1
    );

    // At Execute.
    let err = client.query("fail_exec", &[]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::DIVISION_BY_ZERO));
    assert_eq!(
        client
            .query_one("select 1", &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        1
    );

    // At Bind: bad binary bytes for an int4 (integers of 2, 4 or 8 bytes
    // are accepted, whatever the declared width).
    let stmt = client.prepare("echo int4").await.unwrap();
    let row = client
        .query_one(&stmt, &[&RawValue(vec![1, 2])])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 258);
    let err = client
        .query(&stmt, &[&RawValue(vec![1, 2, 3])])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::INVALID_BINARY_REPRESENTATION));
    let row = client.query_one(&stmt, &[&9i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 9);

    // Commands through the extended protocol report their row counts.
    assert_eq!(client.execute("insert", &[]).await.unwrap(), 3);
    assert_eq!(client.execute("create table t", &[]).await.unwrap(), 0);
}

#[tokio::test]
async fn portals_fetch_in_batches() {
    let server = start().await;
    let mut client = connect(&server).await;
    let tx = client.transaction().await.unwrap();
    let stmt = tx.prepare("many").await.unwrap();
    let portal = tx.bind(&stmt, &[]).await.unwrap();
    let mut seen = vec![];
    loop {
        let batch = tx.query_portal(&portal, 4).await.unwrap();
        if batch.is_empty() {
            break;
        }
        seen.extend(batch.iter().map(|r| r.get::<_, i64>(0)));
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn twenty_concurrent_connections() {
    let server = start().await;
    let mut tasks = vec![];
    for i in 0..20i32 {
        let addr = server.addr;
        tasks.push(tokio::spawn(async move {
            let config = format!("host=127.0.0.1 port={} user=u{i}", addr.port());
            let (client, connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
            tokio::spawn(connection);
            let stmt = client.prepare("echo int4").await.unwrap();
            for j in 0..10 {
                let row = client.query_one(&stmt, &[&(i * 100 + j)]).await.unwrap();
                assert_eq!(row.get::<_, i32>(0), i * 100 + j);
            }
            // The database defaults to the user name.
            let msgs = client.simple_query("whoami").await.unwrap();
            let user = format!("u{i}");
            assert_eq!(
                simple_rows(&msgs),
                vec![vec![Some(user.clone()), Some(user)]]
            );
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

// ------------------------------------------------------------ raw protocol

#[path = "pgwire/raw.rs"]
mod raw;
use raw::{bind_msg, cstr, execute_msg, parse_msg, RawClient};

#[tokio::test]
async fn exact_tags_and_message_sequences() {
    let server = start().await;
    let mut c = RawClient::connect(server.addr).await;

    assert_eq!(c.query("show x").await, ["T", "D", "C SHOW", "Z"]);
    assert_eq!(c.query("insert").await, ["C INSERT 0 3", "Z"]);
    assert_eq!(c.query("").await, ["I", "Z"]);
    assert_eq!(
        c.query("create table t; many; fail; select 1").await,
        [
            vec!["C CREATE TABLE", "T"],
            vec!["D"; 10],
            vec!["C SELECT 10", "E 42P01", "Z"]
        ]
        .concat()
    );

    // Describe statement of a command with a parameter: NoData, not an empty
    // RowDescription.
    c.send(b'P', &parse_msg("s1", "setvar", &[])).await;
    c.send(b'D', &[b"S".as_slice(), &cstr("s1")].concat()).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["1", "t", "n", "Z"]);
    c.send(b'P', &parse_msg("", "insert", &[])).await;
    c.send(b'D', &[b"S".as_slice(), &cstr("")].concat()).await;
    c.send(b'B', &bind_msg("", "", &[], &[])).await;
    c.send(b'D', &[b"P".as_slice(), &cstr("")].concat()).await;
    c.send(b'E', &execute_msg("", 0)).await;
    c.send(b'S', &[]).await;
    assert_eq!(
        c.exchange().await,
        ["1", "t", "n", "2", "n", "C INSERT 0 3", "Z"]
    );

    // Row limits: PortalSuspended, then the rest.
    c.send(b'P', &parse_msg("", "many", &[])).await;
    c.send(b'B', &bind_msg("p", "", &[], &[1])).await;
    c.send(b'E', &execute_msg("p", 7)).await;
    c.send(b'E', &execute_msg("p", 7)).await;
    c.send(b'S', &[]).await;
    assert_eq!(
        c.exchange().await,
        [
            vec!["1", "2"],
            vec!["D"; 7],
            vec!["s"],
            vec!["D"; 3],
            vec!["C SELECT 3", "Z"]
        ]
        .concat()
    );

    // Errors skip to Sync: the Execute after a failed Bind is discarded.
    c.send(b'P', &parse_msg("", "echo int4", &[])).await;
    c.send(b'B', &bind_msg("", "", &[(0, Some(b"abc"))], &[]))
        .await;
    c.send(b'E', &execute_msg("", 0)).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["1", "E 22P02", "Z"]);
    // Wrong parameter count, unknown statement, mismatched result formats.
    c.send(b'B', &bind_msg("", "s1", &[], &[])).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["E 08P01", "Z"]);
    c.send(b'B', &bind_msg("", "nope", &[], &[])).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["E 26000", "Z"]);
    c.send(b'P', &parse_msg("", "values", &[])).await;
    c.send(b'B', &bind_msg("", "", &[], &[0, 1])).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["1", "E 08P01", "Z"]);
    // An unsupported declared parameter type (600: point).
    c.send(b'P', &parse_msg("", "echo any", &[600])).await;
    c.send(b'S', &[]).await;
    assert_eq!(c.exchange().await, ["E 0A000", "Z"]);
    // A text parameter, and NULL.
    c.send(b'P', &parse_msg("", "echo int8 varchar", &[])).await;
    c.send(
        b'B',
        &bind_msg("", "", &[(0, Some(b" 42 ")), (0, None)], &[]),
    )
    .await;
    c.send(b'E', &execute_msg("", 0)).await;
    c.send(b'S', &[]).await;
    let msgs = c.until_ready().await;
    let row = &msgs.iter().find(|(t, _)| *t == b'D').unwrap().1;
    assert_eq!(
        row,
        &[&[0, 2, 0, 0, 0, 2][..], b"42", &(-1i32).to_be_bytes()].concat()
    );

    assert_eq!(c.query("select 1").await, ["T", "D", "C SELECT 1", "Z"]);
    c.send(b'X', &[]).await;
}

#[tokio::test]
async fn bad_clients_do_not_take_the_server_down() {
    let server = start().await;

    // Garbage instead of a startup packet.
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    drop(s);

    // A truncated Bind after a valid startup.
    // (Writes may fail once the server has hung up: ignore them.)
    let mut c = RawClient::connect(server.addr).await;
    let _ = c.socket.write_all(&[b'B', 0, 0, 0, 7, 0, 0, 0xff]).await;
    drop(c);

    // An unknown message type, then a connection dropped mid-message.
    let mut c = RawClient::connect(server.addr).await;
    let _ = c.socket.write_all(&[b'!', 0, 0, 0, 4]).await;
    let _ = c.socket.write_all(&[b'Q', 0, 0, 1, 0, b's']).await;
    drop(c);

    // Disconnect in the middle of an extended-protocol exchange.
    let mut c = RawClient::connect(server.addr).await;
    c.send(b'P', &parse_msg("", "many", &[])).await;
    c.send(b'B', &bind_msg("", "", &[], &[])).await;
    drop(c);

    let client = connect(&server).await;
    let msgs = client.simple_query("select 1").await.unwrap();
    assert_eq!(completions(&msgs), vec![1]);
}

#[tokio::test]
async fn shutdown_stops_accepting() {
    let mut server = start().await;
    let client = connect(&server).await;
    server.stop.take().unwrap().send(()).unwrap();
    (&mut server.handle).await.unwrap();
    assert!(TcpStream::connect(server.addr).await.is_err());
    // Open connections live on.
    let msgs = client.simple_query("select 1").await.unwrap();
    assert_eq!(completions(&msgs), vec![1]);
}
