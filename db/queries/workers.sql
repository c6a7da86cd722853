-- name: worker_register
INSERT INTO workers (host, pid, device, version, slots)
VALUES ($1, $2, $3, $4, $5)
RETURNING id;

-- name: worker_heartbeat
UPDATE workers SET heartbeat_at = now(), state = $2 WHERE id = $1;

-- name: worker_stop
UPDATE workers SET state = 'stopped', stopped_at = now(), heartbeat_at = now() WHERE id = $1;
