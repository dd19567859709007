CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar, amount numeric, placed date);
CREATE TABLE events (kind varchar, at timestamp, weight double precision);
CREATE MATERIALIZED VIEW revenue AS SELECT customer, sum(amount) AS total, count(*) AS n FROM orders GROUP BY customer;
CREATE VIEW big_orders AS SELECT id, customer, amount FROM orders WHERE amount > 100;
