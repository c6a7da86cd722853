#!/usr/bin/env python3
# Decode-throughput benchmark: kforge's sampler vs transformers' generate on the
# same random model (saved once, loaded by both), same group, dtype and lengths,
# side by side in one run. Cases live in bench/policy/cases.json.
#   python3 bench/policy/bench_policy.py --kforge build/bin/kforge-policy --cases gpu_ --out $OUT/bench.json
# Without torch/transformers in Python (CPU CI host) the kforge side still runs.
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def dtype_kw(dtype):
    """transformers 5 calls it dtype, 4.x torch_dtype."""
    import transformers

    return {"dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype": dtype}


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def log(*args):
    print(*args, flush=True)


def kforge_bench(kforge, case, model_dir, repeats):
    args = [kforge, "bench", "--device", case["device"], "--dtype", case["dtype"], "--group", str(case["group"]),
            "--prompt-len", str(case["prompt_len"]), "--new-tokens", str(case["new_tokens"]), "--repeats", str(repeats)]
    args += ["--model", model_dir] if model_dir else ["--preset", case["preset"]]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip())
    return json.loads(proc.stdout.strip().splitlines()[-1])


def save_hf_model(kforge, case, workdir):
    """kforge writes the preset's config.json + random weights; transformers loads the same files."""
    path = os.path.join(workdir, case["preset"])
    if not os.path.exists(path):
        subprocess.run([kforge, "init", "--preset", case["preset"], "--dtype", case["dtype"], "--out", path], check=True,
                       capture_output=True)
    return path


def transformers_bench(case, model_dir, repeats, loop=False):
    import torch
    from transformers import AutoModelForCausalLM

    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[case["dtype"]]
    model = AutoModelForCausalLM.from_pretrained(model_dir, **dtype_kw(dtype)).to(case["device"]).eval()
    gen = torch.Generator().manual_seed(1234)
    prompt = torch.randint(0, model.config.vocab_size, (1, case["prompt_len"]), generator=gen)
    # A group is G copies of the prompt, as generate(num_return_sequences=G) would expand it.
    input_ids = prompt.repeat(case["group"], 1).to(case["device"])
    kwargs = dict(attention_mask=torch.ones_like(input_ids), do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                  eos_token_id=None, pad_token_id=0)

    def sync():
        if case["device"] == "cuda":
            torch.cuda.synchronize()

    with torch.no_grad():
        model.generate(input_ids, max_new_tokens=16, min_new_tokens=16, **kwargs)  # warm-up
        runs = []
        for _ in range(repeats):
            sync()
            started = time.perf_counter()
            out = model.generate(input_ids, max_new_tokens=case["new_tokens"], min_new_tokens=case["new_tokens"], **kwargs)
            sync()
            wall = time.perf_counter() - started
            generated = (out.shape[1] - case["prompt_len"]) * case["group"]
            runs.append({"wall_s": wall, "generated_tokens": generated, "tokens_per_s": generated / wall})
    rates = sorted(r["tokens_per_s"] for r in runs)
    result = {"engine": "transformers", "attn_implementation": getattr(model.config, "_attn_implementation", None),
              "tokens_per_s": median(rates), "runs": runs}
    if loop:
        result["forward_loop"] = transformers_forward_loop(model, input_ids, case, sync)
    return result


def transformers_forward_loop(model, input_ids, case, sync):
    """A lower bound on transformers' per-step cost: model() calls in a bare loop with its
    DynamicCache and multinomial sampling, no generate() machinery, no per-step host sync."""
    import torch
    from transformers import DynamicCache

    def decode(new_tokens):
        cache = DynamicCache()
        out = model(input_ids=input_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        logits = out.logits[:, -1]
        for _ in range(new_tokens):
            next_ids = torch.multinomial(torch.softmax(logits.float(), -1), 1)
            out = model(input_ids=next_ids, past_key_values=cache, use_cache=True)
            logits = out.logits[:, -1]
        return logits

    with torch.no_grad():
        decode(16)  # warm-up
        sync()
        started = time.perf_counter()
        decode(case["new_tokens"])
        sync()
        wall = time.perf_counter() - started
    generated = case["new_tokens"] * case["group"]
    return {"wall_s": wall, "generated_tokens": generated, "tokens_per_s": generated / wall}


def environment():
    env = {"host": platform.node(), "machine": platform.machine(), "python": platform.python_version(),
           "cpu_count": os.cpu_count()}
    try:
        import torch
        import transformers

        env.update({"torch": torch.__version__, "transformers": transformers.__version__,
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                    "cuda": torch.version.cuda})
    except ImportError:
        env["torch"] = None
    return env


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--cases", default="", help="run cases whose name starts with this")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-transformers", action="store_true")
    parser.add_argument("--hf-repeats", type=int, default=1, help="timed transformers generate() runs")
    parser.add_argument("--hf-loop", action="store_true", help="also time a bare transformers forward loop")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = [c for c in json.load(f)["cases"] if c["name"].startswith(args.cases)]
    report = {"command": " ".join(sys.argv), "env": environment(), "results": []}
    with tempfile.TemporaryDirectory() as workdir:
        for case in cases:
            entry = {"case": case}
            try:
                use_hf = case["transformers"] and not args.no_transformers and report["env"].get("torch")
                model_dir = save_hf_model(args.kforge, case, workdir)
                entry["kforge"] = kforge_bench(args.kforge, case, model_dir, args.repeats)
                if use_hf:
                    entry["transformers"] = transformers_bench(case, model_dir, args.hf_repeats, args.hf_loop)
                    entry["speedup"] = entry["kforge"]["tokens_per_s"] / entry["transformers"]["tokens_per_s"]
                log(f"{case['name']}: kforge {entry['kforge']['tokens_per_s']:.0f} tok/s"
                    + (f", transformers {entry['transformers']['tokens_per_s']:.0f} tok/s, ratio {entry['speedup']:.2f}x"
                       if "transformers" in entry else "")
                    + (f", transformers forward loop {entry['transformers']['forward_loop']['tokens_per_s']:.0f} tok/s"
                       if "forward_loop" in entry.get("transformers", {}) else ""))
            except Exception as e:  # record and go on with the next case
                entry["error"] = str(e)[-2000:]
                log(f"{case['name']}: FAILED {entry['error']}")
            report["results"].append(entry)
            with open(args.out, "w") as f:
                json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
