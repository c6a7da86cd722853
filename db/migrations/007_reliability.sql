-- Reliability (issue 18): exactly-once candidates, dead workers, Idempotency-Key
-- records bound to the job they created. Tested by tests/db/api_store_test.cpp,
-- tests/db/queue_test.cpp and the fault suite (tests/worker/faults_test.cpp).

-- A candidate belongs to one attempt of its job. A retried generation clears the
-- earlier attempts' rows when it starts (db::candidate_begin_attempt), and writes each
-- sample at most once per attempt, only while it holds the job's lease. Rows written
-- before this migration cannot tell attempts apart: the newest per (job, sample) stays.
-- Attempt 0 is for rows no job attempt wrote (imports, seeds, tests): not constrained.
ALTER TABLE candidates ADD COLUMN attempt integer NOT NULL DEFAULT 0;
DELETE FROM candidates c USING candidates newer
WHERE newer.job_id = c.job_id AND newer.sample_idx = c.sample_idx AND newer.id > c.id;
CREATE UNIQUE INDEX candidates_job_attempt_sample_uq ON candidates (job_id, attempt, sample_idx) WHERE attempt > 0;

-- A worker that stops heartbeating is marked dead by the elected maintainer
-- (db::worker_mark_dead), which also clears the jobs it claimed to run.
ALTER TABLE workers DROP CONSTRAINT workers_state_check;
ALTER TABLE workers ADD CONSTRAINT workers_state_check
  CHECK (state IN ('idle', 'busy', 'stopping', 'stopped', 'dead'));

-- The job a job-creating POST inserted under the key, written in the job's own
-- transaction (status 0 until the response is stored).
ALTER TABLE idempotency_records ADD COLUMN job_id bigint;
