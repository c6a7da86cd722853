-- The job queue's statements (db/queue.h, docs/queue.md). {{job_columns}} is
-- replaced by the job_columns block; every job query aliases jobs as j.
-- Tested by tests/db/queue_test.cpp.

-- name: job_columns
j.id, j.kind, j.queue, j.state, j.priority, j.args::text AS args, j.progress::text AS progress,
coalesce(j.result::text, 'null') AS result, j.errors::text AS errors, j.attempt, j.max_attempts,
kforge_iso(j.scheduled_at) AS scheduled_at, kforge_iso(j.attempted_at) AS attempted_at,
kforge_iso(j.finished_at) AS finished_at, kforge_iso(j.created_at) AS created_at,
kforge_iso(j.lease_expires_at) AS lease_expires_at, j.worker_id,
coalesce(j.idempotency_key, '') AS idempotency_key, j.cancel_requested, j.requires

-- name: job_insert
-- $1 kind, $2 queue, $3 priority, $4 args, $5 max_attempts, $6 delay seconds, $7 key ('' = none),
-- $8 capability tags a worker needs to run it ('{}' = any worker).
-- A key already held by an unfinished job inserts nothing (the caller then reads that job).
INSERT INTO jobs AS j (kind, queue, state, priority, args, max_attempts, scheduled_at, idempotency_key, requires)
VALUES ($1, $2, CASE WHEN $6::float8 > 0 THEN 'scheduled' ELSE 'available' END, $3, $4::jsonb, $5,
        now() + $6::float8 * interval '1 second', NULLIF($7, ''), $8::text[])
ON CONFLICT (idempotency_key)
  WHERE idempotency_key IS NOT NULL AND state IN ('available', 'scheduled', 'running', 'retryable')
  DO NOTHING
RETURNING {{job_columns}};

-- name: job_get_in_flight_by_key
SELECT {{job_columns}} FROM jobs j
WHERE j.idempotency_key = $1 AND j.state IN ('available', 'scheduled', 'running', 'retryable');

-- name: job_insert_many
-- $1: a JSON array of {kind, queue, priority, args, max_attempts, delay}. Rows are
-- inserted, and ids returned, in array order.
INSERT INTO jobs (kind, queue, state, priority, args, max_attempts, scheduled_at)
SELECT r.kind, r.queue, CASE WHEN r.delay > 0 THEN 'scheduled' ELSE 'available' END, r.priority, r.args,
       r.max_attempts, now() + r.delay * interval '1 second'
FROM jsonb_to_recordset($1::jsonb) AS r(kind text, queue text, priority smallint, args jsonb, max_attempts int,
                                       delay float8)
RETURNING id;

-- name: job_notify
-- Wakes idle workers of a queue; delivered when the transaction commits.
SELECT pg_notify('kforge_jobs', $1);

-- name: job_get
SELECT {{job_columns}} FROM jobs j WHERE j.id = $1;

-- name: job_list
-- $1 kind ('' = any), $2 state ('' = any), $3 cursor (jobs with id < $3; 0 = newest), $4 limit.
SELECT {{job_columns}} FROM jobs j
WHERE ($1 = '' OR j.kind = $1) AND ($2 = '' OR j.state = $2) AND ($3::bigint = 0 OR j.id < $3::bigint)
ORDER BY j.id DESC
LIMIT $4;

-- name: job_lock_state
SELECT state FROM jobs WHERE id = $1 FOR UPDATE;

-- name: job_cancel_pending
UPDATE jobs SET state = 'cancelled', cancel_requested = true, finished_at = now()
WHERE id = $1 AND state IN ('available', 'scheduled', 'retryable');

-- name: job_request_cancel
UPDATE jobs SET cancel_requested = true WHERE id = $1 AND state = 'running';

-- name: job_notify_cancel
-- Tells the worker running job $1 to stop at its next checkpoint.
SELECT pg_notify('kforge_job_cancel', $1::text);

-- name: job_claim
-- $1 queue, $2 worker id, $3 how many, $4 lease seconds, $5 kinds this worker runs ('{}' = any),
-- $6 the worker's capability tags (a job is claimable when it requires no tag the worker lacks).
-- One statement: lock the next pending jobs in claim order, skipping rows other
-- claimers hold, and mark them running under a fresh lease.
WITH next AS (
  SELECT id FROM jobs
  WHERE state IN ('available', 'scheduled', 'retryable') AND queue = $1 AND scheduled_at <= now()
    AND (cardinality($5::text[]) = 0 OR kind = ANY($5::text[]))
    AND requires <@ $6::text[]
    AND NOT EXISTS (SELECT 1 FROM job_queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL)
  ORDER BY priority, scheduled_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
SET state = 'running', attempt = j.attempt + 1, attempted_at = now(), worker_id = $2,
    lease_expires_at = now() + $4::float8 * interval '1 second'
-- id = ANY(ARRAY(...)), not a join: the planner guesses the CTE's row count and
-- would hash-join it against a sequential scan of the whole table.
WHERE j.id = ANY(ARRAY(SELECT id FROM next))
RETURNING {{job_columns}};

-- name: job_next_due
-- Seconds until the next pending job of queue $1 (kinds $2, capabilities $3) is due; NULL when none.
SELECT extract(epoch FROM min(scheduled_at) - now())::float8 FROM jobs
WHERE state IN ('available', 'scheduled', 'retryable') AND queue = $1
  AND (cardinality($2::text[]) = 0 OR kind = ANY($2::text[])) AND requires <@ $3::text[];

-- name: job_heartbeat
-- $1 id, $2 worker, $3 attempt, $4 lease seconds, $5 progress JSON ('' = unchanged).
-- No row back means the lease is lost.
UPDATE jobs j
SET lease_expires_at = now() + $4::float8 * interval '1 second',
    progress = coalesce(NULLIF($5, '')::jsonb, j.progress)
WHERE j.id = $1 AND j.worker_id = $2 AND j.attempt = $3 AND j.state = 'running'
RETURNING j.cancel_requested;

-- name: job_extend_leases
-- $1 worker, $2 ids, $3 attempts (parallel arrays), $4 lease seconds. Rows back: leases still held.
UPDATE jobs j
SET lease_expires_at = now() + $4::float8 * interval '1 second'
FROM unnest($2::bigint[], $3::int[]) AS l(id, attempt)
WHERE j.id = ANY($2::bigint[]) AND j.id = l.id AND j.attempt = l.attempt AND j.worker_id = $1
  AND j.state = 'running'
RETURNING j.id, j.cancel_requested;

-- name: job_complete
-- $1 id, $2 worker, $3 attempt, $4 result JSON, $5 final progress ('' = unchanged).
-- No row back: the lease is not ours.
UPDATE jobs j
SET state = 'completed', finished_at = now(), result = $4::jsonb, lease_expires_at = NULL,
    progress = coalesce(NULLIF($5, '')::jsonb, j.progress)
WHERE j.id = $1 AND j.worker_id = $2 AND j.attempt = $3 AND j.state = 'running'
RETURNING j.id;

-- name: job_complete_many
-- $1 worker, $2 a JSON array of {id, attempt, result, progress?}, $3 the same ids as
-- an array (lets the planner probe the primary key). Rows back: jobs completed.
UPDATE jobs j
SET state = 'completed', finished_at = now(), result = r.result, lease_expires_at = NULL,
    progress = coalesce(r.progress, j.progress)
FROM jsonb_to_recordset($2::jsonb) AS r(id bigint, attempt int, result jsonb, progress jsonb)
WHERE j.id = ANY($3::bigint[]) AND j.id = r.id AND j.attempt = r.attempt AND j.worker_id = $1
  AND j.state = 'running'
RETURNING j.id;

-- name: job_fail
-- $1 id, $2 worker, $3 attempt, $4 error, $5 retryable, $6 backoff base s, $7 backoff cap s, $8 jitter (0..1).
-- Retry after min(cap, base * 2^(attempt-1)) * (1 +- jitter) while attempts remain;
-- otherwise discarded (attempts used up) or failed (not retryable).
UPDATE jobs j
SET state = CASE WHEN $5::boolean AND j.attempt < j.max_attempts THEN 'retryable'
                 WHEN $5::boolean THEN 'discarded' ELSE 'failed' END,
    finished_at = CASE WHEN $5::boolean AND j.attempt < j.max_attempts THEN NULL ELSE now() END,
    scheduled_at = CASE WHEN $5::boolean AND j.attempt < j.max_attempts
      THEN now() + least($7::float8, $6::float8 * power(2, j.attempt - 1))
                   * (1 + $8::float8 * (2 * random() - 1)) * interval '1 second'
      ELSE j.scheduled_at END,
    errors = j.errors || jsonb_build_array(jsonb_build_object(
      'attempt', j.attempt, 'at', kforge_iso(now()), 'error', $4::text, 'worker_id', j.worker_id)),
    lease_expires_at = NULL
WHERE j.id = $1 AND j.worker_id = $2 AND j.attempt = $3 AND j.state = 'running'
RETURNING j.state, j.queue, extract(epoch FROM j.scheduled_at - now())::float8 AS retry_in_s;

-- name: job_cancelled
-- The worker stopped job $1 because cancellation was requested.
UPDATE jobs j
SET state = 'cancelled', finished_at = now(), lease_expires_at = NULL,
    errors = j.errors || jsonb_build_array(jsonb_build_object(
      'attempt', j.attempt, 'at', kforge_iso(now()), 'error', 'cancelled: ' || $4::text, 'worker_id', j.worker_id))
WHERE j.id = $1 AND j.worker_id = $2 AND j.attempt = $3 AND j.state = 'running'
RETURNING j.id;

-- name: job_release
-- Graceful shutdown: give job $1 back untouched (the attempt does not count),
-- or cancel it if cancellation was requested meanwhile.
UPDATE jobs j
SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'available' END,
    finished_at = CASE WHEN j.cancel_requested THEN now() END,
    attempt = j.attempt - 1, scheduled_at = now(), lease_expires_at = NULL
WHERE j.id = $1 AND j.worker_id = $2 AND j.attempt = $3 AND j.state = 'running'
RETURNING j.queue;

-- name: job_try_maintenance_lock
-- One maintainer (rescue, prune) at a time across every worker and server.
SELECT pg_try_advisory_xact_lock($1::bigint);

-- name: job_rescue
-- Running jobs whose lease lapsed: retry (with backoff) while attempts remain,
-- discard when used up, cancel if cancellation was requested. $1 limit, $2-$4 backoff.
WITH expired AS (
  SELECT id FROM jobs
  WHERE state = 'running' AND lease_expires_at < now()
  ORDER BY lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
SET state = CASE WHEN j.cancel_requested THEN 'cancelled'
                 WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'retryable' END,
    finished_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts THEN now() END,
    scheduled_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts THEN j.scheduled_at
      ELSE now() + least($3::float8, $2::float8 * power(2, j.attempt - 1))
                   * (1 + $4::float8 * (2 * random() - 1)) * interval '1 second' END,
    errors = j.errors || jsonb_build_array(jsonb_build_object(
      'attempt', j.attempt, 'at', kforge_iso(now()),
      'error', 'lease expired: worker ' || j.worker_id || ' stopped heartbeating', 'worker_id', j.worker_id)),
    lease_expires_at = NULL
WHERE j.id = ANY(ARRAY(SELECT id FROM expired))
RETURNING j.id, j.state, j.queue;

-- name: job_prune
-- Deletes up to $2 jobs that finished more than $1 seconds ago, oldest first.
DELETE FROM jobs WHERE id IN (
  SELECT id FROM jobs WHERE finished_at < now() - $1::float8 * interval '1 second'
  ORDER BY finished_at LIMIT $2);

-- name: queue_pause
INSERT INTO job_queues (name, paused_at) VALUES ($1, now())
ON CONFLICT (name) DO UPDATE SET paused_at = now(), updated_at = now();

-- name: queue_resume
INSERT INTO job_queues (name, paused_at) VALUES ($1, NULL)
ON CONFLICT (name) DO UPDATE SET paused_at = NULL, updated_at = now();

-- name: queue_is_paused
SELECT EXISTS (SELECT 1 FROM job_queues WHERE name = $1 AND paused_at IS NOT NULL);

-- name: worker_heartbeat_running
-- $1 worker, $2 state (idle | busy | stopping), $3 ids of the jobs it is running.
UPDATE workers SET heartbeat_at = now(), state = $2, running_job_ids = $3::bigint[] WHERE id = $1;
