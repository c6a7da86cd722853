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

-- name: candidate_list_for_job
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3;

-- name: candidate_best_for_job
-- The answer of a generation: the fastest unflagged correct kernel; when every correct one
-- is flagged, the fastest flagged one (its flag and message say why: issue 14).
SELECT id, job_id, op_id, coalesce(model_id, 0), sample_idx, target, device, source, outcome, message,
       reward, kernel_ms, baseline_ms, speedup, flagged, details::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM candidates WHERE job_id = $1 AND outcome = 'correct'
ORDER BY flagged, speedup DESC NULLS LAST, id LIMIT 1;

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
