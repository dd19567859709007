//! `/metrics` scraped while DML and a materialized view keep the server
//! busy, each scrape parsed strictly as Prometheus' text format (every
//! line a comment, a `# HELP`/`# TYPE` line or a well-formed sample).

mod common;

use std::collections::HashMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_postgres::NoTls;

use common::{free_port, EbbflowServer, ServerOptions};

/// One sample: metric name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The text exposition format (version 0.0.4), strictly.
fn parse(text: &str) -> Result<(Vec<Sample>, HashMap<String, String>), String> {
    let mut samples = Vec::new();
    let mut types = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let words: Vec<&str> = rest.trim_start().splitn(3, ' ').collect();
            match words.as_slice() {
                ["HELP", name, _] | ["HELP", name] if is_name(name) => {}
                ["TYPE", name, ty] if is_name(name) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(ty) {
                        return Err(bad("unknown type"));
                    }
                    if types.insert(name.to_string(), ty.to_string()).is_some() {
                        return Err(bad("second TYPE line"));
                    }
                }
                ["HELP" | "TYPE", ..] => return Err(bad("malformed HELP/TYPE")),
                _ => {}
            }
            continue;
        }
        let (name_labels, value) = line.rsplit_once(' ').ok_or_else(|| bad("no value"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().map_err(|_| bad("bad value"))?,
        };
        let (name, labels) = match name_labels.split_once('{') {
            None => (name_labels, Vec::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .ok_or_else(|| bad("unclosed labels"))?;
                let mut labels = Vec::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (k, after) = rest.split_once("=\"").ok_or_else(|| bad("bad label"))?;
                    if !is_name(k) {
                        return Err(bad("bad label name"));
                    }
                    let mut v = String::new();
                    let mut chars = after.char_indices();
                    let end = loop {
                        match chars.next() {
                            Some((_, '\\')) => match chars.next() {
                                Some((_, 'n')) => v.push('\n'),
                                Some((_, c @ ('\\' | '"'))) => v.push(c),
                                _ => return Err(bad("bad escape")),
                            },
                            Some((i, '"')) => break i,
                            Some((_, c)) => v.push(c),
                            None => return Err(bad("unterminated label value")),
                        }
                    };
                    labels.push((k.to_owned(), v));
                    rest = &after[end + 1..];
                    rest = rest.strip_prefix(',').unwrap_or(rest);
                }
                (name, labels)
            }
        };
        if !is_name(name) {
            return Err(bad("bad metric name"));
        }
        samples.push((name.to_owned(), labels, value));
    }
    Ok((samples, types))
}

async fn scrape(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("response");
    let text = String::from_utf8(out).expect("utf-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("http response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

fn value(samples: &[Sample], name: &str) -> Option<f64> {
    samples.iter().find(|s| s.0 == name).map(|s| s.2)
}

fn sum(samples: &[Sample], name: &str) -> f64 {
    samples.iter().filter(|s| s.0 == name).map(|s| s.2).sum()
}

#[test]
fn metrics_under_load_parse_as_prometheus_text() {
    let metrics_port = free_port();
    let opts = ServerOptions {
        args: vec![
            "--metrics-listen".into(),
            format!("127.0.0.1:{metrics_port}"),
        ],
        ..ServerOptions::default()
    };
    let server = EbbflowServer::start(&opts).expect("server starts");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let config = format!("host=127.0.0.1 port={} user=root dbname=dev", server.port);
        let (c, conn) = tokio_postgres::connect(&config, NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        c.batch_execute(
            "create table t (k int primary key, v int);
             create materialized view m as select v, count(*) as n from t group by v",
        )
        .await
        .expect("setup");
        let load = tokio::spawn(async move {
            for i in 0..200 {
                c.execute("insert into t values ($1, $2)", &[&i, &(i % 7)])
                    .await
                    .expect("insert");
            }
            c.batch_execute("flush").await.expect("flush");
            c
        });

        let mut epochs = Vec::new();
        let mut sessions_seen = 0.0f64;
        let mut last = Vec::new();
        for _ in 0..6 {
            let body = scrape(metrics_port).await;
            let (samples, types) = parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));
            assert_eq!(
                types
                    .get("ebbflow_barrier_latency_seconds")
                    .map(String::as_str),
                Some("histogram")
            );
            assert_eq!(
                types.get("ebbflow_committed_epoch").map(String::as_str),
                Some("gauge")
            );
            epochs.push(value(&samples, "ebbflow_committed_epoch").unwrap_or(0.0));
            sessions_seen = sessions_seen.max(value(&samples, "ebbflow_sessions").unwrap_or(0.0));
            last = samples;
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let client = load.await.expect("load");
        client
            .batch_execute("alter materialized view m set parallelism = 1")
            .await
            .expect("scale");
        let body = scrape(metrics_port).await;
        let (samples, _) = parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));

        assert!(
            epochs.windows(2).all(|w| w[0] <= w[1]),
            "epochs went back: {epochs:?}"
        );
        assert!(
            epochs.last() > epochs.first(),
            "no epoch committed while scraping: {epochs:?}"
        );
        assert!(sessions_seen >= 1.0, "no session counted");
        assert!(value(&samples, "ebbflow_barrier_latency_seconds_count").unwrap_or(0.0) > 0.0);
        assert!(
            samples
                .iter()
                .any(|s| s.0 == "ebbflow_barrier_latency_seconds_bucket"
                    && s.1.iter().any(|(k, v)| k == "le" && v == "+Inf")),
            "no +Inf bucket"
        );
        // 200 rows went into the table's fragment and on into the MV's.
        assert!(
            sum(&samples, "ebbflow_fragment_rows_in_total") >= 400.0,
            "{body}"
        );
        assert!(
            sum(&samples, "ebbflow_fragment_rows_out_total") >= 200.0,
            "{body}"
        );
        assert!(samples
            .iter()
            .any(|s| s.0 == "ebbflow_backpressure_wait_seconds_total"));
        let actors: Vec<&Sample> = samples.iter().filter(|s| s.0 == "ebbflow_actors").collect();
        assert_eq!(actors.len(), 2, "one gauge per compute node: {actors:?}");
        assert!(actors.iter().map(|s| s.2).sum::<f64>() > 0.0);
        assert!(value(&samples, "ebbflow_scale_pause_seconds_total").is_some());
        // The MV's aggregation holds at most its 7 groups (an actor that
        // gains vnodes at the scale reads their groups on a miss).
        let groups = value(&samples, "ebbflow_agg_cache_groups").expect("agg groups gauge");
        assert!((0.0..=7.0).contains(&groups), "{groups} groups held");
        let bytes = value(&samples, "ebbflow_agg_cache_bytes").expect("agg bytes gauge");
        assert!(
            bytes >= 0.0 && (groups == 0.0 || bytes > 0.0),
            "{bytes} bytes for {groups} groups"
        );
        // Committed epochs' files are in the block cache. The gauge is
        // set at each committed version and a compaction can empty the
        // cache of the files it replaced: a read fills it again, and the
        // next version shows it (within 10 s).
        let mut cache_body = body.clone();
        for _ in 0..40 {
            let (now, _) = parse(&cache_body).unwrap_or_else(|e| panic!("{e}\n{cache_body}"));
            if value(&now, "ebbflow_store_cache_bytes").unwrap_or(0.0) > 0.0 {
                break;
            }
            client
                .batch_execute("select count(*) from m; flush")
                .await
                .expect("read and flush");
            tokio::time::sleep(Duration::from_millis(250)).await;
            cache_body = scrape(metrics_port).await;
        }
        let (now, _) = parse(&cache_body).unwrap_or_else(|e| panic!("{e}\n{cache_body}"));
        assert!(
            value(&now, "ebbflow_store_cache_bytes").unwrap_or(0.0) > 0.0,
            "{cache_body}"
        );
        assert!(
            sum(&samples, "ebbflow_scale_operations_total") >= 1.0,
            "the scale is not counted: {body}"
        );
        assert!(!last.is_empty());
    });
}
