#!/usr/bin/env python3
# KernelBench levels 1 and 2 through kforge: every problem through tools/import_kernelbench.py,
# the teacher (kforge-codegen emit) and, with --check, the checker (kforge-worker check).
# Fetches nothing: pass a KernelBench checkout (bench/kernelbench/README.md says how to get one).
# Run: python3 bench/kernelbench/run.py --kernelbench .cache/kernelbench [--check --target cuda --device cuda]
"""Writes bench/results/kernelbench.json: per level `problems`, `imported`, `lowered`,
`verified_share`, `fast1_vs_eager`, `fast1_vs_compile` and the tallied refusal, lowering
and check-failure reasons, plus one row per problem.

fast_1 is KernelBench's fast_p at p = 1: the share of all problems of the level (not of
the imported ones) with a correct, unflagged kernel faster than the baseline.
"""
import argparse
import collections
import concurrent.futures
import contextlib
import datetime
import hashlib
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTER = os.path.join(ROOT, "tools", "import_kernelbench.py")
# Every file the importer's output depends on: a cached import is redone when one changes.
IMPORTER_SOURCES = (IMPORTER, os.path.join(ROOT, "tools", "kernelbench_builtins.py"))
EXTENSIONS = {"opencl": "cl", "cuda": "cu", "triton": "py"}


def run(cmd, timeout, memory_gib=None):
    def limit():  # the importer runs problems' own code: a runaway allocation fails, not the host
        resource.setrlimit(resource.RLIMIT_AS, (memory_gib << 30, memory_gib << 30))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit if memory_gib else None)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    except OSError as exc:  # e.g. the binary is being relinked
        return 127, "", f"cannot run {cmd[0]}: {exc.strerror}"
    if proc.returncode < 0 and not proc.stderr.strip():
        return proc.returncode, proc.stdout, f"killed by signal {-proc.returncode}"
    return proc.returncode, proc.stdout, proc.stderr


def level_dir(checkout, level):
    for candidate in (os.path.join(checkout, "KernelBench", f"level{level}"), os.path.join(checkout, f"level{level}")):
        if os.path.isdir(candidate):
            return candidate
    sys.exit(f"run.py: no level{level} folder under {checkout} (expected KernelBench/level{level})")


def problem_number(path):
    match = re.match(r"(\d+)_", os.path.basename(path))
    return int(match.group(1)) if match else 1 << 30


def first_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def refusal_reason(stderr):
    """The importer's one-line reason with the problem's own names blanked, so that equal
    causes tally together (submodule 'conv' is a ...Conv2d -> module Conv2d)."""
    line = first_line(stderr)
    line = re.sub(r"^import_kernelbench: cannot convert \S+: ", "", line)
    if "does not run" in line or re.match(r"(Model\(\*get_init_inputs\(\)\)|get_inputs\(\)) fails:", line):
        match = re.search(r"(\w+Error|\w+Exception)", line)
        return f"problem does not run: {match.group(1) if match else line[:80]}"
    patterns = [
        (r"submodule '[^']*' is a [\w.]*\.(\w+)", r"module \1"),
        (r"forward calls ([\w.]+), which has no TorchScript builtin", r"function \1 has no builtin"),
        (r"forward reads tensor attribute \.(\w+).*", r"tensor attribute .\1"),
        (r"get_inputs\(\)\[\d+\] is a (\w+).*", r"input of type \1"),
        (r"forward cannot be traced.*", "untraceable forward (control flow)"),
        (r"(killed by signal \d+|timed out)", r"importer \1"),
        (r"generated source fails: (\w+).*", r"generated source fails (\1)"),
        (r"Model.forward fails at the CPU-checked scale.*?: (\w+).*", r"forward fails at the checked scale (\1)"),
        (r"forward makes a constant tensor.*", "constant tensor in forward"),
        (r"generated source disagrees.*", "generated source disagrees (importer bug)"),
        (r"cannot scale the problem's sizes down.*", "cannot scale sizes down"),
        (r"the scaled-down problem traces to a different program.*", "scaled problem traces differently"),
        (r"'[^']*': (\w+) .*", r"\1 variant"),
    ]
    for pattern, replacement in patterns:
        match = re.match(pattern, line)
        if match:
            return match.expand(replacement)
    return re.sub(r"\d+", "#", line)[:120]


def lowering_reason(stderr):
    line = re.sub(r"^kforge-codegen: \S+: ", "", first_line(stderr))
    return re.sub(r"'[^']*'|\b\d+\b", lambda m: "'_'" if m.group(0).startswith("'") else "#", line)[:120]


def import_key(path):
    """The importer's and the problem's text: an import is redone only when either changed."""
    digest = hashlib.sha256()
    for source in (*IMPORTER_SOURCES, path):
        with open(source, "rb") as file:
            digest.update(file.read())
    return digest.hexdigest()


def import_problem(path, level, ops_dir, timeout, python, memory_gib):
    name = os.path.splitext(os.path.basename(path))[0]
    op_path = os.path.join(ops_dir, f"level{level}", f"{name}.json")
    cached_path = os.path.join(ops_dir, f"level{level}", f"{name}.import.json")
    key = import_key(path)
    if os.path.exists(cached_path):
        with open(cached_path) as file:
            cached = json.load(file)
        if cached.get("key") == key and (not cached["row"]["imported"] or os.path.exists(op_path)):
            return dict(cached["row"])
    row = fresh_import(path, level, op_path, timeout, python, memory_gib, name)
    with open(cached_path, "w") as file:
        json.dump({"key": key, "row": row}, file)
    return dict(row)


def fresh_import(path, level, op_path, timeout, python, memory_gib, name):
    started = time.time()
    rc, out, err = run([python, IMPORTER, path, "-o", op_path, "--level", str(level)], timeout, memory_gib)
    row = {"problem": name, "level": level, "import_s": round(time.time() - started, 1)}
    if rc == 0:
        row["imported"] = True
        row["op"] = os.path.relpath(op_path, ROOT) if op_path.startswith(ROOT) else op_path
    else:
        row["imported"] = False
        row["refusal"] = refusal_reason(err or out)
        row["message"] = first_line(err or out)[:400]
    return row


def matching_schedules(op, bin_dir, target, timeout, pattern):
    """Indices of the op's schedules whose label matches `pattern` (kforge-codegen schedules)."""
    rc, out, _ = run([os.path.join(bin_dir, "kforge-codegen"), "schedules", op, "--target", target], timeout)
    found = (re.fullmatch(r"(\d+) (\S+)", line.strip()) for line in out.splitlines()) if rc == 0 else ()
    return [int(m[1]) for m in found if m and re.search(pattern, m[2])]


def lower(row, bin_dir, target, programs_dir, timeout, samples=1, also=""):
    """The teacher's first `samples` schedules (as a generation with that many samples proposes
    them), then any later ones whose label matches the regex `also` (to time schedules from
    deep in the space side by side with the first ones), written beside each other; [] when
    the first does not emit."""
    paths = []
    indices = list(range(samples))
    if also:
        indices += [i for i in matching_schedules(row["op"], bin_dir, target, timeout, also) if i >= samples]
    for index in indices:
        rc, program, err = run([os.path.join(bin_dir, "kforge-codegen"), "emit", row["op"], str(index),
                                "--target", target], timeout)
        if rc != 0 or not program.strip():
            if index == 0:
                row["lowered"] = False
                row["lowering_failure"] = lowering_reason(err or program or f"exit {rc}")
            break  # a later index past the op's schedule space ends the list
        suffix = "" if index == 0 else f".s{index}"
        path = os.path.join(programs_dir, f"level{row['level']}", f"{row['problem']}{suffix}.{EXTENSIONS[target]}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as file:
            file.write(program)
        paths.append(path)
    if paths:
        row["lowered"] = True
    return paths


def odd_shapes_op(op_path, work):
    """The op with its first extra shape set as the main shapes and the rest as extra shapes
    (as the codegen tests check suite ops): KernelBench's GPU-sized main shapes are far too
    big for a CPU, the extra shapes are small and odd."""
    with open(op_path) as file:
        op = json.load(file)
    extra = op.get("extra_shapes") or []
    if extra:
        for spec in op["inputs"]:
            spec["shape"] = extra[0].get(spec["name"], spec["shape"])
        op["extra_shapes"] = extra[1:]
    path = os.path.join(work, "ops_odd", os.path.basename(os.path.dirname(op_path)), os.path.basename(op_path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        json.dump(op, file, indent=1)
    return path


class MemoryGate:
    """Checks run side by side only while their estimated memory fits a budget: twelve of
    level 2's GPU-sized problems at once ran the card out of memory (CUDA OOM) and the host
    out of memory (signal 9) on an H200. A check larger than the whole budget runs alone."""

    def __init__(self, budget_bytes):
        self.budget, self.used = budget_bytes, 0
        self.cond = threading.Condition()

    @contextlib.contextmanager
    def __call__(self, need):
        need = min(need, self.budget)
        with self.cond:
            self.cond.wait_for(lambda: self.used + need <= self.budget)
            self.used += need
        try:
            yield
        finally:
            with self.cond:
                self.used -= need
                self.cond.notify_all()


# Bytes a check holds per byte of its op's inputs (estimated, not measured): the inputs of each
# trial and the secret-seed trial, outputs of about their size kept per trial, and the eager,
# torch.compile and candidate runners' own copies.
CHECK_BYTES_PER_INPUT_BYTE = 16


def op_input_bytes(op_path):
    with open(op_path) as file:
        op = json.load(file)
    size = {"float64": 8, "int64": 8, "float16": 2, "bfloat16": 2, "bool": 1, "uint8": 1, "int8": 1}
    total = 0
    for spec in op.get("inputs", []):
        count = 1
        for extent in spec.get("shape", []):
            count *= int(extent)
        total += count * size.get(spec.get("dtype", "float32"), 4)
    return total


def check(row, programs, args):
    if args.memory_gate is None:
        return check_now(row, programs, args)
    with args.memory_gate(CHECK_BYTES_PER_INPUT_BYTE * op_input_bytes(row["op"])):
        return check_now(row, programs, args)


def schedule_label(program):
    """The schedule named in the teacher's header line ("..., schedule LABEL[, target T])")."""
    match = re.search(r"schedule ([^,\s)]+)", program.split("\n", 1)[0])
    return match.group(1) if match else None


def check_now(row, programs, args):
    """Checks the programs with one Checker (the reference and baselines computed once) and
    answers, as a generation does, the fastest correct unflagged one; with none, the first
    program's outcome."""
    op = odd_shapes_op(row["op"], args.work) if args.odd_shapes else row["op"]
    cmd = [os.path.join(args.bin, "kforge-worker"), "check", op, *programs, "--device", args.device]
    cmd += (["--target", args.target] if args.target != "opencl" else []) + args.check_flags.split()
    if args.timing_lock:
        cmd += ["--timing-lock", os.path.abspath(args.timing_lock)]
    rc, out, err = run(cmd, args.check_timeout)
    results = []
    for line in out.splitlines():
        try:
            results.append(json.loads(line))
        except ValueError:
            pass
    if not results:
        row["outcome"] = "harness_failure"
        row["message"] = first_line(err or out)[:400]
        return
    for result, program in zip(results, programs):
        with open(program) as file:
            result["_schedule"] = schedule_label(file.read())
    if len(programs) > 1:
        row["samples_checked"] = len(results)
        row["sample_outcomes"] = [{"schedule": r["_schedule"], "outcome": r.get("outcome"),
                                   "suspicious": bool(r.get("suspicious")),
                                   "kernel_ms": (r.get("kernel") or {}).get("median_ms")} for r in results]
    good = [r for r in results if r.get("outcome") == "correct" and not r.get("suspicious")]
    timed = [r for r in good if (r.get("kernel") or {}).get("median_ms")]
    result = (min(timed, key=lambda r: r["kernel"]["median_ms"]) if timed else good[0] if good else results[0])
    row["schedule"] = result["_schedule"]
    row["outcome"] = result.get("outcome")
    row["suspicious"] = bool(result.get("suspicious"))
    for key in ("speedup_vs_eager", "speedup_vs_compile"):
        row[key] = result.get(key)
    if row["speedup_vs_eager"] is None:
        row["speedup_vs_eager"] = result.get("speedup")
    baseline_note = str((result.get("environment") or {}).get("baseline") or "")
    if row["outcome"] == "correct" and row["speedup_vs_compile"] is None and args.device != "cpu":
        # (A CPU check has no compile baseline.) Four level-2 rows on an H200 came without a
        # compile speedup and without a reason: keep whatever the checker said about its baselines.
        failed = baseline_note.find("torch.compile failed")
        row["compile_baseline_missing"] = (baseline_note[failed:] if failed >= 0 else
                                           "no reason given; baselines: " + baseline_note)[:300]
    for side in ("kernel", "baseline", "baseline_compile"):
        if result.get(side):
            row[f"{side}_ms"] = result[side].get("median_ms")
    if row["outcome"] != "correct":
        row["message"] = (result.get("message") or "")[:400]


def summarize(rows, checked):
    tally = collections.Counter
    imported = [r for r in rows if r["imported"]]
    lowered = [r for r in imported if r.get("lowered")]
    summary = {"problems": len(rows), "imported": len(imported),
               "lowered": len(lowered) if any("lowered" in r for r in imported) or not imported else None,
               "verified_share": None, "fast1_vs_eager": None, "fast1_vs_compile": None,
               "refusal_reasons": dict(tally(r["refusal"] for r in rows if not r["imported"]).most_common()),
               "lowering_failures": dict(tally(r["lowering_failure"] for r in imported
                                                if "lowering_failure" in r).most_common())}
    if not checked or not rows:
        return summary
    verified = [r for r in lowered if r.get("outcome") == "correct" and not r.get("suspicious")]
    summary["verified_share"] = round(len(verified) / len(rows), 4)
    if any(r.get("speedup_vs_eager") is not None for r in verified):  # else an untimed run (--no-time)
        summary["fast1_vs_eager"] = round(
            sum(1 for r in verified if (r.get("speedup_vs_eager") or 0) > 1) / len(rows), 4)
    if any(r.get("speedup_vs_compile") is not None for r in verified):
        summary["fast1_vs_compile"] = round(
            sum(1 for r in verified if (r.get("speedup_vs_compile") or 0) > 1) / len(rows), 4)
    summary["check_outcomes"] = dict(tally(r.get("outcome") for r in lowered).most_common())
    return summary


def environment(args):
    env = {"host": platform.node(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        env["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                       text=True).stdout.strip()
        if os.path.exists(os.path.join(args.kernelbench, ".git")):  # else git would answer for an enclosing repo
            env["kernelbench_commit"] = subprocess.run(["git", "-C", args.kernelbench, "rev-parse", "--short", "HEAD"],
                                                       capture_output=True, text=True).stdout.strip() or None
    except OSError:
        pass
    if os.path.exists(os.path.join(args.kernelbench, "COMMIT")):
        with open(os.path.join(args.kernelbench, "COMMIT")) as file:
            env["kernelbench_commit"] = file.read().strip()
    return env


def combine(paths, out):
    """One results file from the files of --shard runs: every row once, levels re-summarized."""
    results = []
    for path in paths:
        with open(path) as file:
            results.append(json.load(file))
    if not results:
        sys.exit("run.py: --combine names no file")
    rows = sorted((r for result in results for r in result["rows"]), key=lambda r: (r["level"], problem_number(r["problem"])))
    seen = collections.Counter((r["level"], r["problem"]) for r in rows)
    if any(count > 1 for count in seen.values()):
        sys.exit(f"run.py: --combine: problems in several files: {sorted(k for k, c in seen.items() if c > 1)[:5]}")
    first = results[0]
    combined = {key: first[key] for key in ("target", "device", "checked", "environment") if key in first}
    combined["command"] = " ; ".join(result["command"] for result in results)
    combined["commands"] = [result["command"] for result in results]
    combined["complete"] = all(result.get("complete") for result in results)
    if "shapes" in first:
        combined["shapes"] = first["shapes"]
    checked = bool(first.get("checked"))
    for level in sorted({r["level"] for r in rows}):
        combined[f"level{level}"] = summarize([r for r in rows if r["level"] == level], checked)
    combined["rows"] = rows
    with open(out + ".tmp", "w") as file:
        json.dump(combined, file, indent=1)
    os.replace(out + ".tmp", out)
    print(f"run.py: combined {len(rows)} rows of {len(paths)} files into {out}")
    return 0


def default_python():
    """This python when it can import torch (a GPU host's venv), else Debian's python3."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None or not os.path.exists("/usr/bin/python3"):
        return sys.executable
    return "/usr/bin/python3"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", required=True, help="KernelBench checkout (holds KernelBench/level1...)")
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--only", default="", help="comma-separated problem numbers or name substrings")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "kernelbench.json"))
    parser.add_argument("--work", default=os.path.join(ROOT, "var", "kernelbench"), help="ops and programs go here")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--lower", action="store_true", help="also run the teacher (kforge-codegen emit)")
    parser.add_argument("--check", action="store_true", help="lower, then check each program (implies --lower)")
    parser.add_argument("--target", default="opencl", choices=sorted(EXTENSIONS))
    parser.add_argument("--device", default="", help="kforge-worker check --device (default: cuda, or PoCL's cpu)")
    parser.add_argument("--check-flags", default="--trials 3", help="extra kforge-worker check flags")
    parser.add_argument("--samples", type=int, default=1,
                        help="teacher schedules checked per problem, the fastest correct one answered (as a "
                             "generation with that many samples; default 1: the first schedule alone)")
    parser.add_argument("--also-schedules", default="", metavar="REGEX",
                        help="with --check, also check the schedules past the first --samples whose label "
                             "matches REGEX (e.g. '\\.taps$'), side by side with them")
    parser.add_argument("--timing-lock", default="", help="a file: checks run side by side take turns to time")
    parser.add_argument("--odd-shapes", action="store_true",
                        help="check on each op's first extra shape set as its main shapes (CPU-sized; timings "
                             "from such a run are not KernelBench's)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the rows already in --out and replace only the selected problems' rows")
    parser.add_argument("--jobs", type=int, default=1, help="problems imported (and checked) side by side")
    parser.add_argument("--shard", default="", help="K/N: only every Nth selected problem from the Kth (0-based), so "
                                                     "N runs (one per GPU, CUDA_VISIBLE_DEVICES) share a level")
    parser.add_argument("--combine", default="",
                        help="comma-separated results files of --shard runs: write their rows as one file to --out "
                             "(nothing is imported or checked)")
    parser.add_argument("--python", default=default_python(),
                        help="a python with torch for the importer (default: this python if it has torch, "
                             "else /usr/bin/python3)")
    parser.add_argument("--import-memory-gib", type=int, default=8, help="address-space limit of one import")
    parser.add_argument("--import-timeout", type=int, default=300)
    parser.add_argument("--check-timeout", type=int, default=900)
    parser.add_argument("--memory-gib", type=float, default=None,
                        help="checks side by side only while their estimated memory (16x their op's input bytes) "
                             "fits this many GiB (default: 48 for a GPU check, no limit on the CPU; 0: no limit)")
    args = parser.parse_args(argv)
    args.lower = args.lower or args.check
    if args.samples < 1:
        parser.error(f"--samples must be at least 1, not {args.samples}")
    if not args.device:
        args.device = "cpu" if args.target == "opencl" else "cuda"
    if args.memory_gib is None:
        args.memory_gib = 48 if args.device != "cpu" and not args.odd_shapes else 0
    args.memory_gate = MemoryGate(int(args.memory_gib * 2**30)) if args.memory_gib and args.jobs > 1 else None
    if args.jobs > 1 and args.check and not args.timing_lock:
        args.timing_lock = os.path.join(args.work, "timing.lock")

    if args.combine:
        return combine([p for p in args.combine.split(",") if p], args.out)
    shard_index, shard_count = 0, 1
    if args.shard:
        match = re.fullmatch(r"(\d+)/(\d+)", args.shard)
        if not match or not 0 <= int(match[1]) < int(match[2]):
            parser.error(f"--shard must be K/N with 0 <= K < N, not {args.shard!r}")
        shard_index, shard_count = int(match[1]), int(match[2])
    levels = [int(level) for level in args.levels.split(",") if level]
    wanted = [w for w in args.only.split(",") if w]
    work = []
    for level in levels:
        folder = level_dir(args.kernelbench, level)
        for name in sorted(os.listdir(folder), key=lambda n: problem_number(n)):
            if not name.endswith(".py"):
                continue
            if wanted and not any(w == str(problem_number(name)) or (not w.isdigit() and w in name) for w in wanted):
                continue
            work.append((level, os.path.join(folder, name)))
    work = work[shard_index::shard_count]
    for level in levels:
        os.makedirs(os.path.join(args.work, "ops", f"level{level}"), exist_ok=True)

    def one(item):
        level, path = item
        row = import_problem(path, level, os.path.join(args.work, "ops"), args.import_timeout, args.python,
                             args.import_memory_gib)
        if row["imported"] and args.lower:
            programs = lower(row, args.bin, args.target, os.path.join(args.work, "programs", args.target), 120,
                             args.samples if args.check else 1, args.also_schedules if args.check else "")
            if programs and args.check:
                check(row, programs, args)
        status = row.get("outcome") or ("lowered" if row.get("lowered") else row.get("lowering_failure")
                                        if row["imported"] else row["refusal"])
        print(f"level{level} {row['problem'][:48]:48s} {row['import_s']:6.1f}s {status}", flush=True)
        return row

    command = "python3 bench/kernelbench/run.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    rows = []
    env = environment(args)
    kept, commands = [], [command]
    if args.merge and os.path.exists(args.out):
        with open(args.out) as file:
            earlier = json.load(file)
        selected = {(level, os.path.splitext(os.path.basename(path))[0]) for level, path in work}
        kept = [r for r in earlier["rows"] if (r["level"], r["problem"]) not in selected]
        commands = earlier.get("commands", [earlier.get("command")]) + [command]
        env["earlier"] = earlier.get("environment")

    def save():  # after every problem: a run cut short keeps what it measured
        result = {"command": command, "commands": commands, "environment": env,
                  "target": args.target if args.lower else None, "device": args.device if args.check else None,
                  "checked": args.check, "complete": len(rows) == len(work)}
        if args.check and args.odd_shapes:
            result["shapes"] = "odd: each op's first extra shape set as its main shapes"
        every = sorted(kept + rows, key=lambda r: (r["level"], problem_number(r["problem"])))
        for level in sorted({r["level"] for r in every} | set(levels)):
            result[f"level{level}"] = summarize([r for r in every if r["level"] == level], args.check)
        result["rows"] = every
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as file:
            json.dump(result, file, indent=1)
        os.replace(args.out + ".tmp", args.out)
        return result

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # Saved as each finishes, not in submission order: a run cut off by a time limit keeps
        # every problem it finished, not only those before the first slow one.
        for future in concurrent.futures.as_completed([pool.submit(one, item) for item in work]):
            rows.append(future.result())
            save()
    result = save()
    for level in levels:
        s = result[f"level{level}"]
        print(f"level{level}: problems {s['problems']} imported {s['imported']} lowered {s['lowered']} "
              f"verified_share {s['verified_share']} fast1_vs_eager {s['fast1_vs_eager']} "
              f"fast1_vs_compile {s['fast1_vs_compile']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
