-- API tokens and Idempotency-Key records (db/tokens.cpp). Tokens are stored as
-- sha256 hex; scopes travel as a comma-separated string (libpqxx 6 and 7 alike).

-- name: token_insert
INSERT INTO api_tokens (name, token_sha256, prefix, scopes)
VALUES ($1, $2, $3, string_to_array($4, ','))
RETURNING id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- name: token_find
UPDATE api_tokens SET last_used_at = now()
WHERE token_sha256 = $1 AND revoked_at IS NULL
RETURNING id, name, prefix, array_to_string(scopes, ','), to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- name: token_list
SELECT id, name, prefix, array_to_string(scopes, ','), to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       coalesce(to_char(last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), ''), coalesce(to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '')
FROM api_tokens WHERE ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2;

-- name: token_revoke
UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id;

-- name: idempotency_find
SELECT request_sha256, status, content_type, body, coalesce(job_id, 0) FROM idempotency_records
WHERE principal = $1 AND method = $2 AND path = $3 AND key = $4
  AND created_at > now() - interval '24 hours';

-- name: idempotency_store
-- The first response wins; a record bound to a job whose response was not stored yet
-- (status 0, written with the job by idempotency_bind) gets it now, same hash only.
INSERT INTO idempotency_records (principal, method, path, key, request_sha256, status, content_type, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (principal, method, path, key) DO UPDATE
  SET request_sha256 = EXCLUDED.request_sha256, status = EXCLUDED.status,
      content_type = EXCLUDED.content_type, body = EXCLUDED.body,
      created_at = CASE WHEN idempotency_records.status = 0 THEN idempotency_records.created_at ELSE now() END,
      job_id = CASE WHEN idempotency_records.status = 0 THEN idempotency_records.job_id END
  WHERE idempotency_records.created_at <= now() - interval '24 hours'
     OR (idempotency_records.status = 0 AND idempotency_records.request_sha256 = EXCLUDED.request_sha256);

-- name: idempotency_bind
-- In the job insert's transaction: binds (caller, method, path, key) to the request's
-- hash and the new job (status 0 until idempotency_store adds the response). No row
-- back: a fresh record already holds the key.
INSERT INTO idempotency_records AS r (principal, method, path, key, request_sha256, status, content_type, body, job_id)
VALUES ($1, $2, $3, $4, $5, 0, '', '', $6)
ON CONFLICT (principal, method, path, key) DO UPDATE
  SET request_sha256 = EXCLUDED.request_sha256, status = 0, content_type = '', body = '', job_id = EXCLUDED.job_id,
      created_at = now()
  WHERE r.created_at <= now() - interval '24 hours'
RETURNING 1;

-- name: idempotency_try_lock
-- Session lock serialising requests that carry one key (class 0x6b66 'kf', the key's hash).
SELECT pg_try_advisory_lock(27494, $1::int);

-- name: idempotency_unlock
SELECT pg_advisory_unlock(27494, $1::int);

-- name: idempotency_expire
DELETE FROM idempotency_records WHERE created_at <= now() - interval '24 hours';
