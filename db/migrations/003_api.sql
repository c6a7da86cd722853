-- API tables: ops, model versions, candidates, training metrics/events,
-- evaluations, API tokens, idempotency records, and the leaderboard views.
-- Jobs live in 002 (queue); columns here name a job by id without a foreign key
-- so this file does not depend on the queue's DDL (job ids are bigint).

-- One op: TorchScript reference plus its inputs, as POSTed to /v1/ops.
CREATE TABLE ops (
  id             bigserial PRIMARY KEY,
  name           text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  source         text        NOT NULL,              -- as submitted
  compiled_source text       NOT NULL DEFAULT '',   -- after the F.x -> torch.x rewrite
  spec           jsonb       NOT NULL,              -- the full op JSON (inputs, extra_shapes, tolerance)
  spec_sha256    text        NOT NULL,              -- hex sha256 of the canonical spec
  outputs        jsonb       NOT NULL DEFAULT '{}', -- sample run: {outputs: [{shape, dtype}], shapes, scaled, wall_ms}
  created_by     bigint,                            -- api_tokens.id, NULL for internal (suite import)
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ops_spec_sha256_idx ON ops (spec_sha256);
CREATE INDEX ops_name_idx ON ops (name);

-- One model version: a directory of HF-format files (config.json,
-- model.safetensors, tokenizer.json). Training jobs create rows here.
CREATE TABLE models (
  id               bigserial PRIMARY KEY,
  name             text        NOT NULL,             -- family, e.g. kforge-tiny
  version          integer     NOT NULL DEFAULT 1 CHECK (version > 0),
  parent_id        bigint      REFERENCES models (id),
  state            text        NOT NULL DEFAULT 'ready' CHECK (state IN ('training', 'ready', 'failed', 'archived')),
  path             text        NOT NULL DEFAULT '',  -- directory holding the files on the server host
  files            jsonb       NOT NULL DEFAULT '[]',-- [{name, size, sha256}]
  config           jsonb       NOT NULL DEFAULT '{}',
  metrics          jsonb       NOT NULL DEFAULT '{}',-- final training metrics
  training_job_id  bigint,                           -- jobs.id that produced it
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (name, version)
);

-- One sampled kernel and its checked outcome (harness outcome vocabulary).
CREATE TABLE candidates (
  id           bigserial PRIMARY KEY,
  job_id       bigint           NOT NULL,            -- generate / train_grpo / evaluate job
  op_id        bigint           NOT NULL REFERENCES ops (id),
  model_id     bigint           REFERENCES models (id),
  sample_idx   integer          NOT NULL DEFAULT 0,
  target       text             NOT NULL DEFAULT 'opencl' CHECK (target IN ('opencl', 'cuda', 'triton')),
  device       text             NOT NULL DEFAULT '',
  source       text             NOT NULL,
  outcome      text             NOT NULL CHECK (outcome IN ('format_error', 'rule_violation', 'compile_error',
                                                            'runtime_error', 'timeout', 'wrong_output', 'correct')),
  message      text             NOT NULL DEFAULT '',
  reward       double precision,
  kernel_ms    double precision,                     -- median kernel time
  baseline_ms  double precision,                     -- median PyTorch eager time, same process
  speedup      double precision,                     -- baseline_ms / kernel_ms, correct only
  flagged      boolean          NOT NULL DEFAULT false, -- speedup above the sanity bound, weak test...
  details      jsonb            NOT NULL DEFAULT '{}',  -- timings spread, environment, mismatch
  created_at   timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX candidates_job_idx ON candidates (job_id, id);
-- Serves the ops leaderboard: best correct kernel per (op, target, device) in index order.
CREATE INDEX candidates_best_idx ON candidates (op_id, target, device, speedup DESC, id)
  WHERE outcome = 'correct' AND NOT flagged;

-- Per-step training metrics (loss, reward mean, kl, lr...), one row per step.
CREATE TABLE training_metrics (
  job_id      bigint      NOT NULL,
  step        integer     NOT NULL CHECK (step >= 0),
  metrics     jsonb       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, step)
);

-- Human-readable training events (started, checkpoint saved, eval done...).
CREATE TABLE training_events (
  id          bigserial   PRIMARY KEY,
  job_id      bigint      NOT NULL,
  level       text        NOT NULL DEFAULT 'info' CHECK (level IN ('debug', 'info', 'warn', 'error')),
  message     text        NOT NULL,
  data        jsonb       NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX training_events_job_idx ON training_events (job_id, id);

-- Evaluation results: one model version on one suite and target.
CREATE TABLE evaluations (
  id          bigserial   PRIMARY KEY,
  job_id      bigint      NOT NULL UNIQUE,
  model_id    bigint      NOT NULL REFERENCES models (id),
  suite       text        NOT NULL,
  target      text        NOT NULL DEFAULT 'opencl',
  device      text        NOT NULL DEFAULT '',
  metrics     jsonb       NOT NULL DEFAULT '{}',  -- compile_rate, fast_0, fast_1, fast_1_5, fast_2, geomean_speedup
  tasks       jsonb       NOT NULL DEFAULT '[]',  -- per task rows
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluations_model_idx ON evaluations (model_id, suite, target, id DESC);

-- API tokens: only the sha256 of the secret is stored; prefix helps people tell them apart.
CREATE TABLE api_tokens (
  id            bigserial   PRIMARY KEY,
  name          text        NOT NULL DEFAULT '',
  token_sha256  text        NOT NULL UNIQUE,
  prefix        text        NOT NULL,
  scopes        text[]      NOT NULL CHECK (scopes <@ ARRAY['submit', 'admin']::text[]),
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);

-- Idempotency-Key records: the first response to (principal, method, path, key)
-- is replayed for a repeat with the same body; a different body is refused.
CREATE TABLE idempotency_records (
  principal     text        NOT NULL,   -- token id, or 'anonymous'
  method        text        NOT NULL,
  path          text        NOT NULL,
  key           text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_sha256 text       NOT NULL,
  status        integer     NOT NULL,
  content_type  text        NOT NULL,
  body          text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal, method, path, key)
);
CREATE INDEX idempotency_records_created_idx ON idempotency_records (created_at);

-- Best correct, unflagged kernel per (op, target, device).
CREATE VIEW leaderboard_ops AS
SELECT DISTINCT ON (c.op_id, c.target, c.device)
       c.op_id, o.name AS op_name, c.target, c.device, c.id AS candidate_id, c.job_id, c.model_id,
       c.speedup, c.kernel_ms, c.baseline_ms, c.created_at
FROM candidates c JOIN ops o ON o.id = c.op_id
WHERE c.outcome = 'correct' AND NOT c.flagged
ORDER BY c.op_id, c.target, c.device, c.speedup DESC, c.id;

-- Latest evaluation per (model version, suite, target).
CREATE VIEW leaderboard_models AS
SELECT DISTINCT ON (e.model_id, e.suite, e.target)
       e.model_id, m.name AS model_name, m.version AS model_version, e.suite, e.target, e.device,
       e.id AS evaluation_id, e.job_id, e.metrics, e.created_at
FROM evaluations e JOIN models m ON m.id = e.model_id
ORDER BY e.model_id, e.suite, e.target, e.id DESC;
