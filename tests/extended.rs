//! The extended query protocol through tokio-postgres: prepared statements
//! with parameters, result column type OIDs, binary results, errors with
//! SQLSTATE — what drivers other than psql use (issue 2, point 2).

mod common;

use tokio_postgres::types::Type;

use common::{describe_pg_error, EbbflowServer, ServerOptions};

async fn body(conn_str: String, is_postgres: bool) -> Result<(), String> {
    let err = |e: tokio_postgres::Error| describe_pg_error(&e);
    let client = common::connect(&conn_str).await.map_err(err)?;
    let flush = || async {
        if is_postgres {
            Ok(())
        } else {
            client.batch_execute("FLUSH").await.map_err(err)
        }
    };

    client
        .batch_execute(
            "CREATE TABLE items (id int PRIMARY KEY, name varchar, qty bigint, ok boolean, \
             price numeric, w double precision, d date, ts timestamp, iv interval, s smallint, r real)",
        )
        .await
        .map_err(err)?;

    // Parameters with declared types.
    let insert = client
        .prepare_typed(
            "INSERT INTO items (id, name, qty, ok) VALUES ($1, $2, $3, $4)",
            &[Type::INT4, Type::VARCHAR, Type::INT8, Type::BOOL],
        )
        .await
        .map_err(err)?;
    let mut inserted = 0;
    for (id, name, qty, ok) in [
        (1i32, "one", 10i64, true),
        (2, "two", 20, false),
        (3, "three", 30, true),
    ] {
        inserted += client
            .execute(&insert, &[&id, &name, &qty, &ok])
            .await
            .map_err(err)?;
    }
    assert_eq!(inserted, 3, "rows reported by three prepared INSERTs");

    // Parameters whose types the server infers.
    let n = client
        .execute(
            "INSERT INTO items (id, name, qty, ok) VALUES ($1, $2, $3, $4)",
            &[&4i32, &"four", &40i64, &Option::<bool>::None],
        )
        .await
        .map_err(err)?;
    assert_eq!(n, 1);
    client
        .batch_execute(
            "INSERT INTO items VALUES (5, NULL, NULL, NULL, 1.50, 2.5, '2024-01-02', \
             '2024-01-02 03:04:05', '1 day', 7, 0.5)",
        )
        .await
        .map_err(err)?;
    flush().await?;

    // Result column types are PostgreSQL's built-in OIDs.
    let stmt = client
        .prepare("SELECT id, name, qty, ok, price, w, d, ts, iv, s, r FROM items WHERE id = $1")
        .await
        .map_err(err)?;
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    let expected = vec![
        Type::INT4,
        Type::VARCHAR,
        Type::INT8,
        Type::BOOL,
        Type::NUMERIC,
        Type::FLOAT8,
        Type::DATE,
        Type::TIMESTAMP,
        Type::INTERVAL,
        Type::INT2,
        Type::FLOAT4,
    ];
    assert_eq!(types, expected, "result column types");
    assert_eq!(stmt.params(), &[Type::INT4], "inferred parameter type");
    let names: Vec<&str> = stmt.columns().iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["id", "name", "qty", "ok", "price", "w", "d", "ts", "iv", "s", "r"]
    );

    // Binary results decode to the right values.
    let row = client.query_one(&stmt, &[&5i32]).await.map_err(err)?;
    assert_eq!(row.get::<_, i32>(0), 5);
    assert_eq!(row.get::<_, Option<String>>(1), None);
    assert_eq!(row.get::<_, Option<i64>>(2), None);
    assert_eq!(row.get::<_, Option<bool>>(3), None);
    assert_eq!(row.get::<_, f64>(5), 2.5);
    assert_eq!(row.get::<_, i16>(9), 7);
    assert_eq!(row.get::<_, f32>(10), 0.5);

    let rows = client
        .query(
            "SELECT id, name, qty, ok FROM items WHERE qty >= $1 ORDER BY id",
            &[&20i64],
        )
        .await
        .map_err(err)?;
    let got: Vec<(i32, String, i64, Option<bool>)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, "two".to_string(), 20, Some(false)),
            (3, "three".to_string(), 30, Some(true)),
            (4, "four".to_string(), 40, None),
        ]
    );

    // Text of numeric/temporal values, through a cast to varchar.
    let row = client
        .query_one(
            "SELECT price::varchar, d::varchar, ts::varchar, iv::varchar FROM items WHERE id = $1",
            &[&5i32],
        )
        .await
        .map_err(err)?;
    let texts: Vec<String> = (0..4).map(|i| row.get::<_, String>(i)).collect();
    assert_eq!(
        texts,
        ["1.50", "2024-01-02", "2024-01-02 03:04:05", "1 day"]
    );

    // An MV read through a prepared statement.
    client
        .batch_execute(
            "CREATE MATERIALIZED VIEW by_ok AS SELECT ok, count(*) AS n, sum(qty) AS total FROM items GROUP BY ok",
        )
        .await
        .map_err(err)?;
    flush().await?;
    let row = client
        .query_one("SELECT n, total FROM by_ok WHERE ok = $1", &[&true])
        .await
        .map_err(err)?;
    assert_eq!(row.get::<_, i64>(0), 2);
    let total_text: String = client
        .query_one("SELECT total::varchar FROM by_ok WHERE ok = $1", &[&true])
        .await
        .map_err(err)?
        .get(0);
    assert_eq!(total_text, "40");

    // Errors carry their SQLSTATE through the extended protocol, and the
    // session goes on.
    let e = client
        .prepare("SELECT * FROM no_such_table")
        .await
        .expect_err("unknown table must fail");
    assert_eq!(
        e.code().map(|c| c.code()),
        Some("42P01"),
        "{}",
        describe_pg_error(&e)
    );
    let e = client
        .query("SELECT 1 / $1", &[&0i32])
        .await
        .expect_err("division by zero must fail");
    assert_eq!(
        e.code().map(|c| c.code()),
        Some("22012"),
        "{}",
        describe_pg_error(&e)
    );
    let one: i32 = client
        .query_one("SELECT $1::int + 0", &[&1i32])
        .await
        .map_err(err)?
        .get(0);
    assert_eq!(one, 1);
    Ok(())
}

#[test]
fn extended_protocol() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // `EXT_TARGET=<conn string>` runs the same checks against an empty
    // PostgreSQL database instead (FLUSH skipped), to check the test itself.
    let (server, conn_str) = match std::env::var("EXT_TARGET") {
        Ok(url) => (None, url),
        Err(_) => {
            let server = EbbflowServer::start(&ServerOptions::default())
                .unwrap_or_else(|e| panic!("ebbflow did not start: {e}"));
            let conn = server.conn_str();
            (Some(server), conn)
        }
    };
    let is_postgres = server.is_none();
    let result = rt.block_on(body(conn_str, is_postgres));
    let log = server.as_ref().map(|s| s.log.tail(30)).unwrap_or_default();
    drop(server);
    if let Err(e) = result {
        panic!("{e}\n--- last server log lines ---\n{log}");
    }
}
