-- Ops and candidates (db/ops.cpp). Times are ISO-8601 UTC text.

-- name: op_insert
INSERT INTO ops (name, source, compiled_source, spec, spec_sha256, outputs, created_by, level)
VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, nullif($7, 0), nullif($8, 0))
RETURNING id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- name: op_get
SELECT id, name, source, compiled_source, spec::text, spec_sha256, outputs::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), coalesce(level, 0)
FROM ops WHERE id = $1;

-- name: op_list
SELECT id, name, source, compiled_source, spec::text, spec_sha256, outputs::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), coalesce(level, 0)
FROM ops WHERE ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2;

-- name: candidate_insert
INSERT INTO candidates (job_id, op_id, model_id, sample_idx, target, device, source, outcome, message,
                        reward, kernel_ms, baseline_ms, speedup, flagged, details)
VALUES ($1, $2, nullif($3, 0), $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb)
RETURNING id;

-- name: candidate_begin_attempt
-- $1 job, $2 worker, $3 attempt: while this lease holds the job, deletes the candidates
-- of its other attempts. One row back (true) when the lease is held.
WITH held AS (
  SELECT id FROM jobs WHERE id = $1 AND worker_id = $2 AND attempt = $3 AND state = 'running' FOR SHARE
), cleared AS (
  DELETE FROM candidates c WHERE c.job_id = $1 AND c.attempt <> $3 AND EXISTS (SELECT 1 FROM held)
)
SELECT EXISTS (SELECT 1 FROM held);

-- name: candidate_write
-- $1..$15 as candidate_insert, $16 worker, $17 attempt. Written only while that lease
-- holds the job (FOR SHARE keeps a rescue from slipping in between); once per
-- (job, attempt, sample): a repeat after a lost reply gets the same row's id.
WITH held AS (
  SELECT id FROM jobs WHERE id = $1 AND worker_id = $16 AND attempt = $17 AND state = 'running' FOR SHARE
)
INSERT INTO candidates (job_id, op_id, model_id, sample_idx, target, device, source, outcome, message,
                        reward, kernel_ms, baseline_ms, speedup, flagged, details, attempt)
SELECT $1::bigint, $2::bigint, nullif($3::bigint, 0), $4::int, $5::text, $6::text, $7::text, $8::text, $9::text,
       $10::float8, $11::float8, $12::float8, $13::float8, $14::boolean, $15::jsonb, $17::int
FROM held
ON CONFLICT (job_id, attempt, sample_idx) WHERE attempt > 0 DO UPDATE SET attempt = EXCLUDED.attempt
RETURNING id;

-- name: candidate_list_for_job
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3;

-- name: candidate_best_for_job
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE job_id = $1 AND outcome = 'correct' AND NOT flagged
ORDER BY speedup DESC NULLS LAST, id LIMIT 1;

-- name: candidate_counts_for_job
SELECT outcome, count(*) FROM candidates WHERE job_id = $1 GROUP BY outcome;

-- name: op_find_by_sha256
SELECT id, name, source, compiled_source, spec::text, spec_sha256, outputs::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), coalesce(level, 0)
FROM ops WHERE spec_sha256 = $1 ORDER BY id LIMIT 1;

-- name: candidate_list_for_op
-- Every candidate of one op across jobs, in id order (the web UI's op page).
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE op_id = $1 AND id > $2 ORDER BY id LIMIT $3;

-- name: candidate_get
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE id = $1;

-- name: op_lock
SELECT id FROM ops WHERE id = $1 FOR UPDATE;

-- name: op_generations_in_flight
-- Generations of op $1 that are still waiting or running.
SELECT count(*) FROM jobs
WHERE kind = 'generate' AND state IN ('available', 'scheduled', 'running', 'retryable') AND args -> 'op_id' = to_jsonb($1::bigint);

-- name: op_delete
-- The op and its candidates (so the leaderboard forgets it); finished generations keep their rows.
WITH gone AS (DELETE FROM candidates WHERE op_id = $1 RETURNING 1)
DELETE FROM ops WHERE id = $1 RETURNING (SELECT count(*) FROM gone);
