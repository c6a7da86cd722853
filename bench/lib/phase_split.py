# Where a generation's time went, from its result's phases_ms (worker/jobs/generate.cpp,
# docs/jobs.md "Where a generation's time goes"): one compact row per generation, a one-line
# print of it, and the median of every phase over many. Used by bench/e2e/e2e.py (CPU) and
# bench/gpu/e2e.sh (+ bench/gpu/summarize.py). Test: ctest -R bench_phase_split_test
import statistics
import sys

# Setup phases (Checker::create) and per-candidate phases (CheckResult phases_ms), in the order
# they happen; the short names are what the one-line print shows.
SETUP = [("reference_compile", "ts"), ("inputs", "inputs"), ("reference", "cpu ref"), ("arena", "arena"),
         ("sandbox_start", "child"), ("gpu_reference_start", "ref runner"), ("gpu_reference", "gpu ref")]
CANDIDATE = [("sandbox_wait", "wait"), ("compile", "build"), ("run", "run"), ("jit", "of which jit"),
             ("time_kernel", "time"),
             ("time_eager", "eager"), ("time_compile", "compile"), ("overhead", "overhead"),
             ("spare_wait", "of which settle"), ("compare", "compare"), ("io", "io"),
             ("prepared", "jit ahead")]


def split_row(result):
    """The phases of one generation's result (None when it has none), in seconds."""
    phases = (result or {}).get("phases_ms")
    if not phases:
        return None
    s = lambda ms: None if ms is None else round(ms / 1000.0, 3)
    row = {key: s(phases.get(key)) for key in ("queue_wait", "load_op", "propose", "setup", "propose_wait",
                                                "quiet_wait", "harvest", "check", "write", "other", "total")}
    setup = phases.get("setup_detail") or {}
    row["setup_detail"] = {key: s(setup.get(key)) for key, _ in SETUP if key in setup}
    row["pooled_children"] = setup.get("pooled_children")
    row["candidates"] = [dict({key: s(c.get(key)) for key, _ in CANDIDATE + [("total", "")]},
                              sample=c.get("sample"), outcome=c.get("outcome"), cached=c.get("cached"))
                         for c in phases.get("candidates") or []]
    return row


def format_split(row):
    """One line: queue, set-up (its parts), proposing, each candidate (its parts), the rest."""
    if not row:
        return "no phases_ms in the result"
    num = lambda value: "-" if value is None else "%.1f" % value
    setup = " ".join("%s %s" % (short, num(row["setup_detail"].get(key))) for key, short in SETUP
                     if row["setup_detail"].get(key))
    parts = ["queue %s" % num(row["queue_wait"]), "setup %s (%s; pooled %s)" % (num(row["setup"]), setup,
                                                                                 row.get("pooled_children")),
             "propose %s" % num(row["propose"]), "propose wait %s" % num(row["propose_wait"])]
    for cand in row["candidates"]:
        detail = " ".join("%s %s" % (short, num(cand.get(key))) for key, short in CANDIDATE if cand.get(key))
        parts.append("cand%s %s %s (%s)" % (cand["sample"], cand["outcome"], num(cand["total"]), detail))
    parts += ["quiet %s" % num(row["quiet_wait"]), "inductor harvest %s" % num(row.get("harvest")),
              "write %s" % num(row["write"]), "other %s" % num(row["other"]),
              "worker total %s s" % num(row["total"])]
    return " | ".join(parts)


def median_split(rows):
    """The median of every phase over generations (seconds): where a typical one waits."""
    rows = [r for r in rows if r]
    if not rows:
        return None
    med = lambda values: round(statistics.median(values), 3) if values else None
    out = {key: med([r[key] for r in rows if r.get(key) is not None])
           for key in ("queue_wait", "load_op", "propose", "setup", "propose_wait", "quiet_wait", "harvest", "check",
                       "write", "other", "total")}
    out["setup_detail"] = {key: med([r["setup_detail"][key] for r in rows if r["setup_detail"].get(key) is not None])
                           for key, _ in SETUP}
    first = [r["candidates"][0] for r in rows if r["candidates"]]
    later = [c for r in rows for c in r["candidates"][1:]]
    for name, cands in (("first_candidate", first), ("later_candidates", later)):
        out[name] = {key: med([c[key] for c in cands if c.get(key) is not None]) for key, _ in CANDIDATE + [("total", "")]}
    out["generations"] = len(rows)
    return out


def _self_test():
    result = {"phases_ms": {"queue_wait": 200, "load_op": 5, "propose": 40, "setup": 3000, "propose_wait": 0,
                            "quiet_wait": 0, "check": 4000, "write": 30, "other": 10, "total": 7045,
                            "setup_detail": {"reference": 1000, "sandbox_start": 1500, "total": 3000,
                                             "pooled_children": 1},
                            "candidates": [{"sample": 0, "outcome": "correct", "cached": False, "compile": 500,
                                            "run": 100, "time_kernel": 1000, "time_eager": 900, "overhead": 100,
                                            "total": 2600}]}}
    row = split_row(result)
    assert row["setup"] == 3.0 and row["candidates"][0]["time_eager"] == 0.9, row
    line = format_split(row)
    assert "cand0 correct 2.6" in line and "child 1.5" in line, line
    assert median_split([row, row])["first_candidate"]["total"] == 2.6
    assert split_row({}) is None and format_split(None).startswith("no phases_ms")
    print("phase_split self-test passed")


if __name__ == "__main__" and "--self-test" in sys.argv:
    _self_test()
