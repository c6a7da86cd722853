# TorchInductor as a teacher (issue 16): compiles an op with torch.compile (default mode,
# dynamic shapes, so the kernels take sizes as arguments and hold for the checker's odd
# shapes), captures the Python wrapper Inductor generates and the config each kernel was
# autotuned to, and rewrites them into a kforge triton candidate (inductor_rewrite.py).
# Runs in the reference runner on a GPU host ({"cmd": "harvest"}); needs torch >= 2.x.
# Test: ctest -R harness_inductor_harvest_gpu (label gpu; skipped without a CUDA device).
import hashlib
import re

from inductor_rewrite import Refused, rewrite

# Inductor settings the harvest compiles under (each only where this torch has it): no
# caches (so the wrapper is generated, not loaded), and softmax as the classic three loops
# (online softmax calls helpers kforge has no version of).
HARVEST_INDUCTOR_CONFIG = {"force_disable_caches": True, "online_softmax": False}
# A graph input is an op input by name (L['x']) or, where Dynamo traced through a wrapper that
# takes *args (torch 2.11 does for the op's forward), by position (L['args'][0]); either way
# optionally one of its sizes or strides.
SOURCE_PATTERN = re.compile(r"^L\['(\w+)'\](?:\[(\d+)\])?(?:\.(size|stride)\(\)\[(\d+)\])?$")


def source_name(source):
    """Dynamo's name of a graph input's source ("L['x']", "L['x'].size()[0]")."""
    name = getattr(source, "name", "")
    return name() if callable(name) else str(name)


def placeholder_bindings(gm, input_names):
    """What each argument of the compiled graph (= of Inductor's call(args)) is, in order."""
    bindings = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        grapharg = node.meta.get("grapharg")
        name = source_name(getattr(grapharg, "source", None)) if grapharg is not None else ""
        match = SOURCE_PATTERN.match(name)
        input_name = None
        if match and match.group(2) is None and match.group(1) in input_names:
            input_name = match.group(1)
        elif match and match.group(1) == "args" and match.group(2) is not None and int(match.group(2)) < len(input_names):
            input_name = input_names[int(match.group(2))]  # the forward is called with the inputs in order
        if input_name is None:
            raise Refused(f"graph input {node.name} comes from '{name}', not from an op input or its sizes")
        if match.group(3):
            bindings.append({match.group(3): [input_name, int(match.group(4))]})
        else:
            bindings.append({"input": input_name})
    return bindings


def kernel_names(code):
    return re.findall(r"^(\w+) = async_compile\.triton\('", code, re.M)


def config_of(launchers):
    config = launchers[0].config
    return {"kwargs": {k: int(v) for k, v in config.kwargs.items() if isinstance(v, int)},
            "num_warps": int(config.num_warps), "num_stages": int(config.num_stages),
            "autotuned": len(launchers) == 1}


def live_autotuners():
    """Every Inductor kernel object (CachingAutotuner or a subclass) alive in this process."""
    import gc

    return [o for o in gc.get_objects()
            if any(c.__name__ == "CachingAutotuner" for c in type(o).__mro__) and hasattr(o, "launchers")]


def autotuner_name(tuner):
    name = (getattr(tuner, "inductor_meta", None) or {}).get("kernel_name")
    fn = getattr(tuner, "fn", None)
    return name or getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", None)


def autotuned_configs(names, before=()):
    """The config each kernel's autotuner settled on (its one launcher after the first run).
    Found in the wrapper modules PyCodeCache holds (torch 2.0-2.5 keep them there) or else
    among the kernel objects made since `before` (ids), so that one of the same name compiled
    earlier for the compile baseline (static shapes) is never taken for the harvested one."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:  # no Inductor in this torch: only the kernel objects can tell
        PyCodeCache = None
    modules = list(getattr(PyCodeCache, "modules", None) or [])
    modules += list((getattr(PyCodeCache, "modules_no_attr", None) or {}).values())
    modules += list((getattr(PyCodeCache, "cache", None) or {}).values())
    configs = {}
    for module in reversed(modules):  # the newest first
        for name in names:
            launchers = getattr(getattr(module, name, None), "launchers", None)
            if name not in configs and launchers:
                configs[name] = config_of(launchers)
    if len(configs) < len(names):
        for tuner in reversed(live_autotuners()):
            name = autotuner_name(tuner)
            if name in names and name not in configs and id(tuner) not in before and tuner.launchers:
                configs[name] = config_of(tuner.launchers)
    return configs


def harvest(torch, make_forward, inputs, input_names):
    """{"ok": true, "source", "provenance"} for a fresh forward (make_forward() builds one, so
    Dynamo compiles it apart from the compile baseline), or {"ok": false, "reason"}."""
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(placeholder_bindings(gm, input_names))
        return compile_fx(gm, example_inputs)

    patch = {key: value for key, value in HARVEST_INDUCTOR_CONFIG.items() if hasattr(inductor_config, key)}
    fx_config = getattr(getattr(torch.fx, "experimental", None), "_config", None)
    duck = fx_config.patch(use_duck_shape=False) if fx_config is not None and hasattr(fx_config, "use_duck_shape") else None
    before = {id(tuner) for tuner in live_autotuners()}
    try:
        compiled = torch.compile(make_forward(), backend=backend, dynamic=True)
        with inductor_config.patch(patch):
            if duck is not None:
                with duck:
                    _, codes = run_and_get_code(compiled, *inputs)
            else:
                _, codes = run_and_get_code(compiled, *inputs)
    except Refused as refused:
        return {"ok": False, "reason": str(refused)}
    except Exception as error:  # Inductor's own failure: no candidate, and why
        return {"ok": False, "reason": f"torch.compile failed: {type(error).__name__}: {str(error)[:400]}"}
    if len(codes) != 1 or len(graphs) != 1:
        return {"ok": False, "reason": f"Inductor produced {len(codes)} wrapper modules for {len(graphs)} graphs "
                                       "(graph breaks): kforge harvests single-graph ops"}
    code = codes[0]
    names = kernel_names(code)
    configs = autotuned_configs(names, before)
    import triton

    provenance = {
        "torch_version": torch.__version__, "triton_version": triton.__version__,
        "inductor_config": dict(patch, mode="default", dynamic=True, use_duck_shape=False if duck is not None else None),
        "kernels": {name: configs.get(name) for name in names},
        "wrapper_sha256": hashlib.sha256(code.encode()).hexdigest(),
    }
    header = (f"# Harvested from TorchInductor (torch {torch.__version__}, triton {triton.__version__}; "
              "torch.compile default mode, dynamic shapes):\n# its Triton kernels with the autotuned configs "
              "fixed at the launches (worker/harness/runner/inductor_rewrite.py).\n")
    missing = [name for name in names if name not in configs]
    if missing:
        made = [f"{autotuner_name(t)} ({len(t.launchers or [])} launchers)" for t in live_autotuners() if id(t) not in before]
        return {"ok": False, "provenance": provenance,
                "reason": f"no autotuned config was recorded for kernel {', '.join(missing)} (kernel objects this "
                          f"compile made: {', '.join(made) or 'none'})"}
    try:
        source = rewrite(code, input_names, graphs[0], configs, header)
    except (Refused, SyntaxError) as refused:
        return {"ok": False, "reason": str(refused), "provenance": provenance}
    return {"ok": True, "source": source, "provenance": provenance}
