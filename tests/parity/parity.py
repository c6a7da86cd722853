#!/usr/bin/env python3
# Parity of kforge's policy library with the reference stack (transformers,
# tokenizers), run on the GPU host by tests/parity/run_device.sh:
#   python3 tests/parity/parity.py --kforge build/bin/kforge-policy --out $OUT/parity.json
# Checks: tiny random Qwen2 / Llama logits (fp32, CPU and CUDA) max |diff| <= 1e-4,
# 64-token greedy generations identical, a sharded checkpoint, and tokenizer ids
# identical on >= 1 MB of mixed text, both for tokenizers-trained and kforge-trained BPE.
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

QWEN2_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def dtype_kw(dtype):
    """transformers 5 calls it dtype, 4.x torch_dtype."""
    import transformers

    return {"dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype": dtype}


def log(*args):
    print(*args, flush=True)


def run_kforge(kforge, *args):
    proc = subprocess.run([kforge, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"kforge-policy {' '.join(args[:1])} failed: {proc.stderr.strip()}")
    return proc.stdout


def perturb(model, seed):
    # Random init leaves biases at 0 and norms at 1; noise makes every tensor matter.
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=gen) * 0.05)


def model_parity(kforge, name, config, workdir, device, shard=False):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, **dtype_kw(torch.float32))
    perturb(model, 1)
    model.eval()
    path = os.path.join(workdir, name)
    model.save_pretrained(path, safe_serialization=True, **({"max_shard_size": "200KB"} if shard else {}))
    shards = sorted(os.path.basename(p) for p in glob.glob(os.path.join(path, "*.safetensors")))
    gen = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, config.vocab_size, (1, 48), generator=gen)
    result = {"model": name, "shards": len(shards), "devices": {}}
    for dev in device:
        model.to(dev)
        with torch.no_grad():
            ref = model(tokens.to(dev)).logits[0].float().cpu().numpy()
        out_file = os.path.join(workdir, f"{name}_{dev}.bin")
        run_kforge(kforge, "logits", "--model", path, "--device", dev, "--dtype", "float32",
                   "--tokens", " ".join(map(str, tokens[0].tolist())), "--out", out_file)
        ours = np.fromfile(out_file, dtype=np.float32).reshape(ref.shape)
        diff = float(np.abs(ours - ref).max())
        # Greedy 64 tokens from a 16-token prompt.
        prompt = tokens[:, :16].to(dev)
        with torch.no_grad():
            hf_ids = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                    max_new_tokens=64, min_new_tokens=64, eos_token_id=None, pad_token_id=0)
        hf_new = hf_ids[0, 16:].tolist()
        ours_new = [int(t) for t in run_kforge(kforge, "generate", "--model", path, "--device", dev, "--dtype", "float32",
                                                "--tokens", " ".join(map(str, prompt[0].tolist())),
                                                "--new-tokens", "64", "--temperature", "0").split()]
        first_diff = next((i for i, (a, b) in enumerate(zip(hf_new, ours_new)) if a != b), None)
        result["devices"][dev] = {"max_abs_logit_diff": diff, "logit_scale": float(np.abs(ref).max()),
                                  "greedy_identical": hf_new == ours_new, "greedy_tokens": len(ours_new),
                                  "greedy_first_difference": first_diff}
        if dev == "cuda":
            # Informational: half precisions on both sides (no threshold; rounding differs by op order).
            for dtype_name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
                half_model = AutoModelForCausalLM.from_pretrained(path, **dtype_kw(dtype)).to(dev).eval()
                with torch.no_grad():
                    ref_half = half_model(tokens.to(dev)).logits[0].float().cpu().numpy()
                del half_model
                half_file = os.path.join(workdir, f"{name}_{dev}_{dtype_name}.bin")
                run_kforge(kforge, "logits", "--model", path, "--device", dev, "--dtype", dtype_name,
                           "--tokens", " ".join(map(str, tokens[0].tolist())), "--out", half_file)
                ours_half = np.fromfile(half_file, dtype=np.float32).reshape(ref.shape)
                result["devices"][dev][f"{dtype_name}_max_abs_logit_diff"] = float(np.abs(ours_half - ref_half).max())
        log(f"{name} {dev}: max|diff| {diff:.3g}  greedy identical {hf_new == ours_new}  {result['devices'][dev]}")
    model.to("cpu")
    return result


def kforge_saved_parity(kforge, workdir, device):
    """kforge's own checkpoint (preset, random weights) loads in transformers with the same logits."""
    from transformers import AutoModelForCausalLM

    path = os.path.join(workdir, "kforge_tiny")
    run_kforge(kforge, "init", "--preset", "kforge-tiny", "--seed", "5", "--out", path)
    model = AutoModelForCausalLM.from_pretrained(path, **dtype_kw(torch.float32)).eval()
    tokens = torch.randint(0, model.config.vocab_size, (1, 40), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        ref = model(tokens).logits[0].float().numpy()
    out_file = os.path.join(workdir, "kforge_tiny.bin")
    run_kforge(kforge, "logits", "--model", path, "--tokens", " ".join(map(str, tokens[0].tolist())), "--out", out_file)
    diff = float(np.abs(np.fromfile(out_file, dtype=np.float32).reshape(ref.shape) - ref).max())
    log(f"kforge-saved kforge-tiny loaded by transformers: max|diff| {diff:.3g}")
    return {"model": "kforge-tiny saved by kforge, loaded by transformers", "max_abs_logit_diff": diff}


def mixed_corpus(min_bytes, seed):
    """Python sources + multi-script text + whitespace runs + digits, as documents."""
    rng = random.Random(seed)
    sources = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    code = []
    for path in sources:
        with open(path, encoding="utf-8", errors="replace") as f:
            code.append(f.read())
        if sum(map(len, code)) > min_bytes // 2:
            break
    words = ("Grüße Köln straße naïve café façade Ωμέγα αλφάβητο Привет мир 你好 世界 東京 こんにちは カタカナ "
             "안녕하세요 مرحبا שלום नमस्ते ภาษาไทย 🙂 🚀 👩‍💻 ∑ ∫ √ ≤ ≥ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 IT'S it's WE'LL they've "
             "x86_64 __kernel get_global_id() 3.14159 1e-4 0xFF 1234567890 ½ ² ٣٤٥ ๓๔").split(" ")
    spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "    \n", "\u00a0", "\u3000", "        "]
    text_docs = []
    total = sum(len(c.encode()) for c in code)
    while total < min_bytes:
        parts = []
        for _ in range(rng.randint(20, 200)):
            roll = rng.random()
            if roll < 0.6:
                parts.append(rng.choice(words))
            elif roll < 0.8:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
            else:
                parts.append(rng.choice(spaces) * rng.randint(1, 3))
            parts.append(rng.choice([" ", " ", " ", "", "\n", "  "]))
        doc = "".join(parts)
        text_docs.append(doc)
        total += len(doc.encode())
    docs = []
    for src in code:  # cut code into pieces at random character positions
        pos = 0
        while pos < len(src):
            step = rng.randint(200, 4000)
            docs.append(src[pos:pos + step])
            pos += step
    docs += text_docs
    docs.append("a<|endoftext|>b <|endoftext|>\n<|endoftext|><|endoftext|>")
    rng.shuffle(docs)
    return docs


def compare_ids(kforge, tokenizer_path, docs, workdir, label):
    from tokenizers import Tokenizer

    ref_tok = Tokenizer.from_file(tokenizer_path)
    ref = [enc.ids for enc in ref_tok.encode_batch(docs, add_special_tokens=False)]
    docs_file = os.path.join(workdir, "docs.json")
    with open(docs_file, "w", encoding="utf-8") as f:
        json.dump(docs, f, ensure_ascii=False)
    out_file = os.path.join(workdir, f"ids_{label}.json")
    started = time.time()
    run_kforge(kforge, "encode", "--tokenizer", tokenizer_path, "--in", docs_file, "--out", out_file)
    kforge_s = time.time() - started
    with open(out_file) as f:
        ours = json.load(f)
    mismatched = [i for i, (a, b) in enumerate(zip(ref, ours)) if a != b]
    example = None
    if mismatched:
        i = mismatched[0]
        j = next((k for k, (a, b) in enumerate(zip(ref[i], ours[i])) if a != b), min(len(ref[i]), len(ours[i])))
        example = {"doc": i, "token_index": j, "ref": ref[i][max(0, j - 3):j + 5], "kforge": ours[i][max(0, j - 3):j + 5],
                   "text_near": ref_tok.decode(ref[i][max(0, j - 3):j + 5])}
    result = {"tokenizer": label, "docs": len(docs), "bytes": sum(len(d.encode()) for d in docs),
              "tokens": sum(map(len, ref)), "mismatched_docs": len(mismatched), "first_mismatch": example,
              "kforge_encode_s": round(kforge_s, 2)}
    log(f"tokenizer {label}: {result['bytes']} bytes, {result['tokens']} tokens, mismatched docs {len(mismatched)}")
    return result


def tokenizer_parity(kforge, workdir):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    docs = mixed_corpus(1_100_000, seed=3)
    train_docs = docs[: len(docs) // 2]
    corpus_file = os.path.join(workdir, "train_corpus.txt")
    with open(corpus_file, "w", encoding="utf-8") as f:
        f.write("".join(train_docs))
    results = []
    splits = {
        "gpt2": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        "qwen2": pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated"),
                                          pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        "llama3": pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated"),
                                           pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
    }
    for label, pre in splits.items():
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=8000, special_tokens=["<|endoftext|>"], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(train_docs, trainer=trainer)
        path = os.path.join(workdir, f"hf_{label}.json")
        tok.save(path)
        results.append(compare_ids(kforge, path, docs, workdir, f"tokenizers-trained {label}"))
    for label in ("qwen2", "gpt2", "llama3"):
        path = os.path.join(workdir, f"kforge_{label}.json")
        started = time.time()
        run_kforge(kforge, "train-tokenizer", "--vocab-size", "8000", "--pretokenizer", label, "--out", path, corpus_file)
        train_s = time.time() - started
        result = compare_ids(kforge, path, docs, workdir, f"kforge-trained {label}")
        result["kforge_train_s"] = round(train_s, 2)
        results.append(result)
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kforge", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import tokenizers
    import transformers
    from transformers import LlamaConfig, Qwen2Config

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    report = {"env": {"torch": torch.__version__, "transformers": transformers.__version__,
                      "tokenizers": tokenizers.__version__,
                      "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                      "tf32_matmul": torch.backends.cuda.matmul.allow_tf32},
              "command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as workdir:
        qwen = Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=352, num_hidden_layers=3,
                           num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                           rope_theta=10000.0, tie_word_embeddings=False, eos_token_id=None, bos_token_id=None)
        qwen_tied = Qwen2Config(vocab_size=1000, hidden_size=96, intermediate_size=256, num_hidden_layers=2,
                                num_attention_heads=6, num_key_value_heads=6, max_position_embeddings=512,
                                rope_theta=1000000.0, tie_word_embeddings=True, eos_token_id=None, bos_token_id=None)
        llama = LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=384, num_hidden_layers=3,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                            rope_theta=500000.0, tie_word_embeddings=False, eos_token_id=None, bos_token_id=None)
        llama_bias = LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=4, head_dim=48, attention_bias=True,
                                 mlp_bias=True, max_position_embeddings=512, tie_word_embeddings=True,
                                 eos_token_id=None, bos_token_id=None)
        models = []
        for name, config, shard in (("qwen2", qwen, False), ("qwen2_tied_sharded", qwen_tied, True),
                                    ("llama", llama, False), ("llama_bias_headdim", llama_bias, False)):
            try:
                models.append(model_parity(args.kforge, name, config, workdir, devices, shard))
            except Exception as e:  # report and go on: one failure should not hide the rest
                log(f"{name}: FAILED {e}")
                models.append({"model": name, "error": str(e)})
        report["models"] = models
        try:
            report["kforge_checkpoint_in_transformers"] = kforge_saved_parity(args.kforge, workdir, devices)
        except Exception as e:
            log(f"kforge checkpoint in transformers: FAILED {e}")
            report["kforge_checkpoint_in_transformers"] = {"error": str(e)}
        try:
            report["tokenizers"] = tokenizer_parity(args.kforge, workdir)
        except Exception as e:
            log(f"tokenizer parity FAILED {e}")
            report["tokenizers"] = [{"error": str(e)}]
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    log(json.dumps(report, indent=2)[:6000])


if __name__ == "__main__":
    main()
