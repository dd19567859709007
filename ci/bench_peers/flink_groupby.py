"""One Flink SQL run for ci/bench-peers (a benchmark, not a test).

datagen (ROWS rows, k INT in 0..GROUPS-1, v INT in 0..1000)
  -> SELECT k, count(*), sum(v) GROUP BY k -> blackhole,
in a local mini cluster started by PyFlink's Table API, streaming mode.

Prints one line `RESULT rows=R net_ms=N wall_ms=W version=V`:
  net_ms  the job's net runtime as Flink reports it
          (JobExecutionResult.getNetRuntime: from the job's INITIALIZING to
          FINISHED, so task deployment is in, the JVM, the mini cluster's
          start and SQL planning are not);
  wall_ms from submitting the INSERT to the job's result (planning, the
          per-job mini cluster's start and stop included).
An optional warm-up job over --warmup-rows rows runs first in the same JVM
and is not reported.
"""

import argparse
import time

from pyflink.table import EnvironmentSettings, TableEnvironment


def run(t_env, rows, groups, tag):
    t_env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS src_{tag}")
    t_env.execute_sql(
        f"""CREATE TEMPORARY TABLE src_{tag} (k INT, v INT) WITH (
            'connector' = 'datagen',
            'number-of-rows' = '{rows}',
            'rows-per-second' = '1000000000',
            'fields.k.kind' = 'random',
            'fields.k.min' = '0',
            'fields.k.max' = '{groups - 1}',
            'fields.v.kind' = 'random',
            'fields.v.min' = '0',
            'fields.v.max' = '1000')"""
    )
    t_env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS sink_{tag}")
    t_env.execute_sql(
        f"CREATE TEMPORARY TABLE sink_{tag} (k INT, c BIGINT, s INT) "
        "WITH ('connector' = 'blackhole')"
    )
    t0 = time.monotonic()
    result = t_env.execute_sql(
        f"INSERT INTO sink_{tag} SELECT k, count(*), sum(v) FROM src_{tag} GROUP BY k"
    )
    job = result.get_job_client().get_job_execution_result().result()
    wall_ms = (time.monotonic() - t0) * 1000.0
    return job.get_net_runtime(), wall_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--groups", type=int, required=True)
    ap.add_argument("--parallelism", type=int, required=True)
    ap.add_argument("--warmup-rows", type=int, default=0)
    ap.add_argument("--minibatch", type=int, default=0)
    a = ap.parse_args()

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    cfg = t_env.get_config()
    cfg.set("parallelism.default", str(a.parallelism))
    if a.minibatch:
        # Flink's usual tuning for aggregations (off by default): buffer
        # input for a short while and pre-aggregate before the shuffle.
        cfg.set("table.exec.mini-batch.enabled", "true")
        cfg.set("table.exec.mini-batch.allow-latency", "250 ms")
        cfg.set("table.exec.mini-batch.size", "5000")
        cfg.set("table.optimizer.agg-phase-strategy", "TWO_PHASE")

    if a.warmup_rows > 0:
        run(t_env, a.warmup_rows, a.groups, "warmup")
    net_ms, wall_ms = run(t_env, a.rows, a.groups, "run")

    import pyflink.version

    print(
        f"RESULT rows={a.rows} net_ms={net_ms} wall_ms={wall_ms:.0f} "
        f"version={pyflink.version.__version__}",
        flush=True,
    )


if __name__ == "__main__":
    main()
