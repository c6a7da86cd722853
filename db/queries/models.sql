-- Model versions, evaluations, training metrics and events (db/models.cpp).

-- name: model_insert
INSERT INTO models (name, version, parent_id, state, path, files, config, metrics, training_job_id)
VALUES ($1, $2, nullif($3, 0), $4, $5, $6::jsonb, $7::jsonb, $8::jsonb, nullif($9, 0))
RETURNING id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- name: model_get
SELECT id, name, version, coalesce(parent_id, 0), state, path, files::text, config::text, metrics::text,
       coalesce(training_job_id, 0), to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM models WHERE id = $1;

-- name: model_find
-- By "name" (newest version) or by name and version; archived versions only when $3.
SELECT id, name, version, coalesce(parent_id, 0), state, path, files::text, config::text, metrics::text,
       coalesce(training_job_id, 0), to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM models WHERE name = $1 AND ($2 = 0 OR version = $2) AND ($3 OR state <> 'archived')
ORDER BY version DESC LIMIT 1;

-- name: model_archive
-- An admin retires a version: it stays readable, is no longer resolved by name, and its
-- files are no longer served. Not while a training job is still writing it.
UPDATE models SET state = 'archived' WHERE id = $1 AND state <> 'training' RETURNING id;

-- name: model_list
SELECT id, name, version, coalesce(parent_id, 0), state, path, files::text, config::text, metrics::text,
       coalesce(training_job_id, 0), to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM models WHERE ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2;

-- name: evaluation_insert
INSERT INTO evaluations (job_id, model_id, suite, target, device, metrics, tasks)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)
RETURNING id;

-- name: evaluation_get_by_job
SELECT id, job_id, model_id, suite, target, device, metrics::text, tasks::text,
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM evaluations WHERE job_id = $1;

-- name: training_metric_insert
INSERT INTO training_metrics (job_id, step, metrics) VALUES ($1, $2, $3::jsonb)
ON CONFLICT (job_id, step) DO UPDATE SET metrics = EXCLUDED.metrics;

-- name: training_metric_list
SELECT step, metrics::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM training_metrics WHERE job_id = $1 AND step > $2 ORDER BY step LIMIT $3;

-- name: training_event_insert
INSERT INTO training_events (job_id, level, message, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING id;

-- name: training_event_list
SELECT id, level, message, data::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM training_events WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3;
