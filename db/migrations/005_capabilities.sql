-- What a job needs of the worker that runs it, and what each worker offers, as tags
-- ('target:triton', 'device:gpu'): a worker claims a job only when its capabilities
-- contain every tag the job requires (requires <@ capabilities). A job with no
-- requirements runs anywhere. Tested by tests/db/queue_test.cpp (capability routing).
ALTER TABLE jobs ADD COLUMN requires text[] NOT NULL DEFAULT '{}';
ALTER TABLE workers ADD COLUMN capabilities text[] NOT NULL DEFAULT '{}';
