# The Inductor rewriter (worker/harness/runner/inductor_rewrite.py) on fixtures of TorchInductor's
# CUDA output (tests/worker/harness/inductor/): the candidates it writes pass the runner's static
# rules, launch every kernel with the autotuned config, and an extern mm or a torch fallback is
# refused with the reason. No torch needed. Usage: ctest -R harness_inductor_rewrite
# (or: python3 tests/worker/harness/inductor_rewrite_test.py).
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "worker", "harness", "runner"))

import inductor_rewrite  # noqa: E402
from triton_rules import check_module  # noqa: E402

FIXTURES = os.path.join(HERE, "inductor")
CASES = json.load(open(os.path.join(FIXTURES, "cases.json")))


def fixture(name):
    with open(os.path.join(FIXTURES, CASES[name]["fixture"])) as file:
        return file.read()


def rewrite(name, code=None, **changes):
    case = dict(CASES[name], **changes)
    return inductor_rewrite.rewrite(code if code is not None else fixture(name), case["inputs"], case["bindings"],
                                    case["configs"], "# harvested for a test\n")


class RewriteTest(unittest.TestCase):
    def test_candidates_pass_the_runners_rules(self):
        for name, case in CASES.items():
            if case["expect"] != "candidate":
                continue
            with self.subTest(name):
                source = rewrite(name)
                check_module(source)  # raises RuleViolation on anything the runner would refuse
                self.assertNotIn("triton_heuristics", source)
                self.assertNotIn("async_compile", source)
                self.assertNotIn("empty_strided_cuda", source)
                self.assertIn(f"def forward({', '.join(case['inputs'])}):", source)
                self.assertTrue(source.startswith("# harvested for a test\n"))

    def test_pointwise_launch_fixes_the_autotuned_config(self):
        source = rewrite("silu_mul")
        self.assertIn("triton_poi_fused_mul_silu_0[(triton.cdiv(triton_poi_fused_mul_silu_0_xnumel, 1024),)]"
                      "(arg2_1, arg3_1, buf0, triton_poi_fused_mul_silu_0_xnumel, XBLOCK=1024, num_warps=4, "
                      "num_stages=1)", source)
        # Sizes come from the inputs, so the module holds for any shape.
        self.assertIn("arg0_1 = x.size(0)", source)
        self.assertIn("arg1_1 = x.size(1)", source)
        self.assertIn("torch.empty_strided((s77, s27), (s27, 1), dtype=torch.float32, device=device)", source)

    def test_reduction_uses_kforge_helpers_and_public_names(self):
        source = rewrite("row_softmax")
        self.assertNotIn("triton_helpers", source)
        self.assertNotIn("tl_math", source)
        self.assertIn("def ih_maximum(a, b):", source)
        self.assertIn("def ih_max2(a, dim):", source)
        self.assertNotIn(" _tmp", source)
        self.assertIn("ind_tmp2 = tl.full([XBLOCK, R0_BLOCK]", source)
        self.assertIn("XBLOCK=1, R0_BLOCK=128, num_warps=2", source)

    def test_extern_matmul_is_refused_with_the_reason(self):
        with self.assertRaises(inductor_rewrite.Refused) as refused:
            rewrite("linear_gelu")
        self.assertIn("extern_kernels.mm", str(refused.exception))
        self.assertIn("cuBLAS", str(refused.exception))

    def test_torch_fallback_is_refused(self):
        code = fixture("silu_mul").replace(
            "            del arg2_1\n", "            buf1 = torch.ops.aten.sum.default(buf0)\n            del arg2_1\n")
        with self.assertRaises(inductor_rewrite.Refused) as refused:
            rewrite("silu_mul", code)
        self.assertIn("torch fallback", str(refused.exception))

    def test_missing_config_and_wrong_bindings_are_refused(self):
        with self.assertRaises(inductor_rewrite.Refused) as refused:
            rewrite("silu_mul", configs={})
        self.assertIn("no autotuned config", str(refused.exception))
        with self.assertRaises(inductor_rewrite.Refused) as refused:
            rewrite("silu_mul", bindings=[{"input": "x"}])
        self.assertIn("unpacks 4 arguments", str(refused.exception))

    def test_unknown_helper_is_refused(self):
        code = fixture("row_softmax").replace("triton_helpers.max2(_tmp2, 1)", "triton_helpers.online_softmax_reduce(_tmp2, 1)")
        with self.assertRaises(inductor_rewrite.Refused) as refused:
            rewrite("row_softmax", code)
        self.assertIn("online_softmax_reduce", str(refused.exception))

    def test_command_line_replies_in_json(self):
        import subprocess

        request = dict(CASES["linear_gelu"], code=fixture("linear_gelu"))
        out = subprocess.run([sys.executable, os.path.join(ROOT, "worker", "harness", "runner", "inductor_rewrite.py")],
                             input=json.dumps(request), capture_output=True, text=True, check=True)
        reply = json.loads(out.stdout)
        self.assertFalse(reply["ok"])
        self.assertIn("extern_kernels.mm", reply["reason"])


class _Source:
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name


class _Node:
    def __init__(self, name, source):
        self.op, self.name = "placeholder", name
        self.meta = {"grapharg": type("GraphArg", (), {"source": _Source(source)})()}


class _Graph:
    def __init__(self, sources):
        self.graph = type("Graph", (), {"nodes": [_Node(f"arg{i}", s) for i, s in enumerate(sources)]})()


class PlaceholderBindingsTest(unittest.TestCase):
    """Graph inputs named by the op's input names (L['x']) or by position through a wrapper's
    *args (L['args'][0], as torch 2.11 traces the op's forward); anything else is refused."""

    def test_named_and_positional_sources_bind_to_op_inputs(self):
        from inductor_harvest import placeholder_bindings
        self.assertEqual(placeholder_bindings(_Graph(["L['x']", "L['x'].size()[0]", "L['y'].stride()[1]"]), ["x", "y"]),
                         [{"input": "x"}, {"size": ["x", 0]}, {"stride": ["y", 1]}])
        self.assertEqual(placeholder_bindings(_Graph(["L['args'][1].size()[0]", "L['args'][0]", "L['args'][1]"]),
                                              ["x", "y"]),
                         [{"size": ["y", 0]}, {"input": "x"}, {"input": "y"}])

    def test_other_sources_are_refused(self):
        from inductor_harvest import placeholder_bindings
        for source in ("L['args'][2]", "L['z']", "L['self'].weight", "G['table']"):
            with self.subTest(source), self.assertRaises(inductor_rewrite.Refused):
                placeholder_bindings(_Graph([source]), ["x", "y"])


class CachingAutotuner:
    """Stands in for Inductor's kernel object: a name, and its launchers' configs."""

    def __init__(self, name, block):
        config = type("Config", (), {"kwargs": {"XBLOCK": block}, "num_warps": 4, "num_stages": 1})()
        self.inductor_meta = {"kernel_name": name}
        self.launchers = [type("Launcher", (), {"config": config})()]


class AutotunedConfigsTest(unittest.TestCase):
    """Where PyCodeCache keeps no wrapper module (torch 2.11), a kernel's config comes from the
    kernel objects the harvest's compile made, never from an older one of the same name (the
    compile baseline's, compiled for static shapes)."""

    def test_the_kernel_made_by_this_compile_gives_the_config(self):
        from inductor_harvest import autotuned_configs, live_autotuners
        baseline = CachingAutotuner("triton_poi_fused_mul_silu_0", 1024)
        before = {id(tuner) for tuner in live_autotuners()}
        self.assertIn(id(baseline), before)
        harvested = CachingAutotuner("triton_poi_fused_mul_silu_0", 256)
        configs = autotuned_configs(["triton_poi_fused_mul_silu_0", "triton_red_other_1"], before)
        self.assertEqual(configs, {"triton_poi_fused_mul_silu_0": {"kwargs": {"XBLOCK": 256}, "num_warps": 4,
                                                                   "num_stages": 1, "autotuned": True}})
        self.assertEqual(autotuned_configs(["triton_poi_fused_mul_silu_0"], before | {id(harvested)}), {})
        del baseline, harvested


if __name__ == "__main__":
    unittest.main()
