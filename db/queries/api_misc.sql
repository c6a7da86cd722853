-- Workers view and gauges for the API (api/routes/admin_routes.cpp, /metrics).

-- name: api_worker_list
-- to_jsonb keeps every column, including those later migrations add (running_job_ids).
SELECT to_jsonb(w)::text, (w.stopped_at IS NULL AND w.heartbeat_at > now() - make_interval(secs => $3)) AS alive
FROM workers w WHERE ($1 = 0 OR w.id < $1) ORDER BY w.id DESC LIMIT $2;

-- name: api_workers_alive
SELECT count(*) FROM workers WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1);

-- name: api_jobs_by_state
-- Read-only gauge over the queue's table; empty until migration 002 exists.
SELECT kind, state, count(*) FROM jobs GROUP BY kind, state;

-- name: api_jobs_table_exists
SELECT to_regclass('jobs') IS NOT NULL;
