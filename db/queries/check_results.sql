-- Harness result cache (db/check_results.cpp, migration 004).

-- name: check_result_hit
UPDATE check_results SET hits = hits + 1, last_hit_at = now()
WHERE store_key = $1
RETURNING result::text;

-- name: check_result_put
INSERT INTO check_results (store_key, program_sha256, device, outcome, result)
VALUES ($1, $2, $3, $4, $5::jsonb)
ON CONFLICT (store_key) DO NOTHING;

-- name: check_result_get
SELECT store_key, program_sha256, device, outcome, result::text, hits
FROM check_results WHERE store_key = $1;
