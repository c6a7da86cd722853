-- Seeded data for the web UI's browser test (tests/web/browser_test.cpp runs it on
-- a fresh migrated database) and for docs/screenshots: suite ops at levels 1 and 2
-- plus one without a level, finished generations with candidates of every outcome on
-- two devices, two model versions with evaluations, and a finished GRPO run with
-- 80 steps of metrics, checkpoints and events. Run: scripts/test.sh build -R web_browser

-- Ops: name, level, source, inputs, output shape.
INSERT INTO ops (id, name, level, source, spec, spec_sha256, outputs)
SELECT v.id, v.name, v.level, v.source,
       jsonb_build_object('name', v.name, 'source', v.source, 'inputs', v.inputs::jsonb,
                          'extra_shapes', v.extra::jsonb, 'tolerance', jsonb_build_object('atol', v.atol, 'rtol', v.atol)),
       md5(v.name), jsonb_build_object('outputs', jsonb_build_array(jsonb_build_object('shape', v.out_shape::jsonb, 'dtype', 'float32')))
FROM (VALUES
  (1, 'relu', 1, E'def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n',
   '[{"name": "x", "shape": [4096, 2048], "dtype": "float32", "dist": "normal"}]', '[{"x": [1023, 777]}, {"x": [7, 33]}]', 1e-5, '[4096, 2048]'),
  (2, 'gelu', 1, E'def forward(x: Tensor) -> Tensor:\n    return torch.gelu(x)\n',
   '[{"name": "x", "shape": [4096, 2048], "dtype": "float32", "dist": "normal"}]', '[{"x": [1023, 777]}, {"x": [7, 33]}]', 1e-4, '[4096, 2048]'),
  (3, 'softmax_last', 1, E'def forward(x: Tensor) -> Tensor:\n    return torch.softmax(x, -1)\n',
   '[{"name": "x", "shape": [4096, 2048], "dtype": "float32", "dist": "normal"}]', '[{"x": [1023, 777]}, {"x": [7, 33]}]', 1e-4, '[4096, 2048]'),
  (4, 'matmul', 1, E'def forward(x: Tensor, w: Tensor) -> Tensor:\n    return torch.matmul(x, w)\n',
   '[{"name": "x", "shape": [1024, 1024], "dtype": "float32", "dist": "normal"}, {"name": "w", "shape": [1024, 1024], "dtype": "float32", "dist": {"uniform": [-0.03, 0.03]}}]',
   '[{"x": [127, 65], "w": [65, 33]}]', 1e-3, '[1024, 1024]'),
  (5, 'linear_gelu', 2, E'def forward(x: Tensor, w: Tensor, b: Tensor) -> Tensor:\n    return torch.gelu(torch.linear(x, w, b))\n',
   '[{"name": "x", "shape": [512, 1024], "dtype": "float32", "dist": "normal"}, {"name": "w", "shape": [1024, 1024], "dtype": "float32", "dist": {"uniform": [-0.03, 0.03]}}, {"name": "b", "shape": [1024], "dtype": "float32", "dist": {"uniform": [-0.03, 0.03]}}]',
   '[{"x": [127, 65], "w": [33, 65], "b": [33]}]', 1e-3, '[512, 1024]'),
  (6, 'silu_mul', 2, E'def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n',
   '[{"name": "x", "shape": [4096, 2048], "dtype": "float32", "dist": "normal"}, {"name": "y", "shape": [4096, 2048], "dtype": "float32", "dist": "uniform"}]',
   '[{"x": [1023, 777], "y": [1023, 777]}]', 1e-4, '[4096, 2048]'),
  (7, 'scaled_tanh', NULL, E'def forward(x: Tensor) -> Tensor:\n    return torch.tanh(x) * 0.5\n',
   '[{"name": "x", "shape": [2048, 2048], "dtype": "float32", "dist": "normal"}]', '[{"x": [1023, 777]}]', 1e-4, '[2048, 2048]')
) AS v(id, name, level, source, inputs, extra, atol, out_shape);
SELECT setval('ops_id_seq', 100);

-- Model versions: an SFT model and the GRPO model trained from it (job 902).
INSERT INTO models (id, name, version, state, metrics, training_job_id) VALUES
  (1, 'kforge-tiny', 1, 'ready', '{"method": "sft"}', 901),
  (2, 'kforge-tiny', 2, 'ready', '{"method": "grpo"}', 902);
SELECT setval('models_id_seq', 100);

-- Finished generate jobs, one per (op, device): ids 101...
INSERT INTO jobs (id, kind, state, args, progress, result, attempt, attempted_at, finished_at, created_at)
SELECT 100 + o.id * 2 + d.idx, 'generate', 'completed',
       jsonb_build_object('op_id', o.id, 'target', d.target, 'model', 'kforge-tiny', 'samples', 6, 'time_budget_s', 600, 'seed', 0),
       jsonb_build_object('phase', 'checking', 'checked', 6, 'total', 6),
       jsonb_build_object('checked', 6, 'proposed', 6, 'generator', 'teacher'),
       1, now() - interval '2 hours', now() - interval '100 minutes', now() - interval '2 hours'
FROM ops o CROSS JOIN (VALUES (0, 'opencl'), (1, 'cuda')) AS d(idx, target)
WHERE o.id <= 7;

-- Six candidates per job: two fail (compile, wrong output), four are correct with
-- speeds that depend on the op; one fast one on the GPU is flagged (never ranked).
INSERT INTO candidates (job_id, op_id, model_id, sample_idx, target, device, source, outcome, message,
                        kernel_ms, baseline_ms, speedup, flagged, details, created_at)
SELECT j.id, o.id, CASE WHEN s.idx = 5 AND o.id % 2 = 0 THEN 2 END, s.idx,
       CASE WHEN j.id % 2 = 0 THEN 'opencl' ELSE 'cuda' END,
       CASE WHEN j.id % 2 = 0 THEN 'pthread-haswell-AMD EPYC 7B13' ELSE 'NVIDIA H100 80GB HBM3' END,
       format(E'// kforge-launch: %s_rows grid=cdiv(numel(x),%s) block=%s args=x,out,numel(x)\n'
              '%s %s_rows(%s float* x, %s float* out, int n) {\n'
              '  int i = %s;\n'
              '  if (i < n) {\n'
              '    float v = x[i];\n'
              '    out[i] = %s;\n'
              '  }\n'
              '}\n', o.name, 128 << s.idx % 3, 128 << s.idx % 3,
              CASE WHEN j.id % 2 = 0 THEN '__kernel void' ELSE 'extern "C" __global__ void' END, o.name,
              CASE WHEN j.id % 2 = 0 THEN '__global const' ELSE 'const' END, CASE WHEN j.id % 2 = 0 THEN '__global' ELSE '' END,
              CASE WHEN j.id % 2 = 0 THEN 'get_global_id(0)' ELSE 'blockIdx.x * blockDim.x + threadIdx.x' END,
              CASE o.name WHEN 'relu' THEN 'fmaxf(v, 0.0f)' WHEN 'gelu' THEN '0.5f * v * (1.0f + erff(v * 0.70710678f))'
                          ELSE 'v /* ' || o.name || ' */' END),
       CASE s.idx WHEN 0 THEN 'compile_error' WHEN 1 THEN 'wrong_output' ELSE 'correct' END,
       CASE s.idx WHEN 0 THEN 'compile error: line 6: use of undeclared identifier ''y'''
                  WHEN 1 THEN 'wrong output on trial 2 (shape 1023x777): max abs error 0.31 at [12, 7], atol 1e-05'
                  ELSE '' END,
       CASE WHEN s.idx >= 2 THEN round((1.0 / (0.6 + 0.25 * s.idx + 0.1 * o.id))::numeric, 4) END,
       CASE WHEN s.idx >= 2 THEN 1.0 END,
       CASE WHEN s.idx >= 2 THEN round((0.6 + 0.25 * s.idx + 0.1 * o.id)::numeric, 3)
                                 * CASE WHEN j.id % 2 = 1 THEN 1.4 ELSE 1.0 END END,
       j.id % 2 = 1 AND s.idx = 5,
       jsonb_build_object('generator', CASE WHEN s.idx = 5 AND o.id % 2 = 0 THEN 'policy' ELSE 'teacher' END,
                          'generator_detail', format('block=%s', 128 << s.idx % 3)),
       now() - interval '100 minutes' - (6 - s.idx) * interval '10 seconds'
FROM jobs j JOIN ops o ON o.id = (j.args->>'op_id')::bigint
CROSS JOIN generate_series(0, 5) AS s(idx)
WHERE j.kind = 'generate';

-- One op where PyTorch eager wins: scaled_tanh's only kernel on a slow CPU runs at 0.2x
-- eager, so the leaderboard ranks eager first and says so (issue 14).
INSERT INTO candidates (job_id, op_id, sample_idx, target, device, source, outcome, message,
                        kernel_ms, baseline_ms, speedup, flagged, details, created_at)
VALUES (114, 7, 6, 'opencl', 'pthread-slow-box',
        E'// kforge-launch: scaled_tanh_rows grid=cdiv(numel(x),64) block=64 args=x,out,numel(x)\n__kernel void scaled_tanh_rows(__global const float* x, __global float* out, int n) {\n  int i = get_global_id(0);\n  if (i < n) out[i] = tanh(x[i]) * 0.5f;\n}\n',
        'correct', '', 5.0, 1.0, 0.2, false, '{"generator": "teacher"}', now() - interval '90 minutes');

-- Training runs: SFT (901) then GRPO (902) from its model, both finished.
INSERT INTO jobs (id, kind, state, args, progress, result, attempt, max_attempts, attempted_at, finished_at, created_at) VALUES
  (901, 'train_sft', 'completed',
   '{"method": "sft", "suite": "builtin", "output_model": "kforge-tiny", "hyperparameters": {"epochs": 3, "learning_rate": 0.0003}}',
   '{"phase": "training", "step": 60, "total_steps": 60}', '{"model_id": 1, "model": "kforge-tiny@1"}',
   1, 3, now() - interval '5 hours', now() - interval '4 hours', now() - interval '5 hours'),
  (902, 'train_grpo', 'completed',
   '{"method": "grpo", "suite": "builtin", "base_model": "kforge-tiny@1", "base_model_id": 1, "output_model": "kforge-tiny", "hyperparameters": {"steps": 80, "learning_rate": 1e-05, "group_size": 8, "kl_coef": 0.02}}',
   '{"phase": "training", "step": 80, "total_steps": 80}', '{"model_id": 2, "model": "kforge-tiny@2", "steps": 80}',
   1, 3, now() - interval '4 hours', now() - interval '3 hours', now() - interval '4 hours');

INSERT INTO training_metrics (job_id, step, metrics)
SELECT 901, step, jsonb_build_object('step', step, 'total_steps', 60, 'loss', round((2.4 * exp(-step / 18.0) + 0.35 + 0.05 * sin(step))::numeric, 4),
                                     'lr', 0.0003, 'grad_norm', round((1.5 * exp(-step / 30.0) + 0.2)::numeric, 3))
FROM generate_series(1, 60) AS step;

INSERT INTO training_metrics (job_id, step, metrics)
SELECT 902, step, jsonb_build_object(
         'step', step, 'samples', 32,
         'loss', round((0.08 * sin(step / 3.0) - 0.01 * step / 80.0)::numeric, 4),
         'reward_mean', round((0.35 + 0.45 * (1 - exp(-step / 25.0)) + 0.04 * sin(step))::numeric, 4),
         'correct_rate', round((0.22 + 0.38 * (1 - exp(-step / 30.0)) + 0.03 * cos(step))::numeric, 4),
         'mean_speedup_correct', round((0.9 + 0.5 * (1 - exp(-step / 40.0)) + 0.05 * sin(step / 2.0))::numeric, 4),
         'kl', round((0.002 * step * exp(-step / 60.0))::numeric, 5),
         'rule_violation_rate', round((0.12 * exp(-step / 20.0) + 0.01)::numeric, 4),
         'lr', 1e-05)
FROM generate_series(1, 80) AS step;

INSERT INTO training_events (job_id, level, message, data, created_at) VALUES
  (901, 'info', 'started', '{"attempt": 1}', now() - interval '5 hours'),
  (901, 'info', 'checkpoint 60 registered as kforge-tiny@1', '{"step": 60, "model_id": 1, "path": "var/models/kforge-tiny/1"}', now() - interval '4 hours'),
  (901, 'info', 'finished', '{"model_id": 1, "steps": 60}', now() - interval '4 hours'),
  (902, 'info', 'started', '{"attempt": 1, "base_model_id": 1}', now() - interval '4 hours'),
  (902, 'warn', 'group dropped: zero reward variance', '{"step": 12}', now() - interval '230 minutes'),
  (902, 'info', 'checkpoint 40 registered as kforge-tiny@2', '{"step": 40, "model_id": 2, "path": "var/models/kforge-tiny/2"}', now() - interval '200 minutes'),
  (902, 'info', 'finished', '{"model_id": 2, "steps": 80}', now() - interval '3 hours');

-- Evaluations of both versions on the held-out split.
INSERT INTO jobs (id, kind, state, args, progress, result, attempt, attempted_at, finished_at, created_at) VALUES
  (951, 'evaluate', 'completed', '{"model": "kforge-tiny@1", "model_id": 1, "suite": "heldout", "target": "opencl"}', '{}', '{}',
   1, now() - interval '4 hours', now() - interval '230 minutes', now() - interval '4 hours'),
  (952, 'evaluate', 'completed', '{"model": "kforge-tiny@2", "model_id": 2, "suite": "heldout", "target": "opencl"}', '{}', '{}',
   1, now() - interval '3 hours', now() - interval '170 minutes', now() - interval '3 hours');
INSERT INTO evaluations (job_id, model_id, suite, target, device, metrics) VALUES
  (951, 1, 'heldout', 'opencl', 'pthread-haswell-AMD EPYC 7B13',
   '{"compile_rate": 0.62, "fast_0": 0.21, "fast_1": 0.07, "fast_1_5": 0.03, "fast_2": 0.0, "geomean_speedup": 0.81}'),
  (952, 2, 'heldout', 'opencl', 'pthread-haswell-AMD EPYC 7B13',
   '{"compile_rate": 0.79, "fast_0": 0.276, "pass_at_1": 0.276, "fast_1": 0.086, "fast_1_5": 0.034, "fast_2": 0.017,
     "geomean_speedup": 0.93, "rule_violation_rate": 0.384, "fast_1_vs_compile": null,
     "intervals": {"fast_0": [0.14, 0.46], "pass_at_1": [0.14, 0.46], "fast_1": [0.02, 0.22], "rule_violation_rate": [0.25, 0.52]}}');

SELECT setval('jobs_id_seq', 1000);
ANALYZE;
