-- A first session with ebbflow: tables, a materialized view kept up to
-- date as rows change, and a generator. Run it against a playground:
--   cargo run --release        (in one terminal)
--   psql -h 127.0.0.1 -p 4566 -d dev -U root -f sql/quickstart.sql
-- Every statement commits before the next one runs, so each SELECT sees
-- the MV with the rows written before it.
SET rw_implicit_flush = true;

DROP MATERIALIZED VIEW IF EXISTS city_orders;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS customers;

CREATE TABLE customers (id int PRIMARY KEY, name varchar, city varchar);
CREATE TABLE orders (id int PRIMARY KEY, customer int, amount numeric, placed timestamp);

INSERT INTO customers VALUES (1, 'Ada', 'London'), (2, 'Grace', 'New York'), (3, 'Edsger', 'Austin');
INSERT INTO orders VALUES
  (10, 1, 25.50, TIMESTAMP '2024-05-01 09:00:00'),
  (11, 2, 10.00, TIMESTAMP '2024-05-01 09:05:00'),
  (12, 1, 7.25,  TIMESTAMP '2024-05-01 10:30:00');

-- A join and an aggregation, maintained incrementally.
CREATE MATERIALIZED VIEW city_orders AS
  SELECT c.city, count(*) AS orders, sum(o.amount) AS total
  FROM orders o JOIN customers c ON o.customer = c.id
  GROUP BY c.city;

SELECT * FROM city_orders ORDER BY city;

-- Changes flow through: an update, a delete, a new customer's order.
UPDATE orders SET amount = amount * 2 WHERE id = 11;
DELETE FROM orders WHERE id = 12;
INSERT INTO orders VALUES (13, 3, 99.99, TIMESTAMP '2024-05-01 11:00:00');

SELECT * FROM city_orders ORDER BY city;

-- The job behind the MV: its fragments and where their actors run.
SHOW FRAGMENTS FOR city_orders;
EXPLAIN CREATE MATERIALIZED VIEW x AS
  SELECT c.city, count(*) FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.city;
