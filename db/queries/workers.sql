-- name: worker_register
INSERT INTO workers (host, pid, device, version, slots, capabilities)
VALUES ($1, $2, $3, $4, $5, $6::text[])
RETURNING id;

-- name: worker_capable_count
-- Live workers (heartbeat in the last $2 seconds) whose capabilities cover tags $1.
SELECT count(*) FROM workers
WHERE stopped_at IS NULL AND heartbeat_at > now() - $2::float8 * interval '1 second' AND $1::text[] <@ capabilities;

-- name: worker_heartbeat
UPDATE workers SET heartbeat_at = now(), state = $2 WHERE id = $1;

-- name: worker_stop
UPDATE workers SET state = 'stopped', stopped_at = now(), heartbeat_at = now() WHERE id = $1;

-- name: worker_mark_dead
-- Workers whose heartbeat is older than $1 seconds and that never said they stopped:
-- state dead, and the jobs they claimed to run cleared (the rescuer retries those jobs).
UPDATE workers SET state = 'dead', running_job_ids = '{}'
WHERE stopped_at IS NULL AND state <> 'dead' AND heartbeat_at < now() - $1::float8 * interval '1 second'
RETURNING id;
