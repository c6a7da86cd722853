-- The job queue (db/queue.h, docs/queue.md): one row per job, claimed with
-- FOR UPDATE SKIP LOCKED, leased, retried with backoff, rescued, cancelled, pruned.
-- Tested by tests/db/queue_test.cpp and tests/worker/*_test.cpp.

CREATE TABLE jobs (
  id                bigserial   PRIMARY KEY,
  kind              text        NOT NULL CHECK (kind ~ '^[a-z][a-z0-9_.-]{0,62}$'),
  queue             text        NOT NULL DEFAULT 'default' CHECK (queue ~ '^[a-z][a-z0-9_.-]{0,62}$'),
  state             text        NOT NULL DEFAULT 'available' CHECK (state IN
                      ('available', 'scheduled', 'running', 'retryable', 'completed', 'failed', 'cancelled', 'discarded')),
  -- Lower runs first (0 most urgent). Claim order: priority, scheduled_at, id.
  priority          smallint    NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 9),
  args              jsonb       NOT NULL DEFAULT '{}',
  progress          jsonb       NOT NULL DEFAULT '{}',
  result            jsonb,
  -- One entry per failed attempt: {"attempt", "at", "error", "worker_id"}.
  errors            jsonb       NOT NULL DEFAULT '[]',
  attempt           integer     NOT NULL DEFAULT 0,
  max_attempts      integer     NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 1000),
  scheduled_at      timestamptz NOT NULL DEFAULT now(),
  attempted_at      timestamptz,
  finished_at       timestamptz,
  lease_expires_at  timestamptz,
  -- The worker that holds (running) or last held the job. No foreign key on
  -- purpose: every claim would take a KEY SHARE lock on the same workers row.
  worker_id         bigint,
  idempotency_key   text        CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
  cancel_requested  boolean     NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT jobs_finished_at_iff_terminal
    CHECK ((state IN ('completed', 'failed', 'cancelled', 'discarded')) = (finished_at IS NOT NULL)),
  CONSTRAINT jobs_attempt_in_range CHECK (attempt BETWEEN 0 AND max_attempts),
  CONSTRAINT jobs_running_is_leased
    CHECK (state <> 'running' OR (lease_expires_at IS NOT NULL AND worker_id IS NOT NULL AND attempted_at IS NOT NULL)),
  CONSTRAINT jobs_result_only_completed CHECK (result IS NULL OR state = 'completed')
);

-- Claim: pending jobs of a queue in claim order (the partial index holds only
-- pending rows, so it stays small however many finished jobs are kept).
CREATE INDEX jobs_claim_idx ON jobs (queue, priority, scheduled_at, id)
  WHERE state IN ('available', 'scheduled', 'retryable');
-- Rescue: running jobs by lease expiry.
CREATE INDEX jobs_lease_idx ON jobs (lease_expires_at) WHERE state = 'running';
-- Deliberately no index on finished_at or (kind, id): every claim and completion
-- writes a new row version into every index whose columns it touches, and those
-- two cost ~35% of claim+complete throughput in bench/queue. Listing walks the
-- primary key backwards; pruning (once a minute, one elected worker) scans.
-- Idempotency: a key is unique among jobs that are not finished.
CREATE UNIQUE INDEX jobs_idempotency_key_uq ON jobs (idempotency_key)
  WHERE idempotency_key IS NOT NULL AND state IN ('available', 'scheduled', 'running', 'retryable');

-- Paused queues: claims skip a queue whose row has paused_at set.
CREATE TABLE job_queues (
  name        text        PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_.-]{0,62}$'),
  paused_at   timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- ISO-8601 UTC with microseconds, "" for NULL: how the queue returns times.
CREATE FUNCTION kforge_iso(ts timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT coalesce(to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '') $$;

-- Workers say which jobs they are running (the heartbeat refreshes it).
ALTER TABLE workers ADD COLUMN running_job_ids bigint[] NOT NULL DEFAULT '{}';
