-- Benchmark data for bench/api/run.sh: 1,000 ops and 10,000 candidates (10 per
-- op over two devices, 7 correct), as the issue's leaderboard case asks.
INSERT INTO ops (name, source, spec, spec_sha256)
SELECT 'bench_op_' || g,
       E'def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n',
       '{"name": "bench"}'::jsonb, md5(g::text)
FROM generate_series(1, 1000) AS g;

INSERT INTO candidates (job_id, op_id, sample_idx, target, device, source, outcome, kernel_ms, baseline_ms, speedup)
SELECT o.id, o.id, s, 'opencl', CASE WHEN s % 2 = 0 THEN 'pocl-cpu' ELSE 'nvidia-h100' END,
       '__kernel void k(__global float* x) { x[get_global_id(0)] *= 2.0f; }',
       CASE WHEN s < 7 THEN 'correct' ELSE 'wrong_output' END,
       CASE WHEN s < 7 THEN 1.0 / (1 + s) END, CASE WHEN s < 7 THEN 1.0 END,
       CASE WHEN s < 7 THEN 1 + s + (o.id % 13) / 10.0 END
FROM ops o CROSS JOIN generate_series(0, 9) AS s;

ANALYZE ops;
ANALYZE candidates;
