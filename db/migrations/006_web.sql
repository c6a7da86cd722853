-- What the web UI reads that 003 did not keep (issue #19): an op's suite level
-- (1 single ops, 2 fusions; NULL for ops submitted without one), and an index for
-- listing every candidate of one op (the op page). Tested by tests/server/api_web_test.cpp.
ALTER TABLE ops ADD COLUMN level smallint CHECK (level BETWEEN 1 AND 9);
CREATE INDEX candidates_op_idx ON candidates (op_id, id);
