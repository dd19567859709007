//! Watermarks over a long generated stream, with the jobs scaled as it
//! runs.
//!
//! A `nexmark` bid source declared with `WATERMARK FOR date_time AS
//! date_time - INTERVAL '2' SECOND` (a bounded event count: the same events
//! on every run, 100 µs of event time apart) feeds three MVs of one-second
//! tumbling windows: `closed` (per window, `EMIT ON WINDOW CLOSE`), `open`
//! (the same, emitting every change) and `per_auction` (per auction and
//! window, `EMIT ON WINDOW CLOSE`: many groups per window), and a window
//! join `joined` of two per-auction-and-window aggregations on auction and
//! window (checked against `pairs`, the same figures in one aggregation).
//! While the
//! events flow, random `ALTER MATERIALIZED VIEW … SET PARALLELISM` and
//! `ALTER SOURCE … SET PARALLELISM` move the jobs around, and the process's
//! `ebbflow_agg_cache_groups` gauge (every aggregation group in memory,
//! which is every stored group) and `ebbflow_join_cache_rows` are sampled
//! from `/metrics`.
//!
//! Checked at the end, once every bid has been counted:
//! - state stayed flat: the most groups held at once is a small fraction
//!   of the per-auction groups the run made (each one held for a while and
//!   dropped when its window closed), and the series is printed;
//! - `closed` holds exactly the windows of `open` that the final watermark
//!   closed, with the same counts and sums, each once;
//! - `per_auction`'s counts add up, per closed window, to `closed`'s;
//! - `joined` equals `pairs`, and the join held a small fraction of its
//!   rows at once.
//!
//! Environment: `WATERMARK_EVENTS` (events of the stream, 400000: 40 s of
//! event time), `WATERMARK_SEED` (the scale operations, 1),
//! `WATERMARK_TIMEOUT_SECS` (300).

mod common;

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_postgres::{Client, NoTls};

use common::{free_port, EbbflowServer, ServerOptions};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The value of gauge `name` in a `/metrics` scrape.
async fn gauge(port: u16, name: &str) -> f64 {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to /metrics");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("request");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("response");
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum()
}

async fn one_i64(c: &Client, sql: &str) -> i64 {
    let row = c
        .query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.get::<_, Option<i64>>(0).unwrap_or(0)
}

/// A small deterministic generator for the scale operations.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn windows_close_once_and_state_stays_flat_while_jobs_scale() {
    let events = env_u64("WATERMARK_EVENTS", 400_000);
    let seed = env_u64("WATERMARK_SEED", 1);
    let timeout = Duration::from_secs(env_u64("WATERMARK_TIMEOUT_SECS", 300));
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
        // 46 of every 50 events are bids.
        let bids = (events / 50 * 46 + (events % 50).saturating_sub(4)) as i64;
        c.batch_execute(&format!(
            "CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, \
               url VARCHAR, date_time TIMESTAMP, extra VARCHAR, \
               WATERMARK FOR date_time AS date_time - INTERVAL '2' SECOND) \
             WITH (connector = 'nexmark', nexmark.table.type = 'Bid', \
               nexmark.event.num = '{events}', nexmark.split.num = '4', \
               nexmark.base.time = '1700000000000');
             CREATE MATERIALIZED VIEW closed AS
               SELECT window_start, count(*) AS n, sum(price) AS s
               FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
               GROUP BY window_start EMIT ON WINDOW CLOSE;
             CREATE MATERIALIZED VIEW open AS
               SELECT window_start, count(*) AS n, sum(price) AS s
               FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
               GROUP BY window_start;
             CREATE MATERIALIZED VIEW per_auction AS
               SELECT auction, window_start, count(*) AS n
               FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
               GROUP BY auction, window_start EMIT ON WINDOW CLOSE;
             CREATE MATERIALIZED VIEW pairs AS
               SELECT auction, window_start, count(*) AS n, max(price) AS top
               FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
               GROUP BY auction, window_start;
             CREATE MATERIALIZED VIEW joined AS
               SELECT c.auction, c.window_start, c.n, m.top
               FROM (SELECT auction, window_start, count(*) AS n
                     FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
                     GROUP BY auction, window_start) c
               JOIN (SELECT auction, window_start, max(price) AS top
                     FROM TUMBLE(bid, date_time, INTERVAL '1' SECOND)
                     GROUP BY auction, window_start) m
               ON c.auction = m.auction AND c.window_start = m.window_start;"
        ))
        .await
        .expect("setup");

        let started = Instant::now();
        let mut rng = Lcg(seed);
        let mut samples: Vec<(f64, i64, i64)> = Vec::new();
        let mut join_samples: Vec<f64> = Vec::new();
        let mut scales = 0;
        loop {
            if started.elapsed() > timeout {
                let progress: Vec<String> = c
                    .query("SELECT job, split_id, consumed, done FROM rw_source_progress", &[])
                    .await
                    .map(|rows| {
                        rows.iter()
                            .map(|r| {
                                format!(
                                    "{} {} {} {}",
                                    r.get::<_, String>(0),
                                    r.get::<_, i32>(1),
                                    r.get::<_, i64>(2),
                                    r.get::<_, bool>(3)
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                panic!(
                    "not every bid was counted in {timeout:?}: {samples:?}\nprogress: {progress:?}\n{}",
                    server.log.tail(40)
                );
            }
            let groups = gauge(metrics_port, "ebbflow_agg_cache_groups").await;
            let join_rows = gauge(metrics_port, "ebbflow_join_cache_rows").await;
            let counted = one_i64(&c, "SELECT sum(n)::bigint FROM open").await;
            let emitted = one_i64(&c, "SELECT count(*) FROM per_auction").await;
            samples.push((groups, counted, emitted));
            join_samples.push(join_rows);
            let reading = one_i64(&c, "SELECT count(*) FROM rw_source_progress WHERE NOT done").await;
            if counted >= bids && reading == 0 {
                break;
            }
            let sql = match rng.next(5) {
                4 => format!(
                    "ALTER MATERIALIZED VIEW joined SET PARALLELISM = {}",
                    1 + rng.next(4)
                ),
                0 => format!(
                    "ALTER MATERIALIZED VIEW closed SET PARALLELISM = {}",
                    1 + rng.next(4)
                ),
                1 => format!(
                    "ALTER MATERIALIZED VIEW per_auction SET PARALLELISM = {}",
                    1 + rng.next(4)
                ),
                2 => format!("ALTER SOURCE bid SET PARALLELISM = {}", 1 + rng.next(4)),
                _ => "ALTER MATERIALIZED VIEW open SET PARALLELISM = ADAPTIVE".to_string(),
            };
            c.batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            scales += 1;
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        assert_eq!(
            one_i64(&c, "SELECT sum(n)::bigint FROM open").await,
            bids,
            "no bid is late in a stream this ordered"
        );
        // Two barriers after the last event: every actor has the final
        // watermark (see e2e_test/window/watermark.slt).
        c.batch_execute("FLUSH; FLUSH; FLUSH").await.expect("flush");

        // The final watermark closed every window starting before the one
        // holding (latest time - 2 s).
        let windows = one_i64(&c, "SELECT count(*) FROM open").await;
        let closed = one_i64(&c, "SELECT count(*) FROM closed").await;
        let distinct = one_i64(&c, "SELECT count(DISTINCT window_start) FROM closed").await;
        let last_open = one_i64(
            &c,
            "SELECT count(*) FROM open WHERE window_start >= \
               (SELECT tumble_start(max(window_start) + INTERVAL '1' SECOND - INTERVAL '2' SECOND, \
                                    INTERVAL '1' SECOND) FROM open)",
        )
        .await;
        assert_eq!(distinct, closed, "a window was emitted twice");
        assert!(
            closed >= windows - last_open - 1 && closed < windows,
            "{closed} windows closed of {windows} ({last_open} still open)"
        );
        let differ = one_i64(
            &c,
            "SELECT count(*) FROM closed c LEFT JOIN open o ON c.window_start = o.window_start \
             WHERE o.n IS NULL OR o.n <> c.n OR o.s <> c.s",
        )
        .await;
        if differ != 0 {
            let rows = c
                .query(
                    "SELECT c.window_start::varchar, c.n, o.n FROM closed c LEFT JOIN open o \
                     ON c.window_start = o.window_start WHERE o.n IS NULL OR o.n <> c.n OR o.s <> c.s",
                    &[],
                )
                .await
                .expect("mismatch");
            let rows: Vec<(Option<String>, Option<i64>, Option<i64>)> =
                rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
            panic!(
                "closed windows differ from open's (window, closed, open): {rows:?}\n{}",
                server.log.tail(30)
            );
        }
        let per_window = one_i64(
            &c,
            "SELECT count(*) FROM closed c LEFT JOIN \
               (SELECT window_start, sum(n) AS n FROM per_auction GROUP BY window_start) p \
               ON c.window_start = p.window_start WHERE p.n IS NULL OR p.n <> c.n",
        )
        .await;
        if per_window != 0 {
            let rows = c
                .query(
                    "SELECT c.window_start::varchar, c.n, p.n::bigint FROM closed c FULL JOIN \
                       (SELECT window_start, sum(n) AS n FROM per_auction GROUP BY window_start) p \
                       ON c.window_start = p.window_start WHERE p.n IS NULL OR c.n IS NULL OR p.n <> c.n",
                    &[],
                )
                .await
                .expect("mismatch");
            let rows: Vec<(Option<String>, Option<i64>, Option<i64>)> =
                rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
            panic!("per-auction counts do not add up (window, closed, per_auction): {rows:?}");
        }

        // The window join: every (auction, window) pair of `open`'s bids,
        // its count and top price, each once.
        let pairs = one_i64(&c, "SELECT count(*) FROM pairs").await;
        let differ = one_i64(
            &c,
            "SELECT count(*) FROM pairs p FULL JOIN joined j \
               ON p.auction = j.auction AND p.window_start = j.window_start \
             WHERE j.n IS NULL OR p.n IS NULL OR j.n <> p.n OR j.top <> p.top",
        )
        .await;
        assert_eq!(differ, 0, "the window join differs from `pairs`");
        let joined = one_i64(&c, "SELECT count(*) FROM joined").await;
        let joined_bids = one_i64(&c, "SELECT sum(n)::bigint FROM joined").await;
        let joined_distinct = one_i64(
            &c,
            "SELECT count(*) FROM (SELECT DISTINCT auction, window_start FROM joined) d",
        )
        .await;
        assert_eq!(
            (joined, joined_distinct, joined_bids),
            (pairs, pairs, bids),
            "the window join lost or repeated a pair"
        );
        let join_most = join_samples.iter().copied().fold(0.0, f64::max);
        eprintln!("watermark: window join held at most {join_most} rows; samples {join_samples:?}");
        assert!(
            join_most < joined as f64 / 2.0,
            "window join state did not stay flat: {join_most} rows held at once, \
             {joined} pairs: {join_samples:?}"
        );

        let emitted = one_i64(&c, "SELECT count(*) FROM per_auction").await;
        let most = samples.iter().map(|s| s.0).fold(0.0, f64::max);
        eprintln!(
            "watermark: {events} events, {bids} bids, {windows} windows, {closed} closed, \
             {emitted} per-auction groups emitted, {scales} scale operations, \
             at most {most} groups in memory; samples (groups, bids counted, groups emitted): \
             {samples:?}"
        );
        assert!(emitted > 1000, "too few groups to tell: {emitted}");
        // Four aggregations keep a group per auction and window
        // (`per_auction`, `pairs` and the two of `joined`), each of them
        // all `emitted` groups over the run.
        let held = 4.0 * emitted as f64;
        assert!(
            most < held / 4.0,
            "state did not stay flat: {most} groups held at once, {held} over the run: {samples:?}"
        );
    });
}
