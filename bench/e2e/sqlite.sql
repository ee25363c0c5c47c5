-- SPDX-License-Identifier: Apache-2.0
-- scripts/bench-e2e: an allocation-heavy sqlite3 workload. @ROWS@ is replaced
-- by the row count. Deterministic: the "random" strings come from a
-- multiplicative hash of the row number, not from random().
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -65536;
CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT, g INTEGER);
CREATE INDEX t_k ON t (k);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < @ROWS@)
INSERT INTO t (k, v, g)
  SELECT printf('%08x%08x', (x * 2654435761) % 4294967296, (x * 40503 + 12345) % 4294967296),
         substr(hex(zeroblob(8)) || printf('%x', (x * 2246822519) % 4294967296), 1 + x % 9,
                8 + (x * 7) % 40) || printf('-%d', x),
         (x * 97) % 1009
  FROM n;
CREATE INDEX t_g ON t (g, k);
SELECT g, count(*), min(k), max(v), sum(length(v)) FROM t GROUP BY g ORDER BY count(*) DESC, g LIMIT 5;
SELECT substr(k, 1, 2) AS p, count(*), group_concat(substr(v, 1, 4), ',') IS NOT NULL FROM t
  GROUP BY p ORDER BY p LIMIT 5;
UPDATE t SET v = upper(v) || k WHERE g % 3 = 0;
SELECT count(DISTINCT v), sum(length(v)) FROM t;
DELETE FROM t WHERE g % 5 = 1;
SELECT a.g, count(*) FROM t AS a JOIN t AS b ON a.k = b.k WHERE a.g < 50 GROUP BY a.g ORDER BY a.g LIMIT 3;
