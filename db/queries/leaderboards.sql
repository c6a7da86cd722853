-- Leaderboards (db/leaderboards.cpp). Same rows as the views in 003_api.sql, written
-- out so the keyset cursor (a row comparison) drives an index scan on
-- candidates_best_idx: a page reads only the rows of the ops it returns.

-- name: leaderboard_ops
-- $4 target ('' = any). The generator is the model version that wrote the kernel,
-- else what the worker recorded (teacher, policy). Prepared once per connection.
SELECT DISTINCT ON (c.op_id, c.target, c.device)
       c.op_id, o.name, c.target, c.device, c.id, c.job_id, coalesce(c.model_id, 0),
       c.speedup, c.kernel_ms, c.baseline_ms,
       to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       coalesce(o.level, 0), coalesce(m.name || '@' || m.version, c.details->>'generator', ''),
       (c.details->>'speedup_vs_compile')::float8
FROM candidates c JOIN ops o ON o.id = c.op_id LEFT JOIN models m ON m.id = c.model_id
WHERE c.outcome = 'correct' AND NOT c.flagged
  AND (c.op_id, c.target, c.device) > ($1, $2, $3)
  AND ($4 = '' OR c.target = $4)
ORDER BY c.op_id, c.target, c.device, c.speedup DESC, c.id
LIMIT $5;

-- name: leaderboard_ops_filtered
-- The same rows narrowed by $5 device ('' = any), $6 level (0 = any) and $7 one op
-- (0 = any). Run unprepared, so it is planned for the values given: as a generic
-- plan the OR filters on ops made PostgreSQL start from ops and sort every row
-- (17 ms against 0.5 ms on 10,000 candidates), and a prepared plan goes generic
-- after 5 runs.
SELECT DISTINCT ON (c.op_id, c.target, c.device)
       c.op_id, o.name, c.target, c.device, c.id, c.job_id, coalesce(c.model_id, 0),
       c.speedup, c.kernel_ms, c.baseline_ms,
       to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       coalesce(o.level, 0), coalesce(m.name || '@' || m.version, c.details->>'generator', ''),
       (c.details->>'speedup_vs_compile')::float8
FROM candidates c JOIN ops o ON o.id = c.op_id LEFT JOIN models m ON m.id = c.model_id
WHERE c.outcome = 'correct' AND NOT c.flagged
  AND (c.op_id, c.target, c.device) > ($1, $2, $3)
  AND ($4 = '' OR c.target = $4)
  AND ($5 = '' OR c.device = $5)
  AND ($6 = 0 OR o.level = $6)
  AND ($7 = 0 OR c.op_id = $7)
ORDER BY c.op_id, c.target, c.device, c.speedup DESC, c.id
LIMIT $8;

-- name: leaderboard_models
SELECT DISTINCT ON (e.model_id, e.suite, e.target)
       e.model_id, m.name, m.version, e.suite, e.target, e.device, e.id, e.job_id, e.metrics::text,
       to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM evaluations e JOIN models m ON m.id = e.model_id
WHERE (e.model_id, e.suite, e.target) > ($1, $2, $3)
  AND ($4 = '' OR e.suite = $4)
ORDER BY e.model_id, e.suite, e.target, e.id DESC
LIMIT $5;
