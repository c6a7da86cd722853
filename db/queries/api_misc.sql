-- Workers view and gauges for the API (api/routes/admin_routes.cpp, /metrics).

-- name: api_worker_list
-- running_job_ids comes from a later migration (002); to_jsonb(w) reads it when present.
SELECT jsonb_build_object(
         'id', w.id, 'host', w.host, 'pid', w.pid, 'device', w.device, 'version', w.version, 'slots', w.slots,
         'state', w.state,
         'started_at', to_char(w.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'heartbeat_at', to_char(w.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'stopped_at', to_char(w.stopped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'running_job_ids', coalesce(to_jsonb(w) -> 'running_job_ids', '[]'::jsonb))::text,
       (w.stopped_at IS NULL AND w.heartbeat_at > now() - make_interval(secs => $3)) AS alive
FROM workers w WHERE ($1 = 0 OR w.id < $1) ORDER BY w.id DESC LIMIT $2;

-- name: api_workers_alive
SELECT count(*) FROM workers WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1);

-- name: api_jobs_by_state
-- Read-only gauge over the queue's table; empty until migration 002 exists.
SELECT kind, state, count(*) FROM jobs GROUP BY kind, state;

-- name: api_jobs_table_exists
SELECT to_regclass('jobs') IS NOT NULL;
