-- Online scaling, the reason ebbflow exists: a running job is scaled out,
-- in and moved between compute nodes by plain SQL, with no lost or
-- duplicated row. Run it against a playground (2 compute nodes x 2
-- parallel units):
--   cargo run --release
--   psql -h 127.0.0.1 -p 4566 -d dev -U root -f sql/scaling.sql
SET rw_implicit_flush = true;

DROP MATERIALIZED VIEW IF EXISTS per_key;
DROP TABLE IF EXISTS events;

-- A generator table: 200,000 rows, 5,000 a second, keys 0..99.
CREATE TABLE events (id bigint, k int, v int) WITH (
  connector = 'datagen',
  rows_per_second = '5000',
  fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '200000',
  fields.k.kind = 'random', fields.k.min = '0', fields.k.max = '99',
  fields.v.kind = 'random', fields.v.min = '1', fields.v.max = '10'
);

CREATE MATERIALIZED VIEW per_key AS
  SELECT k, count(*) AS n, sum(v) AS total FROM events GROUP BY k;

-- The cluster, and the job's fragments with their parallelism.
SELECT * FROM rw_worker_nodes ORDER BY id;
SELECT fragment_id, distribution_type, parallelism FROM rw_fragments
  WHERE table_id = (SELECT id FROM rw_materialized_views WHERE name = 'per_key')
  ORDER BY fragment_id;

-- Scale in to one actor per fragment, then back out to every unit,
-- while rows keep arriving.
ALTER MATERIALIZED VIEW per_key SET PARALLELISM = 1;
SELECT fragment_id, count(*) AS actors FROM rw_actors
  WHERE fragment_id IN (SELECT fragment_id FROM rw_fragments
                        WHERE table_id = (SELECT id FROM rw_materialized_views WHERE name = 'per_key'))
  GROUP BY fragment_id ORDER BY fragment_id;
ALTER MATERIALIZED VIEW per_key SET PARALLELISM = ADAPTIVE;

-- Move every actor off compute node 2, then see what each change cost:
-- the pause is the time sources and DML stood still.
ALTER SYSTEM RESCHEDULE DRAIN WORKER 2 DRY RUN;
ALTER SYSTEM RESCHEDULE DRAIN WORKER 2;
SELECT worker_id, count(*) AS actors FROM rw_actors GROUP BY worker_id ORDER BY worker_id;
SELECT id, statement, actors_added, actors_removed, vnodes_moved, pause_ms, status
  FROM rw_scale_history ORDER BY id;

-- Nothing was lost or repeated: the MV agrees with the same query run
-- over the table now.
FLUSH;
SELECT (SELECT sum(n) FROM per_key) = (SELECT count(*) FROM events) AS exact;
