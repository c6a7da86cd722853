-- Workers: one row per kforge-worker process, refreshed by its heartbeat.
CREATE TABLE workers (
  id            bigserial PRIMARY KEY,
  host          text        NOT NULL,
  pid           integer     NOT NULL,
  device        text        NOT NULL DEFAULT '',
  version       text        NOT NULL DEFAULT '',
  slots         integer     NOT NULL DEFAULT 1 CHECK (slots > 0),
  state         text        NOT NULL DEFAULT 'idle' CHECK (state IN ('idle', 'busy', 'stopping', 'stopped')),
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  stopped_at    timestamptz
);
CREATE INDEX workers_heartbeat_idx ON workers (heartbeat_at) WHERE stopped_at IS NULL;
