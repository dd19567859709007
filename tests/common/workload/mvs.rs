//! The MVs of the random workload, and PostgreSQL's text of those
//! PostgreSQL cannot run as written.

/// The MVs under test, in creation order (later ones may read earlier ones).
pub const MVS: &[(&str, &str)] = &[
    (
        "mv_filter",
        "SELECT id, k, v, s FROM t1 WHERE v > 0 AND (b OR s IS NULL)",
    ),
    (
        "mv_proj",
        "SELECT id, v * 2 + 1 AS e, CASE WHEN n > 0 THEN 'pos' WHEN n < 0 THEN 'neg' ELSE 'zero' END AS sign, \
         COALESCE(s, 'none') AS s2, upper(s) AS up, length(s) AS len, k IS NULL AS k_null, NOT b AS nb, \
         abs(v) AS av, round(n, 1) AS rn FROM t1",
    ),
    (
        "mv_count",
        "SELECT k, count(*) AS c, count(s) AS cs FROM t1 GROUP BY k",
    ),
    (
        "mv_sum",
        "SELECT k, sum(v) AS sv, sum(n) AS sn FROM t1 GROUP BY k",
    ),
    (
        "mv_minmax",
        "SELECT k, min(v) AS mn, max(v) AS mx, min(s) AS mns, max(s) AS mxs FROM t1 GROUP BY k",
    ),
    (
        "mv_avg",
        "SELECT k, avg(v) AS av, avg(n) AS an FROM t1 GROUP BY k",
    ),
    (
        "mv_agg_filter",
        "SELECT k, count(*) FILTER (WHERE b) AS cb, sum(v) FILTER (WHERE s IS NOT NULL) AS ss, max(n) FILTER (WHERE v > 0) AS mn, count(DISTINCT s) FILTER (WHERE NOT b) AS cds FROM t1 GROUP BY k",
    ),
    (
        "mv_bool_bit",
        "SELECT k, bool_and(b) AS ba, bool_or(b) AS bo, bit_and(v) AS av, bit_or(v) AS ov, bit_xor(v) AS xv, bit_xor(DISTINCT id) AS xd FROM t1 GROUP BY k",
    ),
    (
        "mv_global",
        "SELECT count(*) AS c, count(n) AS cn, sum(v) AS sv, min(v) AS mn, max(v) AS mx, avg(n) AS an FROM t1",
    ),
    (
        "mv_global2",
        "SELECT count(*) AS c, sum(w) AS sw, min(name) AS mn, max(w) AS mx, avg(w) AS aw FROM t2",
    ),
    (
        "mv_having",
        "SELECT k, count(*) AS c, sum(w) AS sw FROM t2 GROUP BY k HAVING count(*) > 2",
    ),
    (
        "mv_inner",
        "SELECT t1.id, t1.k, t2.w, t2.name FROM t1 JOIN t2 ON t1.k = t2.k",
    ),
    (
        "mv_left",
        "SELECT t3.id, t3.x, t1.v, t1.s FROM t3 LEFT JOIN t1 ON t3.k = t1.id",
    ),
    (
        "mv_right",
        "SELECT t2.k, t2.w, t3.id, t3.x FROM t3 RIGHT JOIN t2 ON t3.x = t2.w",
    ),
    (
        "mv_full",
        "SELECT t1.id, t1.k, t3.id AS id3, t3.x FROM t1 FULL JOIN t3 ON t1.id = t3.k",
    ),
    (
        "mv_3way",
        "SELECT t1.id, t2.name, t3.x FROM t1 JOIN t2 ON t1.k = t2.k LEFT JOIN t3 ON t3.k = t1.id WHERE t2.w < 25",
    ),
    (
        "mv_agg_join",
        "SELECT t1.k, count(*) AS c, sum(t3.x) AS sx, max(t1.v) AS mv FROM t1 JOIN t3 ON t1.id = t3.k GROUP BY t1.k",
    ),
    ("mv_distinct", "SELECT DISTINCT k, s FROM t1"),
    (
        "mv_string_agg",
        "SELECT k, string_agg(s, ',' ORDER BY id) AS sa, string_agg(DISTINCT s, '|' ORDER BY s DESC) FILTER (WHERE b) AS sd, string_agg(split_part(s, 'a', 1), k::varchar ORDER BY v DESC, id) AS sp FROM t1 GROUP BY k",
    ),
    (
        "mv_array_agg",
        "SELECT k, array_agg(v ORDER BY id) AS av, array_agg(DISTINCT s ORDER BY s) FILTER (WHERE b) AS sd, array_agg(n ORDER BY n DESC, id) AS an FROM t1 GROUP BY k",
    ),
    (
        "mv_regexp",
        "SELECT id, (regexp_match(s, '([aeiou])(.)'))[2] AS m2, regexp_match(s, 'r+', 'i') AS rm, ARRAY[k, id] AS pair, (ARRAY[s, 'x'])[1:1] AS s1 FROM t1 WHERE s ~ 'e' OR k > 5",
    ),
    (
        "mv_array_key",
        "SELECT regexp_match(s, '^(.)(.?)') AS head, count(*) AS c, array_agg(id ORDER BY id) AS ids FROM t1 GROUP BY regexp_match(s, '^(.)(.?)')",
    ),
    (
        "mv_unnest",
        "SELECT id, unnest(regexp_match(s, '(.)(.)?')) AS ch, v FROM t1 WHERE k IS NOT NULL",
    ),
    (
        "mv_union",
        "SELECT k, id AS val FROM t1 WHERE v < 0 UNION ALL SELECT k, w AS val FROM t2",
    ),
    (
        "mv_on_mv",
        "SELECT s.k, s.sv, c.c FROM mv_sum s JOIN mv_count c ON s.k = c.k WHERE c.c > 1",
    ),
    (
        "mv_on_mv_agg",
        "SELECT count(*) AS groups, sum(c) AS rows FROM mv_count",
    ),
    (
        "mv_hop",
        "SELECT window_start, window_end, count(*) AS c, sum(v) AS sv, max(s) AS ms FROM HOP(t1, TIMESTAMP '2023-01-01 00:00:00' + v * INTERVAL '1' SECOND, INTERVAL '2' SECOND, INTERVAL '6' SECOND) GROUP BY window_start, window_end",
    ),
    (
        "mv_tumble_join",
        "SELECT w.id, w.window_start, t3.x FROM TUMBLE(t1, TIMESTAMP '2023-01-01 00:00:00' + k * INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) w JOIN t3 ON w.id = t3.k WHERE w.window_end > TIMESTAMP '2023-01-01 00:00:00'",
    ),
    (
        "mv_over",
        "SELECT id, k, v, row_number() OVER (PARTITION BY k ORDER BY v, id) AS rn, rank() OVER (PARTITION BY k ORDER BY v) AS rk, dense_rank() OVER (PARTITION BY k ORDER BY s DESC) AS dr, lag(v) OVER (PARTITION BY k ORDER BY id) AS lg, lead(s, 2, 'end') OVER (PARTITION BY k ORDER BY id) AS ld, sum(v) OVER (PARTITION BY k ORDER BY v) AS running, count(*) OVER (PARTITION BY b) AS cb, max(n) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mx, first_value(id) OVER (PARTITION BY k ORDER BY v DESC, id) AS fv FROM t1",
    ),
    (
        "mv_group_top2",
        "SELECT k, id, v FROM (SELECT k, id, v, row_number() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM t1) x WHERE rn <= 2",
    ),
    (
        "mv_distinct_on",
        "SELECT DISTINCT ON (k) k, id, v, s FROM t1 ORDER BY k, v DESC NULLS LAST, id",
    ),
    (
        "mv_over_global",
        "SELECT id, x, row_number() OVER (ORDER BY x, id) AS rn, sum(x) OVER (ORDER BY id ROWS 2 PRECEDING) AS s3 FROM t3",
    ),
    (
        "mv_topn",
        "SELECT id, v, s FROM t1 ORDER BY v DESC, id LIMIT 5",
    ),
    (
        "mv_topn_asc",
        "SELECT id, x FROM t3 ORDER BY x, id LIMIT 3",
    ),
    (
        "mv_exists",
        "SELECT id, k, v FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.k = t1.k AND t2.w > 30)",
    ),
    (
        "mv_not_exists",
        "SELECT id, x FROM t3 WHERE NOT EXISTS (SELECT 1 FROM t1 WHERE t1.id = t3.k AND t1.v > 0)",
    ),
    (
        "mv_in",
        "SELECT k, w, name FROM t2 WHERE w IN (SELECT x FROM t3 WHERE x < 20)",
    ),
    (
        "mv_not_in",
        "SELECT id, k, x FROM t3 WHERE x NOT IN (SELECT w FROM t2 WHERE t2.k = t3.k % 6)",
    ),
    (
        "mv_not_in_uncorr",
        "SELECT id, v FROM t1 WHERE k NOT IN (SELECT k FROM t2 WHERE w > 45)",
    ),
    (
        "mv_ineq_join",
        "SELECT t3.id, t3.x, t2.w, t2.name FROM t3 JOIN t2 ON t3.x > t2.w + 35",
    ),
    (
        "mv_left_ineq",
        "SELECT t3.id, t3.x, t1.id AS id1 FROM t3 LEFT JOIN t1 ON t1.v > 990 - t3.x",
    ),
    (
        "mv_dyn_filter",
        "SELECT t1.id, t1.v FROM t1, (SELECT max(x) AS m FROM t3) s WHERE t1.v > s.m * 15",
    ),
    (
        "mv_dyn_filter_subquery",
        "SELECT id, k, x FROM t3 WHERE x <= (SELECT avg(w) FROM t2 WHERE w > 10) AND id % 2 = 0",
    ),
    (
        "mv_wm_tumble",
        "SELECT window_start, window_end, count(*) AS c, sum(v) AS sv, max(v) AS mx, \
         count(DISTINCT id % 5) AS dk FROM TUMBLE(t4, ts, INTERVAL '10' SECOND) \
         GROUP BY window_start, window_end",
    ),
    (
        "mv_wm_join",
        "SELECT a.window_start, a.c, b.mx FROM \
         (SELECT window_start, count(*) AS c FROM TUMBLE(t4, ts, INTERVAL '10' SECOND) GROUP BY window_start) a \
         JOIN (SELECT window_start, max(v) AS mx FROM TUMBLE(t4, ts, INTERVAL '10' SECOND) WHERE v > 0 GROUP BY window_start) b \
         ON a.window_start = b.window_start",
    ),
    (
        "mv_conflict_agg",
        "SELECT v % 4 AS g, count(*) AS n, sum(v) AS s, count(w) AS cw, max(w) AS mw FROM t5 GROUP BY v % 4",
    ),
    (
        "mv_conflict_join",
        "SELECT t5.id, t5.w, t1.s FROM t5 JOIN t1 ON t5.id = t1.id WHERE t5.v IS NOT NULL",
    ),
    (
        "mv_num_group",
        "SELECT m, count(*) AS c, sum(w) AS sw, max(name) AS mn FROM t2 GROUP BY m",
    ),
    (
        "mv_num_join",
        "SELECT t2.m, t2.w, t3.id, t3.m AS m3 FROM t2 JOIN t3 ON t2.m = t3.m * 1.0 AND t2.k = t3.k % 6 \
         WHERE t3.x < 25",
    ),
    (
        "mv_num_distinct",
        "SELECT DISTINCT m * (w % 3) AS p, m / 2 AS h FROM t2",
    ),
    (
        "mv_num_distinct_on",
        "SELECT DISTINCT ON (m) m, w, name FROM t2 ORDER BY m, w DESC NULLS LAST, name NULLS LAST",
    ),
    (
        "mv_num_union",
        "SELECT m FROM t2 UNION SELECT m * 1.00 FROM t3",
    ),
    (
        "mv_num_pk",
        "SELECT t6.m, t6.v, t6.w, t3.id FROM t6 LEFT JOIN t3 ON t3.m = t6.m AND t3.x < 10",
    ),
    (
        "mv_num_pk_agg",
        "SELECT m * 2 / 4 AS h, count(*) AS c, sum(v) AS sv FROM t6 GROUP BY m * 2 / 4",
    ),
    (
        "mv_having_subquery",
        "SELECT k, count(*) AS n, sum(v) AS s FROM t1 GROUP BY k \
         HAVING count(*) >= (SELECT count(*) / (count(DISTINCT k) + 1) FROM t1)",
    ),
    (
        "mv_js_kind",
        "SELECT doc -> 'kind' AS kind, count(*) AS c, sum((doc ->> 'v')::numeric) AS sv, \
         count(*) FILTER (WHERE doc @> '{\"flag\": true}') AS flagged FROM t7 GROUP BY doc -> 'kind'",
    ),
    (
        "mv_js_join",
        "SELECT t7.id, t1.v, t7.doc ->> 'kind' AS kind, t7.doc #>> '{tags,0}' AS tag \
         FROM t7 JOIN t1 ON (t7.doc ->> 'ref')::int = t1.id WHERE t7.doc ? 'v'",
    ),
    (
        "mv_js_tags",
        "SELECT doc -> 'tags' AS tags, count(*) AS c, jsonb_build_object('n', count(*), 'k', min(id)) AS o \
         FROM t7 GROUP BY doc -> 'tags'",
    ),
    (
        "mv_tz_hour",
        "SELECT date_trunc('hour', tz, 'America/New_York') AT TIME ZONE 'UTC' AS h, count(*) AS c, \
         min(tz) AS first, max(tz AT TIME ZONE 'America/New_York') AS last_local FROM t3 GROUP BY 1",
    ),
    (
        "mv_tz_join",
        "SELECT t3.id, t1.v, t3.tz, t3.tz + INTERVAL '1 day' AS next_day, \
         extract(hour FROM t3.tz AT TIME ZONE 'Asia/Kolkata') AS h FROM t3 JOIN t1 ON t3.k = t1.id \
         WHERE t3.tz < TIMESTAMPTZ '2024-11-03 07:00:00+00'",
    ),
    (
        "mv_tz_key",
        "SELECT a.id, b.id AS id2, a.tz FROM t3 a JOIN t3 b ON a.tz = b.tz AND a.id < b.id",
    ),
];

/// PostgreSQL's text of the MVs whose ebbflow text PostgreSQL cannot run
/// (the `TUMBLE`/`HOP` windows: `date_bin` from an origin aligned with the
/// epoch, and one row per window from `generate_series`).
const PG_DEFS: &[(&str, &str)] = &[
    (
        "mv_hop",
        "SELECT window_start, window_start + INTERVAL '6 seconds' AS window_end, count(*) AS c, sum(v) AS sv, max(s) AS ms FROM (SELECT t1.*, date_bin(INTERVAL '2 seconds', TIMESTAMP '2023-01-01 00:00:00' + v * INTERVAL '1 second', TIMESTAMP '1900-01-01') - g * INTERVAL '2 seconds' AS window_start FROM t1 CROSS JOIN generate_series(0, 2) g WHERE v IS NOT NULL) h GROUP BY window_start",
    ),
    (
        "mv_wm_tumble",
        "SELECT window_start, window_start + INTERVAL '10 seconds' AS window_end, count(*) AS c, sum(v) AS sv, max(v) AS mx, count(DISTINCT id % 5) AS dk FROM (SELECT t4.*, date_bin(INTERVAL '10 seconds', ts, TIMESTAMP '1900-01-01') AS window_start FROM t4) w GROUP BY window_start",
    ),
    (
        "mv_wm_join",
        "SELECT a.window_start, a.c, b.mx FROM \
         (SELECT date_bin(INTERVAL '10 seconds', ts, TIMESTAMP '1900-01-01') AS window_start, count(*) AS c FROM t4 GROUP BY 1) a \
         JOIN (SELECT date_bin(INTERVAL '10 seconds', ts, TIMESTAMP '1900-01-01') AS window_start, max(v) AS mx FROM t4 WHERE v > 0 GROUP BY 1) b \
         ON a.window_start = b.window_start",
    ),
    (
        "mv_tumble_join",
        "SELECT w.id, w.window_start, t3.x FROM (SELECT t1.*, date_bin(INTERVAL '5 minutes', TIMESTAMP '2023-01-01 00:00:00' + k * INTERVAL '1 minute', TIMESTAMP '1900-01-01') AS window_start FROM t1) w JOIN t3 ON w.id = t3.k WHERE w.window_start + INTERVAL '5 minutes' > TIMESTAMP '2023-01-01 00:00:00'",
    ),
];

/// The definition of MV `name` for PostgreSQL: `def` itself, unless it
/// uses what only ebbflow has.
pub fn pg_def(name: &str, def: &'static str) -> &'static str {
    PG_DEFS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(def, |(_, d)| d)
}
