#!/usr/bin/env python3
# Drives bench/jobs/cases.json through a running kforge-server + kforge-worker (started
# by bench/jobs/run.sh): POST SFT, wait, POST an evaluation of its model, wait, then
# rerun the same SFT with `kforge-train sft` on the job's cached dataset. Writes JSON.
import argparse
import json
import os
import platform
import subprocess
import time
import urllib.request
from datetime import datetime


def api(url, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def collect(url, token, path):
    items, after = [], ""
    while True:
        page = api(url, token, "GET", path + "?limit=100" + ("&after=" + after if after else ""))
        items += page["data"]
        if not page["has_more"]:
            return items
        after = page["next_cursor"]


def wait(url, token, path, timeout_s=3600):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        job = api(url, token, "GET", path)
        if job["status"] not in ("queued", "running", "retrying"):
            return job
        time.sleep(0.5)
    raise SystemExit(f"{path} did not finish in {timeout_s} s")


def ts(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def loadavg():
    return list(os.getloadavg())


def environment():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "git_commit": commit,
            "when": datetime.utcnow().isoformat() + "Z", "train_device": os.environ.get("KFORGE_TRAIN_DEVICE", "cpu")}


def event_time(events, prefix):
    for event in events:
        if event["message"].startswith(prefix):
            return ts(event["created_at"])
    return None


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--url", "--token", "--build", "--data-dir", "--cases", "--out"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    cases = json.load(open(args.cases))
    for _ in range(600):
        try:
            urllib.request.urlopen(args.url + "/v1/ready", timeout=2)
            break
        except Exception:
            time.sleep(0.1)
    out = {"command": "bench/jobs/run.sh", "cases": cases, "environment": environment()}

    # 1. SFT through the API.
    load_before = loadavg()
    t0 = time.time()
    job = api(args.url, args.token, "POST", "/v1/training-jobs", cases["sft"])
    job = wait(args.url, args.token, f"/v1/training-jobs/{job['id']}")
    wall = time.time() - t0
    if job["status"] != "succeeded":
        raise SystemExit("sft failed: " + json.dumps(job))
    events = collect(args.url, args.token, f"/v1/training-jobs/{job['id']}/events")
    metrics = [m["metrics"] for m in collect(args.url, args.token, f"/v1/training-jobs/{job['id']}/metrics")]
    started, dataset_done = ts(job["started_at"]), event_time(events, "dataset built")
    train_start, train_end = event_time(events, "started"), event_time(events, "finished")
    step_seconds = sum(m["seconds"] for m in metrics)
    dataset_event = next(e for e in events if e["message"].startswith("dataset built"))
    out["sft"] = {
        "job_id": job["id"], "wall_s": wall, "model": job["result"]["model"], "steps": job["result"]["steps"],
        "final_loss": job["result"]["final_loss"], "val_loss": job["result"]["val_loss"],
        "train_pairs": job["result"]["train_pairs"], "validation_pairs": job["result"]["validation_pairs"],
        "dataset": dataset_event["data"], "dataset_s": dataset_done - started,
        "training_s": train_end - train_start, "trainer_step_seconds_sum": step_seconds,
        "runner_overhead_s_per_step": (train_end - train_start - step_seconds) / len(metrics),
        "model_versions": len(job["result"]["checkpoint_model_ids"]),
        "loss_curve": [m["loss"] for m in metrics], "load_before": load_before, "load_after": loadavg()}

    # 2. Evaluation of the model the job produced.
    load_before = loadavg()
    t0 = time.time()
    body = dict(cases["evaluation"], model=job["result"]["model"])
    evaluation = api(args.url, args.token, "POST", "/v1/evaluations", body)
    evaluation = wait(args.url, args.token, f"/v1/evaluations/{evaluation['id']}")
    if evaluation["status"] != "succeeded":
        raise SystemExit("evaluation failed: " + json.dumps(evaluation))
    board = collect(args.url, args.token, "/v1/leaderboard/models")
    out["evaluation"] = {"job_id": evaluation["id"], "wall_s": time.time() - t0, "device": evaluation["device"],
                         "metrics": evaluation["metrics"], "tasks": evaluation["tasks"],
                         "on_leaderboard": any(row["evaluation_id"] == evaluation["id"] for row in board),
                         "load_before": load_before, "load_after": loadavg()}

    # 3. The same SFT with the bare trainer on the job's cached dataset, same settings.
    h = cases["sft"]["hyperparameters"]
    data = os.path.join(args.data_dir, "training", f"job-{job['id']}", "dataset.jsonl")
    out_dir = os.path.join(args.data_dir, "kforge-train-sft")
    cmd = [os.path.join(args.build, "bin", "kforge-train"), "sft", "--data", data, "--out-dir", out_dir,
           "--preset", cases["sft"]["output_model"], "--vocab-size", str(h["vocab_size"]), "--steps", str(h["max_steps"]),
           "--batch", str(h["batch_size"]), "--micro-batch", str(h["micro_batch"]), "--max-tokens", str(h["max_seq_len"]),
           "--eval-every", str(h["eval_every"]), "--checkpoint-every", str(h["checkpoint_every"]),
           "--lr", str(h["learning_rate"]), "--warmup", str(h["warmup_steps"]), "--seed", str(h["seed"])]
    load_before = loadavg()
    t0 = time.time()
    run = subprocess.run(cmd, capture_output=True, text=True, check=True)
    bare_wall = time.time() - t0
    bare = json.loads(run.stdout.strip().splitlines()[-1])
    bare_metrics = [json.loads(line) for line in open(os.path.join(out_dir, "metrics.jsonl"))]
    bare_step_seconds = sum(m["seconds"] for m in bare_metrics)
    out["kforge_train_sft"] = {"command": " ".join(cmd).replace(args.data_dir, "$KFORGE_DATA_DIR"), "wall_s": bare_wall,
                               "final_loss": bare["final_loss"], "val_loss": bare["val_loss"],
                               "trainer_step_seconds_sum": bare_step_seconds,
                               "loss_curve": [m["loss"] for m in bare_metrics],
                               "load_before": load_before, "load_after": loadavg()}
    out["comparison"] = {
        "same_final_loss": bare["final_loss"] == out["sft"]["final_loss"],
        "same_loss_curve": out["kforge_train_sft"]["loss_curve"] == out["sft"]["loss_curve"],
        "job_training_s_over_bare_step_seconds": out["sft"]["training_s"] / bare_step_seconds,
        "job_step_seconds_over_bare_step_seconds": step_seconds / bare_step_seconds}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(json.dumps({"sft": {k: out["sft"][k] for k in ("wall_s", "dataset_s", "training_s", "final_loss",
                                                         "runner_overhead_s_per_step")},
                      "evaluation": {"wall_s": out["evaluation"]["wall_s"],
                                     "fast_0": out["evaluation"]["metrics"]["fast_0"],
                                     "compile_rate": out["evaluation"]["metrics"]["compile_rate"]},
                      "comparison": out["comparison"]}, indent=2))


if __name__ == "__main__":
    main()
