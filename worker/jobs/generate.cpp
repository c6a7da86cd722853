// The `generate` job runner behind worker/jobs/generate.h. The checking loop is
// the product's core path: every candidate, whatever its outcome, becomes a
// candidates row before the next one is checked (once per attempt: CandidateWriter).
// Test: ctest -R jobs_generate_test.
#include "worker/jobs/generate.h"
#include "worker/jobs/generate_answer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <future>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "db/connection.h"
#include "db/models.h"
#include "db/ops.h"
#include "worker/codegen/codegen.h"
#include "worker/harness/checker.h"
#include "worker/harness/child_pool.h"
#include "worker/jobs/candidate_writer.h"
#include "worker/jobs/job_args.h"
#include "worker/jobs/model_files.h"
#include "worker/jobs/quiet_window.h"
#include "worker/jobs/result_store_db.h"
#include "worker/train/model_policy.h"
#include "worker/train/prompt_template.h"

namespace kforge::jobs {
namespace {

using json = nlohmann::json;

json optional_json(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

// Seconds since the epoch of the database's ISO-8601 UTC text ("2026-11-22T08:00:00.123456Z");
// -1 when it is not such a text.
double iso_seconds(const std::string& text) {
  std::tm parts{};
  double seconds = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf", &parts.tm_year, &parts.tm_mon, &parts.tm_mday, &parts.tm_hour,
                  &parts.tm_min, &seconds) != 6)
    return -1;
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  return static_cast<double>(timegm(&parts)) + seconds;
}

// Where a generation's time goes, in ms (docs/jobs.md "Where a generation's time goes"): the
// result's and every progress event's `phases_ms`. Proposing candidates (another thread) and
// setting up the checker (this one) run side by side, so `propose` is the proposing thread's
// own time and `propose_wait` what the job waited for it once the checker was set up; `other`
// is the total less the serial phases (load_op + setup + propose_wait + quiet_wait + harvest +
// check + write); `harvest` is TorchInductor's kernels taken from the reference runner (GPU, triton).
struct GenerationPhases {
  clock_type::time_point started = clock_type::now();
  double queue_wait_ms = -1;  // POST -> claim, on the database's clock; not part of total
  double load_op_ms = 0, propose_ms = 0, setup_ms = 0, propose_wait_ms = 0, quiet_wait_ms = 0, harvest_ms = 0,
         check_ms = 0, write_ms = 0;
  json setup = json::object();      // Checker::setup_phases()
  json candidates = json::array();  // each checked candidate's phases_ms, with its sample and outcome

  json to_json() const {
    const double total = ms_since(started);
    const double serial = load_op_ms + setup_ms + propose_wait_ms + quiet_wait_ms + harvest_ms + check_ms + write_ms;
    return {{"queue_wait", queue_wait_ms >= 0 ? json(queue_wait_ms) : json(nullptr)},
            {"load_op", load_op_ms},
            {"propose", propose_ms},
            {"setup", setup_ms},
            {"propose_wait", propose_wait_ms},
            {"quiet_wait", quiet_wait_ms},
            {"harvest", harvest_ms},
            {"check", check_ms},
            {"write", write_ms},
            {"other", total - serial},
            {"total", total},
            {"setup_detail", setup},
            {"candidates", candidates}};
  }
};

// One candidate's row of phases_ms.candidates: the check's own phases, named as in its result.
json candidate_phases(int sample_idx, const harness::CheckResult& result) {
  json phases = json::parse(result.to_json())["phases_ms"];
  phases["sample"] = sample_idx;
  phases["outcome"] = harness::outcome_name(result.outcome);
  phases["cached"] = result.cached;
  return phases;
}

// Everything a candidate row needs from a check result.
db::CandidateRecord candidate_record(const worker::JobContext& ctx, const GenerateArgs& args, int sample_idx,
                                     const CandidateProgram& program, const harness::CheckResult& result) {
  db::CandidateRecord record;
  record.job_id = ctx.job().id;
  record.op_id = args.op_id;
  record.model_id = program.model_id;
  record.sample_idx = sample_idx;
  record.target = args.target;
  record.device = result.environment.device;
  record.source = program.source;
  record.outcome = harness::outcome_name(result.outcome);
  record.message = result.message;
  if (result.kernel) record.kernel_ms = result.kernel->median_ms;
  if (result.baseline) record.baseline_ms = result.baseline->median_ms;
  if (result.outcome == harness::Outcome::correct && result.kernel) record.speedup = result.speedup;
  // A suspicious speedup or a weak test is kept but never ranked.
  record.flagged = result.suspicious || result.weak_test;
  json details = json::parse(result.to_json());
  details["generator"] = program.generator;
  details["generator_detail"] = program.detail;
  if (!program.provenance.empty()) details["provenance"] = json::parse(program.provenance, nullptr, false);
  record.details_json = details.dump();
  return record;
}

spec::OpSpec load_op(pqxx::connection& conn, int64_t op_id) {
  auto op = db::op_get(conn, op_id);
  if (!op) throw std::invalid_argument("op " + std::to_string(op_id) + " does not exist");
  auto parsed = spec::parse_op_spec(op->spec_json);
  if (!parsed.ok()) {
    throw std::invalid_argument("stored op " + std::to_string(op_id) + " is invalid: " + parsed.errors[0].field + ": " +
                                parsed.errors[0].message);
  }
  return parsed.spec;
}

// The model version's files when it has trained weights this worker has or can fetch
// (model_files.h); nullopt (the teacher proposes) when it has none, or they are on
// another host and no server is configured to fetch them from.
std::optional<ModelFiles> trained_model_files(pqxx::connection& conn, int64_t model_id,
                                              const ModelFetchOptions& fetch) {
  if (model_id <= 0) return std::nullopt;
  auto model = db::model_get(conn, model_id);
  if (!model || model->state != "ready") return std::nullopt;
  if (model->files_json.find("\"config.json\"") == std::string::npos) return std::nullopt;
  try {
    return model_files_resolve(*model, fetch, "model");
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // not here and nowhere to fetch from: the teacher's note says so
  }
}

worker::JobOutcome run_generate(worker::JobContext& ctx, const std::string& database_url,
                                const ModelFetchOptions& fetch, const GenerateOptions& generate_options,
                                const std::shared_ptr<harness::ChildPool>& pool) {
  auto started = std::chrono::steady_clock::now();
  GenerationPhases phases;
  if (double created = iso_seconds(ctx.job().created_at), claimed = iso_seconds(ctx.job().attempted_at);
      created > 0 && claimed >= created)
    phases.queue_wait_ms = (claimed - created) * 1000;
  GenerateArgs args;
  try {
    args = parse_generate_args(ctx.args_json());
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
  auto conn = db::connect(database_url);
  spec::OpSpec spec;
  try {
    spec = load_op(*conn, args.op_id);
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
  phases.load_op_ms = ms_since(phases.started);

  ctx.report_progress(
      json{{"phase", "preparing"}, {"checked", 0}, {"total", args.samples}, {"phases_ms", phases.to_json()}}.dump());
  std::string error;
  harness::CheckOptions options;
  options.target = args.target;
  // opencl runs on the job's device (cpu: PoCL, gpu: NVIDIA's platform); cuda and triton on CUDA device 0.
  options.device = args.target == "opencl" ? spec::resolved_device(args) : "";
  options.result_store = make_db_result_store(database_url);  // identical candidates are checked once across jobs
  options.stop_requested = [&ctx] { return ctx.cancelled(); };  // a cancel or shutdown ends a check in progress
  options.child_pool = pool;  // children pre-started by this worker (child_pool.h)
  options.prefetch_ahead = generate_options.prefetch_ahead;
  options.gpu_time_budget_s = generate_options.gpu_time_budget_s;
  // The candidates are proposed (a model's sampling, or the teacher) on another thread while
  // the checker is set up here (reference outputs, children, the baselines' runners). Not the
  // other way round: a sandboxed child dies with the thread that started it (PR_SET_PDEATHSIG).
  struct Sampled {
    std::vector<CandidateProgram> programs;
    double ms = 0;
  };
  struct Proposal {
    std::vector<CandidateProgram> programs;  // the teacher's: checked while a model still samples
    std::future<Sampled> model_samples;      // a trained model's samples, appended after the teacher's
    std::string note;
    std::optional<ModelFiles> model_files;
    std::string refusal;  // a model file that does not match its row: fail, no retry
    double ms = 0;
  };
  auto proposing = std::async(std::launch::async, [&] {
    auto started_proposing = clock_type::now();
    Proposal proposal;
    try {
      proposal.model_files = trained_model_files(*conn, args.model_id, fetch);  // a failed download throws: retried
    } catch (const ModelFileMismatch& e) {
      proposal.refusal = e.what();
      return proposal;
    }
    if (proposal.model_files) {
      // The teacher's first schedules are checked first (a verified answer early) while the
      // model samples on a thread of its own; its samples follow. best_generator says which won.
      proposal.programs = teacher_candidates(spec, std::min(args.samples, kTeacherBesideModel), &proposal.note,
                                             args.target);
      proposal.model_samples = std::async(std::launch::async, [spec, dir = proposal.model_files->dir, &args] {
        auto sampling_started = clock_type::now();
        Sampled sampled;
        sampled.programs = policy_candidates(spec, dir, args.model_id, args.samples, args.seed, args.target);
        sampled.ms = ms_since(sampling_started);
        return sampled;
      });
    } else {
      proposal.note = "model '" + args.model +
                      "' has no trained version on this worker; candidates come from the teacher compiler";
      proposal.programs = teacher_candidates(spec, args.samples, &proposal.note, args.target);
    }
    proposal.ms = ms_since(started_proposing);
    return proposal;
  });
  auto setup_started = clock_type::now();
  auto checker = harness::Checker::create(spec, options, error);
  phases.setup_ms = ms_since(setup_started);
  auto proposal_waited = clock_type::now();
  Proposal proposal = proposing.get();  // rethrows what proposing threw (a failed download: retried)
  phases.propose_wait_ms = ms_since(proposal_waited);
  phases.propose_ms = proposal.ms;
  if (!proposal.refusal.empty()) return worker::JobOutcome::fail(proposal.refusal, /*retryable=*/false);
  std::vector<CandidateProgram>& programs = proposal.programs;
  const std::string& note = proposal.note;
  const std::optional<ModelFiles>& model_files = proposal.model_files;
  // An op the teacher cannot lower may still get Inductor's kernels (triton on a GPU).
  const bool inductor_possible = generate_options.inductor_candidates && args.target == "triton" &&
                                 spec::resolved_device(args) == "gpu";
  std::future<Sampled>& model_samples = proposal.model_samples;
  const size_t model_slot = programs.size();  // where the model's samples go: after the teacher's, before Inductor's
  // Waits for the model's samples (if still sampling) and puts them at model_slot.
  auto take_model_samples = [&] {
    if (!model_samples.valid()) return;
    auto waited = clock_type::now();
    Sampled sampled = model_samples.get();  // rethrows what sampling threw (a model that does not load)
    phases.propose_wait_ms += ms_since(waited);
    phases.propose_ms += sampled.ms;
    programs.insert(programs.begin() + static_cast<std::ptrdiff_t>(model_slot),
                    std::make_move_iterator(sampled.programs.begin()), std::make_move_iterator(sampled.programs.end()));
  };
  if (programs.empty() && !model_samples.valid() && !inductor_possible) {
    return worker::JobOutcome::fail("no kernel could be produced for target " + args.target + ": " + note,
                                    /*retryable=*/false);
  }
  if (!checker) return worker::JobOutcome::fail("the op's reference failed: " + error, /*retryable=*/false);
  phases.setup = json::parse(checker->setup_phases().to_json());
  // TorchInductor's kernels as one more candidate, harvested when the loop reaches it (after
  // the others, so the first candidate is not held up by Inductor's compile).
  json inductor = {{"enabled", generate_options.inductor_candidates}};
  if (!generate_options.inductor_candidates) {
    inductor["reason"] = "turned off on this worker (KFORGE_INDUCTOR_CANDIDATES=off)";
  } else if (args.target != "triton") {
    inductor["reason"] = "Inductor's kernels are Triton: target " + args.target + " gets none";
  } else {
    programs.push_back({"", "inductor", "", 0, ""});
  }
  // This attempt's candidates replace an earlier attempt's (a retry shows one set).
  auto begun = clock_type::now();
  CandidateWriter writer(database_url, ctx);
  if (!writer.begin()) return worker::JobOutcome::fail("stopped before the first candidate (lease lost or stopping)");
  phases.write_ms += ms_since(begun);

  std::map<std::string, int> by_outcome;
  std::optional<db::CandidateRecord> best;
  std::map<int64_t, db::CandidateRecord> correct_records;
  std::vector<RankedCandidate> correct;
  int checked = 0;
  bool out_of_time = false;
  // Timing on a busy machine: wait for a quiet moment before each check, within the
  // generation's allowance and budget; a kernel timed while others still used the CPU
  // is answered all the same, its timing marked unreliable (below).
  // On a GPU, candidates and baselines are timed by CUDA events while the worker's GPU gate
  // keeps its own GPU work out; other processes' CPU use does not enter those numbers (the
  // runner reports no CPU contention), so a GPU check waits for no CPU quiet window. On the
  // H200 a pool of runners starting beside the check made every probe busy: 10 s per
  // generation waited for nothing.
  const bool gpu_timed = checker->times_on_gpu();
  const double quiet_allowance_s = gpu_timed ? 0.0 : quiet_wait_allowance_s(args.time_budget_s);
  double quiet_waited_s = 0;
  int quiet_waits = 0, quiet_found = 0, quiet_skipped = 0, quiet_recent = 0;
  constexpr double kBusySpellS = 60;  // after a wait that found no quiet window, this worker stops waiting a while
  // A check whose timed runs others left alone just now says the machine is quiet as well as a
  // probe would: the next check goes ahead without one (a probe costs 0.25 s per candidate).
  constexpr double kRecentlyQuietS = 2;
  std::optional<clock_type::time_point> quiet_timed_at;
  std::map<int64_t, double> disturbed_cores;  // correct candidate id -> others' cores in its disturbed timing
  std::map<int64_t, std::string> best_generator;  // correct candidate id -> its generator
  // Inductor's placeholder (an empty source) becomes its harvested candidate here, once; when
  // the harvest finds none, the reason goes in result.inductor and the placeholder is skipped.
  bool inductor_tried = false;
  auto unharvested = [&programs](size_t idx) {
    return idx < programs.size() && programs[idx].generator == "inductor" && programs[idx].source.empty();
  };
  auto harvest_at = [&](size_t idx) {
    if (inductor_tried) return false;
    inductor_tried = true;
    std::string why;
    auto harvest_started = clock_type::now();
    auto harvested = inductor_candidate(*checker, &why);
    phases.harvest_ms += ms_since(harvest_started);
    inductor["harvested"] = harvested.has_value();
    if (!harvested) {
      inductor["reason"] = why;
      return false;
    }
    programs[idx] = *harvested;
    return true;
  };
  for (size_t sample_idx = 0;; ++sample_idx) {
    if (sample_idx == model_slot) take_model_samples();
    if (sample_idx >= programs.size()) break;
    if (ctx.cancelled()) return worker::JobOutcome::fail("stopped before candidate " + std::to_string(sample_idx));
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (elapsed > args.time_budget_s) {
      out_of_time = true;
      break;
    }
    double room = std::min(quiet_allowance_s - quiet_waited_s, args.time_budget_s - elapsed);
    auto quiet_started = clock_type::now();
    if (room > 0 && in_busy_spell(kBusySpellS)) {
      ++quiet_skipped;
    } else if (room > 0 && quiet_timed_at && ms_since(*quiet_timed_at) < kRecentlyQuietS * 1000) {
      ++quiet_recent;
    } else if (room > 0) {
      QuietWait wait = wait_for_quiet(room, options.max_contention, [&ctx] { return ctx.cancelled(); });
      quiet_waited_s += wait.waited_s;
      ++quiet_waits;
      quiet_found += wait.quiet ? 1 : 0;
      if (!wait.quiet && !ctx.cancelled()) note_busy_spell();
    }
    phases.quiet_wait_ms += ms_since(quiet_started);
    if (unharvested(sample_idx) && !harvest_at(sample_idx)) continue;
    // The next candidates' Triton JIT (CPU work per kernel specialisation) runs in their own
    // children while this one is verified and timed (GPU, triton: Checker::prefetch), up to
    // prefetch_ahead of them, all started together. Inductor's kernels, last, are harvested
    // early for it once they are among those (between two checks, as they would be later;
    // after the first check unless they are next, so the first candidate is not held up);
    // not while the model's samples, due before them, are out.
    const size_t next = sample_idx + 1;
    const size_t ahead = static_cast<size_t>(std::max(0, generate_options.prefetch_ahead));
    const size_t window_end = std::min(programs.size(), next + std::max<size_t>(ahead, 1));
    for (size_t later = next; later < window_end; ++later)
      if (gpu_timed && unharvested(later) && !model_samples.valid() && (later == next || sample_idx > 0))
        harvest_at(later);
    auto check_started = clock_type::now();
    for (size_t later = next; later < next + ahead && later < programs.size(); ++later)
      if (!programs[later].source.empty()) checker->prefetch(programs[later].source);
    harness::CheckResult result = checker->check(programs[sample_idx].source);
    phases.check_ms += ms_since(check_started);
    phases.candidates.push_back(candidate_phases(static_cast<int>(sample_idx), result));
    if (result.kernel && !result.cached && !result.kernel->disturbed && result.kernel->others_cores >= 0)
      quiet_timed_at = clock_type::now();
    if (ctx.cancelled()) return worker::JobOutcome::fail("stopped while checking candidate " + std::to_string(sample_idx));
    auto write_started = clock_type::now();
    auto record = candidate_record(ctx, args, static_cast<int>(sample_idx), programs[sample_idx], result);
    auto written = writer.write(record);
    phases.write_ms += ms_since(write_started);
    if (!written) return worker::JobOutcome::fail("stopped before storing candidate " + std::to_string(sample_idx));
    int64_t id = *written;
    ++checked;
    ++by_outcome[record.outcome];
    if (record.speedup) {
      std::string reason = result.weak_test ? "the op's reference output is near-constant (weak test): a constant "
                                              "kernel could pass, so correctness proves little"
                                            : result.message;
      correct.push_back({id, *record.speedup, record.flagged, reason});
      best_generator[id] = programs[sample_idx].generator;
      correct_records[id] = record;
      for (const auto* stats : {&result.kernel, &result.baseline}) {
        if (*stats && (*stats)->disturbed) disturbed_cores[id] = std::max(disturbed_cores[id], (*stats)->others_cores);
      }
      if (!record.flagged && (!best || *record.speedup > *best->speedup)) best = record;
    }
    ctx.report_progress(json{{"phase", "checking"},
                             {"checked", checked},
                             {"total", programs.size() + (model_samples.valid() ? args.samples : 0)},  // samples still coming
                             {"correct", by_outcome["correct"]},
                             {"best_speedup", best ? json(*best->speedup) : json(nullptr)},
                             {"phases_ms", phases.to_json()}}
                            .dump());
  }

  take_model_samples();  // the loop ran out of time first: the samples still count as proposed
  if (checked == 0 && !out_of_time) {
    // The only candidate would have been Inductor's, and it was refused.
    return worker::JobOutcome::fail("no kernel could be produced for target " + args.target + ": " + note +
                                        "; " + inductor.value("reason", std::string("no Inductor candidate")),
                                    /*retryable=*/false);
  }
  if (checked == 0) {
    // Nothing was checked: there is no kernel to answer with, and "none correct among 0"
    // would read as if kernels had been tried. Say why instead.
    return worker::JobOutcome::fail("no kernel could be checked: the time budget of " +
                                        std::to_string(static_cast<int>(args.time_budget_s)) +
                                        " s ran out before the first of " + std::to_string(programs.size()) +
                                        " candidates" + (note.empty() ? "" : " (" + note + ")"),
                                    /*retryable=*/false);
  }
  std::map<std::string, int> proposed_by;
  for (const auto& program : programs)
    if (!program.source.empty()) ++proposed_by[program.generator];
  json result = {{"checked", checked},
                 {"proposed", programs.size()},
                 {"by_outcome", by_outcome},
                 {"generator", model_files ? "policy" : "teacher"},
                 {"proposed_by_generator", proposed_by},
                 {"inductor", inductor},
                 {"out_of_time", out_of_time}};
  if (!note.empty()) result["note"] = note;
  if (model_files) {
    result["model_files"] = {{"source", model_files->source},
                             {"fetched", model_files->fetched},
                             {"cached", model_files->cached},
                             {"bytes_fetched", model_files->bytes_fetched}};
  }
  GenerationAnswer answer = choose_answer(correct, checked);
  if (answer.best_id) {
    const db::CandidateRecord& chosen = correct_records[*answer.best_id];
    result["best_candidate_id"] = *answer.best_id;
    result["best_generator"] = best_generator[*answer.best_id];  // which generator won
    result["best_speedup"] = answer.best_speedup;
    result["best_kernel_ms"] = optional_json(chosen.kernel_ms);
    result["baseline_ms"] = optional_json(chosen.baseline_ms);
    result["device"] = chosen.device;
  } else {
    result["best_candidate_id"] = nullptr;
  }
  json timing = {{"quiet_wait_s", quiet_waited_s},
                 {"quiet_wait_allowance_s", quiet_allowance_s},
                 {"quiet_waits", quiet_waits},
                 {"quiet_found", quiet_found},
                 {"quiet_skipped_busy_spell", quiet_skipped},
                 {"quiet_skipped_recently_quiet", quiet_recent},
                 {"max_contention", options.max_contention},
                 {"timed_on", gpu_timed ? "gpu" : "cpu"},
                 {"reliable", nullptr}};
  if (answer.best_id) {
    auto disturbed = disturbed_cores.find(*answer.best_id);
    timing["reliable"] = disturbed == disturbed_cores.end();
    if (disturbed != disturbed_cores.end()) {
      char text[320];
      std::snprintf(text, sizeof text,
                    "timing unreliable: other processes used %.2f cores while this kernel or the eager baseline was "
                    "timed (quiet means at most %.2f); waited %.1f s of %.1f s allowed for a quiet window",
                    disturbed->second, options.max_contention, quiet_waited_s, quiet_allowance_s);
      timing["note"] = text;
    }
  }
  result["timing"] = timing;
  result["phases_ms"] = phases.to_json();
  result["best_flagged"] = answer.best_flagged;
  result["eager_wins"] = answer.eager_wins;
  if (!answer.message.empty()) result["message"] = answer.message;
  return worker::JobOutcome::complete(result.dump());
}

}  // namespace

GenerateArgs parse_generate_args(const std::string& args_json) {
  return args_or_throw(spec::read_generate(parse_job_args_json(args_json, "generate"), spec::Source::job));
}

std::vector<CandidateProgram> teacher_candidates(const spec::OpSpec& spec, int count, std::string* note,
                                                 const std::string& target) {
  std::vector<CandidateProgram> programs;
  auto add_note = [&](const std::string& text) {
    if (note) *note += (note->empty() ? "" : "; ") + text;
  };
  codegen::Target language = codegen::Target::opencl;
  if (!codegen::parse_target(target, language)) {
    add_note("the teacher compiler cannot emit target '" + target + "'");
    return programs;
  }
  codegen::Analysis analysis = codegen::analyze(spec);
  if (!analysis.ok()) {
    add_note("the teacher compiler cannot lower this op: " + analysis.unsupported);
    return programs;
  }
  // The space lists the schedules expected fastest on the target's usual device first.
  std::string first_refusal;
  for (const auto& schedule : codegen::schedule_space(analysis, language)) {
    if (static_cast<int>(programs.size()) >= count) break;
    codegen::Generated generated = codegen::emit_program(analysis, schedule, language);
    if (!generated.ok()) {
      if (first_refusal.empty()) first_refusal = generated.unsupported;
      continue;
    }
    programs.push_back({generated.program, "teacher", schedule.label(), 0});
  }
  if (programs.empty())
    add_note("the teacher compiler emitted no " + target + " program" +
             (first_refusal.empty() ? std::string(" (empty schedule space)") : ": " + first_refusal));
  return programs;
}

std::vector<CandidateProgram> policy_candidates(const spec::OpSpec& spec, const std::string& model_dir,
                                                int64_t model_id, int count, uint64_t seed, const std::string& target) {
  auto policy = train::ModelPolicy::from_dir(model_dir, {}, /*trainable=*/false);
  train::PromptOp prompt_op;
  prompt_op.name = spec.name;
  prompt_op.source = spec.source;
  prompt_op.target = target;
  for (const auto& input : spec.inputs) prompt_op.inputs.push_back({input.name, spec::dtype_name(input.dtype), input.shape});
  std::string prompt = train::render_prompt(prompt_op, train::PromptStyle::kforge_tiny);
  train::SamplingConfig sampling;
  sampling.temperature = 0.8;
  sampling.top_p = 0.95;
  sampling.max_new_tokens = 1024;
  sampling.stop = train::prompt_stop_strings(train::PromptStyle::kforge_tiny);
  std::vector<CandidateProgram> programs;
  for (auto& completion : policy->sample(policy->encode(prompt), count, sampling, seed)) {
    programs.push_back({completion.text, "policy", "seed " + std::to_string(seed), model_id});
  }
  return programs;
}

std::optional<CandidateProgram> inductor_candidate(harness::Checker& checker, std::string* note) {
  harness::InductorHarvest harvest = checker.harvest_inductor();
  if (!harvest.ok()) {
    if (note) *note += (note->empty() ? "" : "; ") + ("no Inductor candidate: " + harvest.reason);
    return std::nullopt;
  }
  CandidateProgram program{harvest.source, "inductor", "", 0, harvest.provenance};
  auto provenance = json::parse(harvest.provenance, nullptr, false);
  if (provenance.is_object())
    program.detail = "torch " + provenance.value("torch_version", std::string("?")) + ", triton " +
                     provenance.value("triton_version", std::string("?")) + ", torch.compile default mode, dynamic shapes";
  return program;
}

GenerateOptions GenerateOptions::from_env() {
  GenerateOptions options;
  const char* value = std::getenv("KFORGE_INDUCTOR_CANDIDATES");
  std::string text = value ? value : "";
  if (text == "off" || text == "0") {
    options.inductor_candidates = false;
  } else if (!text.empty() && text != "on" && text != "1") {
    throw std::invalid_argument("KFORGE_INDUCTOR_CANDIDATES must be on or off, not '" + text + "'");
  }
  auto count = [](const char* name, const char* what, int& out) {
    const char* text = std::getenv(name);
    if (!text || !*text) return;
    char* end = nullptr;
    long parsed = std::strtol(text, &end, 10);
    if (*end != '\0' || parsed < 0 || parsed > 64)
      throw std::invalid_argument(std::string(name) + " must be a count of " + what + " from 0 to 64, not '" + text + "'");
    out = static_cast<int>(parsed);
  };
  count("KFORGE_CHILD_POOL", "children", options.child_pool);
  count("KFORGE_PREFETCH_AHEAD", "candidates", options.prefetch_ahead);
  if (const char* text = std::getenv("KFORGE_GPU_TIME_BUDGET_S"); text && *text) {
    char* end = nullptr;
    double parsed = std::strtod(text, &end);
    if (*end != '\0' || !(parsed >= 0.05 && parsed <= 10))
      throw std::invalid_argument(std::string("KFORGE_GPU_TIME_BUDGET_S must be seconds from 0.05 to 10, not '") +
                                  text + "'");
    options.gpu_time_budget_s = parsed;
  }
  return options;
}

void register_generate_job(worker::HandlerRegistry& registry, const std::string& database_url,
                           const ModelFetchOptions& fetch, const GenerateOptions& options) {
  // One pool for the worker's slots: children started before their op, handed to the next
  // generation's checker and replaced after its timed runs (KFORGE_CHILD_POOL=0: none).
  std::shared_ptr<harness::ChildPool> pool;
  if (options.child_pool > 0) {
    pool = std::make_shared<harness::ChildPool>(options.child_pool);
    const auto& capabilities = options.capabilities;
    auto has = [&capabilities](const std::string& tag) {
      return std::find(capabilities.begin(), capabilities.end(), tag) != capabilities.end();
    };
    // Warm from the start for the targets this worker claims: even its first generation
    // finds its children started (on a GPU: runners with torch, CUDA and compilers loaded).
    std::vector<harness::CheckOptions> kinds;
    for (const char* target : {"triton", "cuda"})
      if (has(std::string("target:") + target) && has("device:gpu")) {
        kinds.emplace_back();
        kinds.back().target = target;
      }
    if (has("target:opencl") && has("device:cpu")) {
      kinds.emplace_back();
      kinds.back().device = "cpu";
    }
    for (auto& check_options : kinds) {
      check_options.child_pool = pool;
      check_options.prefetch_ahead = options.prefetch_ahead;
      harness::Checker::warm_pool(check_options);
    }
  }
  registry.add("generate", [database_url, fetch, options, pool](worker::JobContext& ctx) {
    return run_generate(ctx, database_url, fetch, options, pool);
  });
}

}  // namespace kforge::jobs
