"""Nexmark queries in Flink SQL for ci/bench-peers (a benchmark, not a test).

The events are ebbflow's, exported by ci/bench-peers as CSV files (sorted
by date_time) under --data/{person,auction,bid}/; they are declared as
bounded `filesystem` sources with date_time a TIMESTAMP(3) event-time
column (WATERMARK date_time - 4 s, as in Flink's own Nexmark DDL). Each
query of --queries (ci/bench_peers/nexmark_flink.sql) named in --names runs
into a `blackhole` sink, one job after the other in one local mini cluster
(PyFlink's Table API, streaming mode); an optional warm-up job (q0's scan of
bid) runs first and is not reported.

Prints one line per query:
  RESULT name=N net_ms=M wall_ms=W
      net_ms: the job's net runtime as Flink reports it
      (JobExecutionResult.getNetRuntime: INITIALIZING to FINISHED, so task
      deployment is in, the JVM's and the mini cluster's start and SQL
      planning are not); wall_ms from submitting the job to its result;
  NA name=N reason=R
      Flink refused the query (R: its error) or it did not finish within
      --timeout seconds (then it is cancelled);
and at the end `VERSION v`.
"""

import argparse
import os
import re
import time

from pyflink.table import EnvironmentSettings, TableDescriptor, TableEnvironment

COLUMNS = {
    "person": "id BIGINT, name STRING, email_address STRING, credit_card STRING, "
    "city STRING, state STRING, date_time TIMESTAMP(3), extra STRING",
    "auction": "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, "
    "reserve BIGINT, date_time TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, "
    "category BIGINT, extra STRING",
    "bid": "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
    "date_time TIMESTAMP(3), extra STRING",
}


def read_queries(path):
    """`--- NAME` starts a query; other `--` lines are comments."""
    queries, name = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("--- "):
                name = line[4:].split(":")[0].strip()
                queries[name] = []
            elif name and not line.startswith("--"):
                queries[name].append(line)
    return {n: "".join(t).strip().rstrip(";") for n, t in queries.items()}


def reason(e):
    """The first and the innermost Java exception message of e, on one line."""
    found = re.findall(r"(?:^|\n)(?:Caused by: )?((?:[\w$]+\.)+\w*(?:Exception|Error): [^\n]*)", str(e))
    if not found:
        return " ".join(str(e).split())[:300]
    first, last = found[0], found[-1]
    text = first if first == last else f"{first} ... {last}"
    return " ".join(text.split())[:400]


def run(t_env, sql, timeout):
    """net_ms, wall_ms of one job; raises on a refusal, TimeoutError on a timeout."""
    t0 = time.monotonic()
    result = t_env.sql_query(sql).execute_insert(TableDescriptor.for_connector("blackhole").build())
    client = result.get_job_client()
    future = client.get_job_execution_result()
    while not future.done():
        if time.monotonic() - t0 > timeout:
            client.cancel().result()
            raise TimeoutError(f"not done after {timeout} s (cancelled)")
        time.sleep(0.05)
    job = future.result()
    return job.get_net_runtime(), (time.monotonic() - t0) * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--names", required=True)
    ap.add_argument("--parallelism", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--minibatch", type=int, default=0)
    a = ap.parse_args()

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    cfg = t_env.get_config()
    cfg.set("parallelism.default", str(a.parallelism))
    if a.minibatch:
        cfg.set("table.exec.mini-batch.enabled", "true")
        cfg.set("table.exec.mini-batch.allow-latency", "250 ms")
        cfg.set("table.exec.mini-batch.size", "5000")
        cfg.set("table.optimizer.agg-phase-strategy", "TWO_PHASE")
    for table, cols in COLUMNS.items():
        t_env.execute_sql(
            f"""CREATE TEMPORARY TABLE {table} ({cols},
                WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
            ) WITH (
                'connector' = 'filesystem',
                'path' = 'file://{os.path.abspath(os.path.join(a.data, table))}',
                'format' = 'csv')"""
        )

    queries = read_queries(a.queries)
    if a.warmup:
        try:
            run(t_env, queries["q0"], a.timeout)
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            print(f"WARMUP failed: {reason(e)}", flush=True)
    for name in a.names.split():
        if name not in queries:
            print(f"NA name={name} reason=no Flink text in {a.queries}", flush=True)
            continue
        try:
            net_ms, wall_ms = run(t_env, queries[name], a.timeout)
            print(f"RESULT name={name} net_ms={net_ms} wall_ms={wall_ms:.0f}", flush=True)
        except Exception as e:  # noqa: BLE001 - Py4J errors are not typed
            print(f"NA name={name} reason={reason(e)}", flush=True)

    import pyflink.version

    print(f"VERSION {pyflink.version.__version__}", flush=True)


if __name__ == "__main__":
    main()
