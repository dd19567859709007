"""psycopg 3 against ebbflow: prepared statements past the prepare
threshold, a DROP (after which psycopg sends DEALLOCATE ALL) and more
prepared statements; parameters of every supported type, in text and
binary; copy() in and out, and a failed COPY applying nothing.

Usage: python psycopg_test.py PORT
"""
import datetime
import decimal
import sys

import psycopg
from psycopg import errors

port = int(sys.argv[1])
conn = psycopg.connect(host="127.0.0.1", port=port, user="root", dbname="dev",
                       autocommit=True)
conn.prepare_threshold = 2
cur = conn.cursor()


def check(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


cur.execute("create table py_t (k int primary key, v varchar)")
for i in range(10):
    cur.execute("insert into py_t (k, v) values (%s, %s)", (i, f"v{i}"))
cur.execute("flush")
for i in range(10):
    cur.execute("select v from py_t where k = %s", (i,))
    check(cur.fetchone(), (f"v{i}",), "prepared select")

# DROP makes psycopg send DEALLOCATE ALL on this connection.
cur.execute("create table py_tmp (x int)")
cur.execute("drop table py_tmp")
for i in range(10):
    cur.execute("select v from py_t where k = %s", (i,))
    check(cur.fetchone(), (f"v{i}",), "prepared select after DROP")
    cur.execute("insert into py_t (k, v) values (%s, %s)", (100 + i, "again"))
cur.execute("flush")
cur.execute("select count(*) from py_t")
check(cur.fetchone(), (20,), "count")

# Every type, as parameters and back, in text and in binary.
cur.execute("""create table py_types (k int primary key, s smallint, b bigint,
    r real, d double precision, n numeric, v varchar, f boolean, dt date,
    ts timestamp, iv interval)""")
row = (1, 7, 2**40, 1.5, 2.25, decimal.Decimal("12.345"), "héllo, wörld",
       True, datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5),
       datetime.timedelta(days=1, seconds=3))
nulls = (2,) + (None,) * 10
for r in (row, nulls):
    cur.execute("insert into py_types values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", r)
cur.execute("flush")
for binary in (False, True):
    c = conn.cursor(binary=binary)
    for want in (row, nulls):
        for _ in range(3):  # past the prepare threshold
            c.execute("select * from py_types where k = %s", (want[0],))
            check(c.fetchone(), want, f"types (binary={binary})")
    c.execute("select %s::int + 1, %s::varchar || 'x', %s::boolean, %s::date",
              (41, "a", False, datetime.date(2000, 2, 29)))
    check(c.fetchone(), (42, "ax", False, datetime.date(2000, 2, 29)),
          f"expressions (binary={binary})")

# timestamptz: instants in and out, as parameters and results, in text
# and binary, whatever the session zone (reported in ParameterStatus).
cur.execute("create table py_tz (k int primary key, t timestamptz)")
est = datetime.timezone(datetime.timedelta(hours=-5))
instant = datetime.datetime(2024, 3, 10, 2, 30, 0, 123456, tzinfo=est)
cur.execute("insert into py_tz values (%s, %s)", (1, instant))
cur.execute("insert into py_tz values (2, '2024-11-03 01:30:00 America/New_York')")
cur.execute("flush")
fold = datetime.datetime(2024, 11, 3, 6, 30, tzinfo=datetime.timezone.utc)
for zone in ("Asia/Kolkata", "America/New_York", "UTC"):
    cur.execute(f"set time zone '{zone}'")
    check(conn.pgconn.parameter_status(b"TimeZone"), zone.encode(), "TimeZone reported")
    for binary in (False, True):
        c = conn.cursor(binary=binary)
        for _ in range(3):  # past the prepare threshold
            c.execute("select t from py_tz where k = %s", (1,))
            check(c.fetchone()[0], instant, f"timestamptz in {zone} (binary={binary})")
        c.execute("select t from py_tz where k = 2")
        # An ambiguous local time (fold=1) never equals across zones in
        # Python: compare in UTC.
        check(c.fetchone()[0].astimezone(datetime.timezone.utc), fold,
              f"fold in {zone} (binary={binary})")
        c.execute("select %s::timestamptz + interval '1 day'", (instant,))
        check(c.fetchone()[0], instant + datetime.timedelta(days=1),
              f"timestamptz arithmetic in {zone} (binary={binary})")

# jsonb: Python objects in and out through psycopg's Jsonb adapter, in
# text and binary (jsonb's binary form is a version byte and the text).
from psycopg.types.json import Jsonb

cur.execute("create table py_js (k int primary key, j jsonb)")
doc = {"b": [1, 2.5, None, True], "a": {"é": "x\ny"}, "n": -3}
cur.execute("insert into py_js values (%s, %s)", (1, Jsonb(doc)))
cur.execute("flush")
for binary in (False, True):
    c = conn.cursor(binary=binary)
    for _ in range(3):  # past the prepare threshold
        c.execute("select j, j -> 'a', j ->> 'n' from py_js where k = %s", (1,))
        check(c.fetchone(), (doc, {"é": "x\ny"}, "-3"), f"jsonb (binary={binary})")
    c.execute("select %s::jsonb @> %s", (Jsonb(doc), Jsonb({"n": -3})))
    check(c.fetchone(), (True,), f"jsonb parameters (binary={binary})")

# uuid: uuid.UUID in and out, text and binary.
import uuid

cur.execute("create table py_uu (u uuid primary key, n int)")
ids = [uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), uuid.uuid4()]
for i, u in enumerate(ids):
    cur.execute("insert into py_uu values (%s, %s)", (u, i))
cur.execute("flush")
for binary in (False, True):
    c = conn.cursor(binary=binary)
    for _ in range(3):  # past the prepare threshold
        c.execute("select u, n from py_uu where u = %s", (ids[1],))
        check(c.fetchone(), (ids[1], 1), f"uuid (binary={binary})")
    c.execute("select gen_random_uuid()")
    check(type(c.fetchone()[0]), uuid.UUID, f"gen_random_uuid (binary={binary})")

# bytea: bytes in and out, text (hex) and binary.
cur.execute("create table py_by (k int primary key, b bytea)")
blob = bytes(range(256)) + b"\x00"
cur.execute("insert into py_by values (%s, %s)", (1, blob))
cur.execute("flush")
for binary in (False, True):
    c = conn.cursor(binary=binary)
    for _ in range(3):  # past the prepare threshold
        c.execute("select b, length(b), b || %s from py_by where k = %s", (b"\x01", 1))
        check(c.fetchone(), (blob, 257, blob + b"\x01"), f"bytea (binary={binary})")

# time: datetime.time in and out, text and binary.
cur.execute("create table py_ti (k int primary key, t time)")
tod = datetime.time(23, 59, 58, 123456)
cur.execute("insert into py_ti values (%s, %s)", (1, tod))
cur.execute("flush")
for binary in (False, True):
    c = conn.cursor(binary=binary)
    for _ in range(3):  # past the prepare threshold
        c.execute("select t, t + interval '1 hour' from py_ti where k = %s", (1,))
        check(c.fetchone(), (tod, datetime.time(0, 59, 58, 123456)), f"time (binary={binary})")

# copy() in and out.
with cur.copy("copy py_t (k, v) from stdin") as copy:
    for i in range(200, 210):
        copy.write_row((i, f"c{i}"))
with cur.copy("copy py_t (k, v) from stdin with (format csv)") as copy:
    copy.write(b'210,"with, comma"\n211,\n')
cur.execute("flush")
with cur.copy("copy (select k, v from py_t where k >= 200 order by k) to stdout") as copy:
    rows = list(copy.rows())
check(len(rows), 12, "copied rows")
check(rows[0], ("200", "c200"), "first copied row")
check(rows[10], ("210", "with, comma"), "csv row")
check(rows[11], ("211", None), "csv NULL")

# A bad line fails the whole COPY: nothing of it is applied.
try:
    with cur.copy("copy py_t (k, v) from stdin") as copy:
        copy.write(b"300\ta\n301\tb\textra\n")
    raise AssertionError("a bad COPY succeeded")
except errors.BadCopyFileFormat:
    pass
cur.execute("flush")
cur.execute("select count(*) from py_t where k >= 300")
check(cur.fetchone(), (0,), "rows of a failed COPY")
cur.execute("select 1")
check(cur.fetchone(), (1,), "connection usable after a failed COPY")
print("psycopg: ok")
