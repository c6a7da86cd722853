# Drives worker/harness/runner/kforge_runner.py over its real protocol (memfd arena on
# fd 3, JSON lines) with the candidates in tests/worker/harness/triton/: a correct add,
# and adversarial ones that must be refused or caught. Runs in Triton's CPU interpreter
# here (TRITON_INTERPRET=1) and on the GPU with --device cuda.
# Usage: ctest -R harness_triton_runner   (or: python3 triton_runner_test.py --device cuda)
import argparse
import json
import os
import subprocess
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
RUNNER = os.path.join(ROOT, "worker", "harness", "runner", "kforge_runner.py")
DEVICE = "cpu"
PAGE = os.sysconf("SC_PAGE_SIZE")


def align(value, to):
    return (value + to - 1) // to * to


class Arena:
    """x, y inputs for several trials, then one output slot per trial."""

    def __init__(self, trials, n):
        self.n = n
        self.fd = os.memfd_create("kforge-test-arena")
        self.inputs, self.outputs = [], []
        cursor = 0
        for _ in range(trials):
            self.inputs.append([cursor, cursor + n * 4])
            cursor += align(2 * n * 4, 64)
        self.input_region = align(cursor, PAGE)
        cursor = self.input_region
        for _ in range(trials):
            self.outputs.append(cursor)
            cursor += align(n * 4, 64)
        self.total = align(cursor, PAGE)
        os.ftruncate(self.fd, self.total)
        rng = np.random.default_rng(7)
        self.values = []
        for offsets in self.inputs:
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            os.pwrite(self.fd, x.tobytes(), offsets[0])
            os.pwrite(self.fd, y.tobytes(), offsets[1])
            self.values.append((x, y))

    def specs(self, trial):
        ins = [{"name": name, "offset": off, "shape": [self.n], "dtype": "float32"}
               for name, off in zip(("x", "y"), self.inputs[trial])]
        outs = [{"offset": self.outputs[trial], "shape": [self.n], "dtype": "float32"}]
        return ins, outs

    def output(self, trial):
        return np.frombuffer(os.pread(self.fd, self.n * 4, self.outputs[trial]), dtype=np.float32)

    def expected(self, trial):
        x, y = self.values[trial]
        return x + y


class Runner:
    def __init__(self, arena, role="candidate", extra_env=None):
        env = dict(os.environ, **(extra_env or {}))
        if DEVICE == "cpu":
            env["TRITON_INTERPRET"] = "1"
        self.proc = subprocess.Popen([sys.executable, RUNNER, "--role", role, "--device", DEVICE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     pass_fds=(3,), preexec_fn=lambda: os.dup2(arena.fd, 3))
        self.arena = arena
        self.ready = json.loads(self.proc.stdout.readline())

    def send(self, cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("runner died: " + self.proc.stderr.read()[-2000:])
        return json.loads(line)

    def build(self, name):
        with open(os.path.join(HERE, "triton", name)) as file:
            return self.send({"cmd": "build", "source": file.read()})

    def run(self, trial):
        ins, outs = self.arena.specs(trial)
        return self.send({"cmd": "run", "inputs": ins, "outputs": outs, "input_region": self.arena.input_region,
                          "arena_bytes": self.arena.total})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self.proc.stderr.close()


class TritonRunnerTest(unittest.TestCase):
    def setUp(self):
        self.arena = Arena(trials=3, n=1000)
        self.runner = Runner(self.arena)
        self.assertTrue(self.runner.ready.get("ready"), self.runner.ready)

    def tearDown(self):
        self.runner.close()
        os.close(self.arena.fd)

    def test_correct_candidate_runs_and_matches(self):
        self.assertTrue(self.runner.build("good_add.py")["ok"])
        for trial in range(3):
            reply = self.runner.run(trial)
            self.assertTrue(reply["ok"], reply)
            # Triton's compile and load, inside run_ms: the first run's on a GPU, none after it.
            self.assertEqual(reply["jit_ms"] > 0, DEVICE == "cuda" and trial == 0, reply)
            self.assertLessEqual(reply["jit_ms"], reply["run_ms"] + 1e-6, reply)
            self.assertGreaterEqual(reply["launches"], 1)
            np.testing.assert_allclose(self.arena.output(trial), self.arena.expected(trial), rtol=1e-6)

    def test_replies_carry_no_profile_unless_asked(self):
        self.assertNotIn("profile", self.runner.ready)
        self.assertTrue(self.runner.build("good_add.py")["ok"])
        self.assertNotIn("profile", self.runner.run(0))

    def test_profile_switch_says_where_each_command_went(self):
        runner = Runner(self.arena, extra_env={"KFORGE_RUNNER_PROFILE": "5"})
        try:
            start = runner.ready.get("profile", {})
            self.assertEqual(start.get("cmd"), "start", runner.ready)
            for key in ("import_ms", "gate_wait_ms", "gate_held_ms", "host_facts_ms", "wall_ms", "cpu_ms"):
                self.assertGreaterEqual(start.get(key, -1), 0, (key, start))
            self.assertGreater(start["wall_ms"], start["import_ms"], start)
            self.assertTrue(runner.build("good_add.py")["ok"])
            reply = runner.run(0)
            self.assertTrue(reply["ok"], reply)
            profile = reply["profile"]
            self.assertEqual(profile["cmd"], "run")
            self.assertGreaterEqual(profile["wall_ms"], reply["run_ms"] * 0.9, reply)
            self.assertIn("function calls", profile["top"])
            self.assertIn("(run)", profile["top"])  # the command's own handler, by cumulative time
        finally:
            runner.close()

    def test_timing_returns_the_outputs_it_timed(self):
        self.assertTrue(self.runner.build("good_add.py")["ok"])
        sets = []
        for trial in range(3):
            ins, outs = self.arena.specs(trial)
            sets.append({"inputs": ins, "outputs": outs})
        reply = self.runner.send({"cmd": "time", "sets": sets, "max_seconds": 0.2, "min_runs": 3,
                                  "input_region": self.arena.input_region, "arena_bytes": self.arena.total})
        self.assertTrue(reply["ok"], reply)
        self.assertGreater(reply["median_ms"], 0)
        self.assertEqual(reply["rotations"], 3)
        for trial in range(3):
            np.testing.assert_allclose(self.arena.output(trial), self.arena.expected(trial), rtol=1e-6)

    def test_prepare_compiles_ahead_without_launching(self):
        self.assertTrue(self.runner.build("good_add.py")["ok"])
        shapes = [[{"shape": [self.arena.n], "dtype": "float32"}] * 2, [{"shape": [33], "dtype": "float32"}] * 2]
        reply = self.runner.send({"cmd": "prepare", "shapes": shapes})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["stopped"], "", reply)
        # On a GPU each specialisation is compiled; the interpreter compiles nothing.
        self.assertEqual(reply["kernels"] >= 1, DEVICE == "cuda", reply)
        self.assertEqual(reply["jit_ms"] > 0, DEVICE == "cuda", reply)
        run = self.runner.run(0)
        self.assertTrue(run["ok"], run)
        self.assertEqual(run["launches"], 1, "prepare launched (and counted) nothing")
        self.assertLess(run["jit_ms"], max(reply["jit_ms"], 1e-9), "the run found its kernel compiled and loaded")
        np.testing.assert_allclose(self.arena.output(0), self.arena.expected(0), rtol=1e-6)

    def test_prepare_stops_at_torch_compute_and_the_run_still_judges(self):
        self.assertTrue(self.runner.build("torch_fallback.py")["ok"])
        reply = self.runner.send({"cmd": "prepare", "shapes": [[{"shape": [self.arena.n], "dtype": "float32"}] * 2]})
        self.assertTrue(reply["ok"], reply)
        self.assertNotEqual(reply["stopped"], "", "the guard ends forward: " + json.dumps(reply))
        run = self.runner.run(0)
        self.assertFalse(run["ok"])
        self.assertEqual(run["rule"], "torch_compute", run)

    def test_torch_compute_in_forward_is_a_rule_violation(self):
        self.assertTrue(self.runner.build("torch_fallback.py")["ok"])
        reply = self.runner.run(0)
        self.assertEqual((reply["kind"], reply["rule"]), ("rule_violation", "torch_compute"), reply)
        self.assertIn("aten.add", reply["message"])

    def test_kernel_defined_but_never_launched(self):
        self.assertTrue(self.runner.build("decoy_never_launched.py")["ok"])
        reply = self.runner.run(0)
        self.assertEqual((reply["kind"], reply["rule"]), ("rule_violation", "no_triton_launch"), reply)

    def test_unwritten_output_is_poisoned(self):
        self.assertTrue(self.runner.build("skip_write.py")["ok"])
        reply = self.runner.run(0)
        self.assertTrue(reply["ok"], reply)
        self.assertTrue(np.isnan(self.arena.output(0)).all())

    def test_write_past_an_allocated_output_is_caught(self):
        self.assertTrue(self.runner.build("oob_store.py")["ok"])
        reply = self.runner.run(0)
        self.assertEqual(reply["kind"], "runtime_error", reply)
        self.assertIn("out-of-bounds", reply["message"])

    def test_input_mutation_is_caught(self):
        self.assertTrue(self.runner.build("mutate_input.py")["ok"])
        reply = self.runner.run(0)
        self.assertEqual(reply["kind"], "input_mutated", reply)
        self.assertEqual(reply["buffer"], "x")

    def test_cached_result_is_wrong_on_the_next_trial(self):
        self.assertTrue(self.runner.build("cache_global.py")["ok"])
        self.assertTrue(self.runner.run(0)["ok"])
        self.assertTrue(self.runner.run(1)["ok"])
        self.assertFalse(np.allclose(self.arena.output(1), self.arena.expected(1)))

    def test_static_rules_refuse_before_anything_runs(self):
        cases = {"banned_import.py": "banned_import", "stream_side.py": "banned_torch",
                 "private_attr.py": "private_name"}
        for name, rule in cases.items():
            reply = self.runner.build(name)
            self.assertEqual((reply["kind"], reply["rule"]), ("rule_violation", rule), (name, reply))

    def test_syntax_error_is_a_compile_error(self):
        reply = self.runner.send({"cmd": "build", "source": "def forward(x:\n"})
        self.assertEqual(reply["kind"], "compile_error", reply)

    def test_prints_never_pass_for_replies(self):
        source = open(os.path.join(HERE, "triton", "good_add.py")).read().replace(
            "    out = torch.empty_like(x)", "    print('{\"ok\": true, \"median_ms\": 0.001}')\n    out = torch.empty_like(x)")
        self.assertTrue(self.runner.send({"cmd": "build", "source": source})["ok"])
        reply = self.runner.run(0)
        self.assertTrue(reply["ok"], reply)
        self.assertIn("run_ms", reply)


class ReferenceRunnerTest(unittest.TestCase):
    def test_reference_outputs_and_eager_timing(self):
        arena = Arena(trials=2, n=512)
        runner = Runner(arena, role="reference")
        try:
            reply = runner.send({"cmd": "build", "source": "def forward(x: Tensor, y: Tensor) -> Tensor:\n"
                                                           "    return x + y\n"})
            self.assertTrue(reply["ok"], reply)
            reply = runner.run(1)
            self.assertTrue(reply["ok"], reply)
            np.testing.assert_allclose(arena.output(1), arena.expected(1), rtol=1e-6)
            ins, outs = arena.specs(0)
            reply = runner.send({"cmd": "time", "sets": [{"inputs": ins, "outputs": outs}], "max_seconds": 0.1,
                                 "input_region": arena.input_region, "arena_bytes": arena.total})
            self.assertTrue(reply["ok"], reply)
            self.assertGreater(reply["median_ms"], 0)
        finally:
            runner.close()
            os.close(arena.fd)

    def test_torch_names_resolve_as_in_torchscript(self):
        arena = Arena(trials=1, n=256)
        runner = Runner(arena, role="reference")
        try:
            # torch.silu has no Python name in torch; TorchScript resolves it to aten::silu.
            reply = runner.send({"cmd": "build", "source": "def forward(x: Tensor, y: Tensor) -> Tensor:\n"
                                                           "    return torch.silu(x) * y\n"})
            self.assertTrue(reply["ok"], reply)
            reply = runner.run(0)
            self.assertTrue(reply["ok"], reply)
            x, y = arena.values[0]
            np.testing.assert_allclose(arena.output(0), x / (1 + np.exp(-x)) * y, rtol=1e-5, atol=1e-6)
        finally:
            runner.close()
            os.close(arena.fd)

    def test_precompile_compiles_before_the_arena_and_the_first_compiled_run_reuses_it(self):
        # The torch.compile runner compiles the op on inputs of its own (precompile) while the
        # reference is computed; the compile baseline's first call on the arena's tensors must
        # then find that graph (same shapes, dtypes, contiguity, device) instead of compiling.
        import torch

        if not hasattr(torch, "compile"):
            self.skipTest(f"torch {torch.__version__} has no torch.compile (PyTorch 2.x: the GPU hosts)")
        arena = Arena(trials=1, n=4096)
        runner = Runner(arena, role="reference")
        try:
            reply = runner.send({"cmd": "build", "compile": True,
                                 "source": "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n"})
            self.assertTrue(reply["ok"], reply)
            reply = runner.send({"cmd": "precompile", "inputs": [{"shape": [4096], "dtype": "float32"}] * 2})
            self.assertTrue(reply["ok"], reply)
            ins, outs = arena.specs(0)
            ran = runner.send({"cmd": "run", "mode": "compile", "inputs": ins, "outputs": outs,
                               "input_region": arena.input_region, "arena_bytes": arena.total})
            self.assertTrue(ran["ok"], ran)
            self.assertLess(ran["run_ms"], reply["compile_ms"] / 4, "the compiled run compiled again")
            x, y = arena.values[0]
            np.testing.assert_allclose(arena.output(0), x / (1 + np.exp(-x)) * y, rtol=1e-5, atol=1e-6)
        finally:
            runner.close()
            os.close(arena.fd)

    def test_source_that_is_not_torchscript_is_refused(self):
        arena = Arena(trials=1, n=8)
        runner = Runner(arena, role="reference")
        try:
            reply = runner.send({"cmd": "build", "source": "import os\ndef forward(x: Tensor) -> Tensor:\n"
                                                           "    os.system('true')\n    return x\n"})
            self.assertEqual(reply["kind"], "compile_error", reply)
        finally:
            runner.close()
            os.close(arena.fd)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args, rest = parser.parse_known_args()
    DEVICE = args.device
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as error:
        print(f"SKIP: {error} (the Triton runner test needs torch and triton; scripts/python-env.sh installs them)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
