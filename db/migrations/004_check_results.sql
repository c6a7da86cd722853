-- Harness result cache shared by every job and worker: one row per (op, program,
-- device, check options) so an identical candidate is checked once (issue #5).
-- Written by worker/harness/result_store_db.cpp through db/check_results.cpp.
CREATE TABLE check_results (
  store_key      text        PRIMARY KEY,  -- op hash : program sha256 : device : options fingerprint
  program_sha256 text        NOT NULL,
  device         text        NOT NULL,
  outcome        text        NOT NULL,
  result         jsonb       NOT NULL,     -- CheckResult::to_json()
  hits           bigint      NOT NULL DEFAULT 0,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_hit_at    timestamptz
);
CREATE INDEX check_results_program_idx ON check_results (program_sha256);
