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
SELECT request_sha256, status, content_type, body FROM idempotency_records
WHERE principal = $1 AND method = $2 AND path = $3 AND key = $4
  AND created_at > now() - interval '24 hours';

-- name: idempotency_store
INSERT INTO idempotency_records (principal, method, path, key, request_sha256, status, content_type, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (principal, method, path, key) DO UPDATE
  SET request_sha256 = EXCLUDED.request_sha256, status = EXCLUDED.status,
      content_type = EXCLUDED.content_type, body = EXCLUDED.body, created_at = now()
  WHERE idempotency_records.created_at <= now() - interval '24 hours';

-- name: idempotency_expire
DELETE FROM idempotency_records WHERE created_at <= now() - interval '24 hours';
