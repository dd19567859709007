-- The Nexmark queries, in RisingWave's texts (its
-- e2e_test/streaming/nexmark/views: q0-q22 of the benchmark, q101-q106
-- its own additions) and the variant q6_unique: the one copy that
-- ci/bench-peers runs (each as `CREATE MATERIALIZED VIEW nexmark_<name>
-- WITH (parallelism = …) AS <text>` over `connector = 'nexmark'`
-- sources) and tests/nexmark.rs checks against PostgreSQL
-- (tests/nexmark/queries.rs holds PostgreSQL's texts and reads these).
-- To try one by hand, create the sources as ci/bench-peers does
-- (`nexmark_source`) and the MV from its text.
--
-- A line `--- NAME: SOURCES` starts a query (the sources it reads, which
-- decide the input rows it is credited with); the text runs to the next
-- such line. Other `--` lines are comments. The order here is the default
-- order of NEXMARK_QUERIES.

--- q0: bid
SELECT auction, bidder, price, date_time FROM bid

--- q1: bid
SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid

--- q2: bid
SELECT auction, price FROM bid
WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087

--- q3: auction person
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE A.category = 10 and (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')

--- q4: auction bid
SELECT Q.category, AVG(Q.final) as avg
FROM (SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
      WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
      GROUP BY A.id, A.category) Q
GROUP BY Q.category

--- q5: bid
SELECT AuctionBids.auction, AuctionBids.num
FROM (SELECT bid.auction, count(*) AS num, window_start AS starttime
      FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
      GROUP BY window_start, bid.auction) AS AuctionBids
JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c
      FROM (SELECT count(*) AS num, window_start AS starttime_c
            FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
            GROUP BY bid.auction, window_start) AS CountBids
      GROUP BY CountBids.starttime_c) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn

-- RisingWave's q6_group_top1 with unique orders (see tests/nexmark/queries.rs).
--- q6_unique: auction bid
SELECT Q.seller, AVG(Q.final) OVER
  (PARTITION BY Q.seller ORDER BY Q.date_time, Q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) as avg
FROM (SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price, B.date_time, B.bidder, B.extra) as rank,
             A.id, A.seller, B.price as final, B.date_time
      FROM auction AS A, bid AS B
      WHERE A.id = B.auction and B.date_time between A.date_time and A.expires) AS Q
WHERE Q.rank <= 1

--- q7: bid
SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (SELECT MAX(price) AS maxprice, window_end as date_time
      FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
      GROUP BY window_end) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time

--- q8: person auction
SELECT P.id, P.name, P.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM TUMBLE(person, date_time, INTERVAL '10' SECOND)
      GROUP BY id, name, window_start, window_end) P
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND)
      GROUP BY seller, window_start, window_end) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime

--- q9: auction bid
SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
       auction, bidder, price, bid_date_time
FROM (SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
             ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
      FROM auction A, bid B
      WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires) tmp
WHERE rownum <= 1

-- The projection of Flink's q10 (whose file sink is not a query).
--- q10: bid
SELECT auction, bidder, price, date_time, TO_CHAR(date_time, 'YYYY-MM-DD') as date,
       TO_CHAR(date_time, 'HH:MI') as time FROM bid

-- Without RisingWave's count_char(extra, 'c') (a JavaScript UDF).
--- q14: bid
SELECT auction, bidder, 0.908 * price as price,
       CASE WHEN extract(hour from date_time) >= 8 AND extract(hour from date_time) <= 18 THEN 'dayTime'
            WHEN extract(hour from date_time) <= 6 OR extract(hour from date_time) >= 20 THEN 'nightTime'
            ELSE 'otherTime' END AS bidTimeType,
       date_time, extra
FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000

--- q15: bid
SELECT to_char(date_time, 'YYYY-MM-DD') as "day",
       count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       count(distinct bidder) AS total_bidders,
       count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
       count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
       count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
       count(distinct auction) AS total_auctions,
       count(distinct auction) filter (where price < 10000) AS rank1_auctions,
       count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
       count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid GROUP BY to_char(date_time, 'YYYY-MM-DD')

--- q16: bid
SELECT channel, to_char(date_time, 'YYYY-MM-DD') as "day",
       max(to_char(date_time, 'HH:mm')) as "minute",
       count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       count(distinct bidder) AS total_bidders,
       count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
       count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
       count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
       count(distinct auction) AS total_auctions,
       count(distinct auction) filter (where price < 10000) AS rank1_auctions,
       count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
       count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
FROM bid GROUP BY channel, to_char(date_time, 'YYYY-MM-DD')

--- q17: bid
SELECT auction, to_char(date_time, 'YYYY-MM-DD') AS day, count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price,
       sum(price) AS sum_price
FROM bid GROUP BY auction, to_char(date_time, 'YYYY-MM-DD')

--- q18: bid
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra)
      AS rank_number FROM bid)
WHERE rank_number <= 1

--- q19: bid
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10

--- q20: bid auction
SELECT auction, bidder, price, channel, url, B.date_time as bid_date_time,
       item_name, description, initial_bid, reserve, A.date_time as auction_date_time,
       expires, seller, category
FROM bid AS B INNER JOIN auction AS A on B.auction = A.id WHERE A.category = 10

--- q21: bid
SELECT auction, bidder, price, channel,
       CASE WHEN LOWER(channel) = 'apple' THEN '0'
            WHEN LOWER(channel) = 'google' THEN '1'
            WHEN LOWER(channel) = 'facebook' THEN '2'
            WHEN LOWER(channel) = 'baidu' THEN '3'
            ELSE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] END AS channel_id
FROM bid
WHERE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] is not null
   or LOWER(channel) in ('apple', 'google', 'facebook', 'baidu')

--- q22: bid
SELECT auction, bidder, price, channel, split_part(url, '/', 4) as dir1,
       split_part(url, '/', 5) as dir2, split_part(url, '/', 6) as dir3 FROM bid

--- q101: auction bid
SELECT a.id AS auction_id, a.item_name AS auction_item_name, b.max_price AS current_highest_bid
FROM auction a LEFT OUTER JOIN
     (SELECT b1.auction, MAX(b1.price) max_price FROM bid b1 GROUP BY b1.auction) b
     ON a.id = b.auction

--- q102: auction bid
SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name
HAVING COUNT(b.auction) >= (SELECT COUNT(*) / COUNT(DISTINCT auction) FROM bid)

--- q103: auction bid
SELECT a.id AS auction_id, a.item_name AS auction_item_name FROM auction a
WHERE a.id IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) >= 20)

--- q104: auction bid
SELECT a.id AS auction_id, a.item_name AS auction_item_name FROM auction a
WHERE a.id NOT IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) < 20)

--- q105: auction bid
SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name ORDER BY bid_count DESC LIMIT 1000

--- q106: auction bid
SELECT MIN(final) AS min_final FROM
(SELECT auction.id, MAX(price) AS final FROM auction, bid
 WHERE bid.auction = auction.id AND bid.date_time BETWEEN auction.date_time AND auction.expires
 GROUP BY auction.id)
