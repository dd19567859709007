-- The Nexmark queries of sql/nexmark.sql in Flink SQL, for
-- ci/bench_peers/flink_nexmark.py: the same query (columns, predicates,
-- orders) as ebbflow runs, in the dialect of Flink's own Nexmark texts
-- (github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries):
-- TUMBLE/HOP as windowing table-valued functions over the event-time
-- column date_time (grouped by window_start and window_end, as Flink
-- requires), DATE_FORMAT for to_char, HOUR for extract(hour …),
-- REGEXP_EXTRACT for regexp_match(…)[2], SPLIT_INDEX (0-based) for
-- split_part (1-based); reserved words in backquotes. Where Flink's own
-- text differs in what it computes (its q0/q1 also project `extra`, its q2
-- filters on MOD(auction, 123), its q18 orders by time alone, its q14 has a
-- UDF), RisingWave's query is kept so both systems do the same work.
--
-- Same layout as sql/nexmark.sql: `--- NAME` starts a query. A query Flink
-- refuses is still tried; its error is the reason printed.

--- q0
SELECT auction, bidder, price, date_time FROM bid

--- q1
SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid

--- q2
SELECT auction, price FROM bid
WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087

--- q3
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE A.category = 10 and (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')

--- q4
SELECT Q.category, AVG(Q.final) AS `avg`
FROM (SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
      WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
      GROUP BY A.id, A.category) Q
GROUP BY Q.category

--- q5
SELECT AuctionBids.auction, AuctionBids.num
FROM (SELECT auction, count(*) AS num, window_start AS starttime
      FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
      GROUP BY window_start, window_end, auction) AS AuctionBids
JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c
      FROM (SELECT count(*) AS num, window_start AS starttime_c
            FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
            GROUP BY auction, window_start, window_end) AS CountBids
      GROUP BY CountBids.starttime_c) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn

--- q6_unique
SELECT Q.seller, AVG(Q.final) OVER
  (PARTITION BY Q.seller ORDER BY Q.date_time, Q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS `avg`
FROM (SELECT ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price, B.date_time, B.bidder, B.extra) AS `rank`,
             A.id, A.seller, B.price AS final, B.date_time
      FROM auction AS A, bid AS B
      WHERE A.id = B.auction and B.date_time between A.date_time and A.expires) AS Q
WHERE Q.`rank` <= 1

--- q7
SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (SELECT MAX(price) AS maxprice, window_end AS date_time
      FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
      GROUP BY window_start, window_end) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time

--- q8
SELECT P.id, P.name, P.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
      GROUP BY id, name, window_start, window_end) P
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
      GROUP BY seller, window_start, window_end) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime

--- q9
SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
       auction, bidder, price, bid_date_time
FROM (SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
             ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
      FROM auction A, bid B
      WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires) tmp
WHERE rownum <= 1

--- q10
SELECT auction, bidder, price, date_time, DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `date`,
       DATE_FORMAT(date_time, 'hh:mm') AS `time` FROM bid

--- q14
SELECT auction, bidder, 0.908 * price AS price,
       CASE WHEN HOUR(date_time) >= 8 AND HOUR(date_time) <= 18 THEN 'dayTime'
            WHEN HOUR(date_time) <= 6 OR HOUR(date_time) >= 20 THEN 'nightTime'
            ELSE 'otherTime' END AS bidTimeType,
       date_time, extra
FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000

--- q15
SELECT DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `day`,
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
FROM bid GROUP BY DATE_FORMAT(date_time, 'yyyy-MM-dd')

--- q16
SELECT channel, DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `day`,
       max(DATE_FORMAT(date_time, 'hh:MM')) AS `minute`,
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
FROM bid GROUP BY channel, DATE_FORMAT(date_time, 'yyyy-MM-dd')

--- q17
SELECT auction, DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `day`, count(*) AS total_bids,
       count(*) filter (where price < 10000) AS rank1_bids,
       count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
       count(*) filter (where price >= 1000000) AS rank3_bids,
       min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price,
       sum(price) AS sum_price
FROM bid GROUP BY auction, DATE_FORMAT(date_time, 'yyyy-MM-dd')

--- q18
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra)
      AS rank_number FROM bid)
WHERE rank_number <= 1

--- q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10

--- q20
SELECT auction, bidder, price, channel, url, B.date_time AS bid_date_time,
       item_name, description, initial_bid, reserve, A.date_time AS auction_date_time,
       expires, seller, category
FROM bid AS B INNER JOIN auction AS A on B.auction = A.id WHERE A.category = 10

--- q21
SELECT auction, bidder, price, channel,
       CASE WHEN LOWER(channel) = 'apple' THEN '0'
            WHEN LOWER(channel) = 'google' THEN '1'
            WHEN LOWER(channel) = 'facebook' THEN '2'
            WHEN LOWER(channel) = 'baidu' THEN '3'
            ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null
   or LOWER(channel) in ('apple', 'google', 'facebook', 'baidu')

--- q22
SELECT auction, bidder, price, channel, SPLIT_INDEX(url, '/', 3) AS dir1,
       SPLIT_INDEX(url, '/', 4) AS dir2, SPLIT_INDEX(url, '/', 5) AS dir3 FROM bid

--- q101
SELECT a.id AS auction_id, a.item_name AS auction_item_name, b.max_price AS current_highest_bid
FROM auction a LEFT OUTER JOIN
     (SELECT b1.auction, MAX(b1.price) max_price FROM bid b1 GROUP BY b1.auction) b
     ON a.id = b.auction

--- q102
SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name
HAVING COUNT(b.auction) >= (SELECT COUNT(*) / COUNT(DISTINCT auction) FROM bid)

--- q103
SELECT a.id AS auction_id, a.item_name AS auction_item_name FROM auction a
WHERE a.id IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) >= 20)

--- q104
SELECT a.id AS auction_id, a.item_name AS auction_item_name FROM auction a
WHERE a.id NOT IN (SELECT b.auction FROM bid b GROUP BY b.auction HAVING COUNT(*) < 20)

--- q105
SELECT a.id AS auction_id, a.item_name AS auction_item_name, COUNT(b.auction) AS bid_count
FROM auction a JOIN bid b ON a.id = b.auction
GROUP BY a.id, a.item_name ORDER BY bid_count DESC LIMIT 1000

--- q106
SELECT MIN(final) AS min_final FROM
(SELECT auction.id, MAX(price) AS final FROM auction, bid
 WHERE bid.auction = auction.id AND bid.date_time BETWEEN auction.date_time AND auction.expires
 GROUP BY auction.id)
