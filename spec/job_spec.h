// The contract of each job kind (generate, train_sft, train_grpo, train_rft, evaluate): one field table
// and one reader, used by the API routes, the worker's runners, kforge-train and the CLI
// (docs/spec.md). Tests: ctest -R 'spec_(job_spec|agreement)_test'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "spec/field.h"

namespace kforge::spec {

//! The job kinds with a contract.
enum class JobKind { generate, train_sft, train_grpo, train_rft, evaluate };

//! "generate", "train_sft", "train_grpo", "train_rft", "evaluate".
const char* kind_name(JobKind kind);

//! Every kind, in the order above.
const std::vector<JobKind>& all_kinds();

// The structs below hold what a reader read. Their members carry no defaults of their
// own: every default is in the kind's table, and a reader fills every member it reads.

//! Harness settings shared by dataset building, GRPO and evaluation. SFT's table has no
//! threads: it builds its dataset one check at a time.
struct CheckSettings {
  int limit_ops = 0;               //!< first N ops of the split (0 = all)
  int64_t max_check_elements = 0;  //!< > 0: check on main shapes shrunk to this many input elements
  int trials = 0;                  //!< correctness trials per check
  int threads = 0;                 //!< checks at once
  bool time_kernels = false;       //!< time correct kernels against eager (speed reward, fast_p)
};

//! A generate job: POST /v1/generations, jobs::run_generate.
struct GenerateArgs {
  int64_t op_id = 0;              //!< the op (0 in a request that sends `op` inline)
  nlohmann::json op;              //!< request only: an inline op (api/op_submit checks it)
  std::string target;             //!< kernel language
  std::string device;             //!< where candidates run and are timed: "cpu", "gpu" or "auto" (resolved_device)
  std::string model;              //!< name or name@version
  int64_t model_id = 0;           //!< job only: the resolved version (0 = none trained yet)
  int samples = 0;                //!< candidates to check
  double time_budget_s = 0;       //!< stop checking after this long
  uint64_t seed = 0;              //!< sampling seed
  int priority = 0;               //!< request only: queue priority
};

//! Fields every training job has (train_sft, train_grpo and train_rft).
struct TrainingArgs {
  std::string method;               //!< "sft", "grpo" or "rft"
  std::string dataset;              //!< JSONL path on the worker ("" when suite is set)
  std::string suite;                //!< suite name ("" when dataset is set)
  std::string base_model;           //!< name or name@version as given (request) or resolved (job)
  int64_t base_model_id = 0;        //!< job only: the resolved version (0 = none)
  std::string output_model;         //!< name of the versions the job registers
  int priority = 0;                 //!< request only: queue priority
  int warmup_steps = 0;             //!< linear warm-up
  int micro_batch = 0;              //!< sequences per forward
  double grad_clip = 0;             //!< global-norm clip
  int checkpoint_every = 0;         //!< checkpoint (and model version) every N steps; 0 = end only
  uint64_t seed = 0;                //!< SFT: data order and weight init; GRPO: sampling seeds and task order
};

//! A train_sft job: POST /v1/training-jobs with method sft, jobs::run_train_sft, kforge-train sft|dataset.
struct SftArgs : TrainingArgs {
  int epochs = 0;                  //!< passes over the pairs (when max_steps is 0)
  int max_steps = 0;               //!< optimizer steps; 0 = from epochs
  int batch_size = 0;              //!< sequences per step
  int max_seq_len = 0;             //!< longer pairs are skipped
  int eval_every = 0;              //!< validation loss every N steps
  int vocab_size = 0;              //!< BPE vocabulary when bootstrapping
  double learning_rate = 0;        //!< peak learning rate
  double weight_decay = 0;         //!< AdamW decay
  int variants_per_op = 0;         //!< suite dataset: teacher schedules per op
  CheckSettings check;             //!< suite dataset: how variants are verified
};

//! A train_grpo job: POST /v1/training-jobs with method grpo, jobs::run_train_grpo, kforge-train grpo.
struct GrpoArgs : TrainingArgs {
  int steps = 0;                   //!< optimizer steps
  double learning_rate = 0;        //!< peak learning rate
  int prompts_per_step = 0;        //!< ops per step
  int group_size = 0;              //!< samples per op
  double eps_low = 0, eps_high = 0;  //!< ratio clip
  double kl_coef = 0;              //!< k3 KL weight to the frozen base model
  double temperature = 0, top_p = 0;  //!< sampling
  int max_new_tokens = 0;          //!< completion limit
  int overlong_buffer = 0;         //!< soft overlong penalty window in tokens (0 = off)
  double speed_weight = 0, speed_cap = 0;  //!< reward speed bonus w * min(speedup, cap)
  std::string speed_bonus;         //!< "absolute" or "among_correct" (ranked among a group's correct samples)
  std::string advantage;           //!< baseline: "group_mean" or "leave_one_out"
  int recheck_per_step = 0;        //!< correct kernels re-checked with fresh secret seeds per step
  int curriculum_every = 0;        //!< re-measure pass@1 per task every N steps, train on 0 < pass@1 < 1 (0 = off)
  int curriculum_samples = 0;      //!< samples per task when measuring
  CheckSettings check;             //!< how samples are checked
};

//! A train_rft job (expert iteration): POST /v1/training-jobs with method rft,
//! jobs::run_train_rft, kforge-train rft.
struct RftArgs : TrainingArgs {
  int rounds = 0;                  //!< sample -> verify -> fine-tune rounds
  int samples_per_task = 0;        //!< samples per op and round
  int max_kept_per_task = 0;       //!< distinct verified kernels kept per op and round
  int steps_per_round = 0;         //!< fine-tune optimizer steps per round
  int batch_size = 0;              //!< sequences per fine-tune step
  int max_seq_len = 0;             //!< longer prompt + kernel pairs are skipped
  double learning_rate = 0;        //!< peak learning rate of each round's fine-tune
  double temperature = 0, top_p = 0;  //!< sampling
  int max_new_tokens = 0;          //!< completion limit
  CheckSettings check;             //!< how samples are checked
};

//! An evaluate job: POST /v1/evaluations, jobs::run_evaluate, kforge-train eval.
struct EvaluateArgs {
  std::string model;               //!< name@version (request: name allowed)
  int64_t model_id = 0;            //!< job only: the resolved version
  std::string suite;               //!< "heldout", "builtin", "builtin:train", a directory...
  std::string target;              //!< kernel language
  int priority = 0;                //!< request only: queue priority
  int samples = 0;                 //!< samples per op
  int k = 0;                       //!< pass@k (defaults to samples)
  int max_new_tokens = 0;          //!< completion limit
  double temperature = 0, top_p = 0;  //!< sampling
  uint64_t seed = 0;               //!< sampling seed base
  CheckSettings check;             //!< how samples are checked
};

//! The capability tags a worker needs to run a job for `target` on `device`
//! ({"target:triton", "device:gpu"}): what jobs.requires holds (db/queue.h).
std::vector<std::string> required_capabilities(const std::string& target, const std::string& device);

//! "cpu" or "gpu" for a generation's device: "auto" is cpu for opencl, gpu for cuda and triton.
std::string resolved_device(const GenerateArgs& args);

//! Reads a generate request or job: the table plus "exactly one of op_id or op", and
//! cuda and triton only on a GPU.
ReadResult<GenerateArgs> read_generate(const json& doc, Source source);
//! Reads a train_sft request or job (or kforge-train flags): plus "exactly one of dataset or suite".
ReadResult<SftArgs> read_sft(const json& doc, Source source);
//! Reads a train_grpo request or job: plus a suite, a base model, eps_high >= eps_low,
//! overlong_buffer <= max_new_tokens.
ReadResult<GrpoArgs> read_grpo(const json& doc, Source source);
//! Reads a train_rft request or job: plus a suite and a base model, as GRPO.
ReadResult<RftArgs> read_rft(const json& doc, Source source);
//! Reads an evaluate request or job: plus k defaulting to samples and k <= samples.
ReadResult<EvaluateArgs> read_evaluate(const json& doc, Source source);

//! The typed tables (each field with where its value lives in the struct), for tests
//! that compare what two components made of the same document.
const std::vector<Field<GenerateArgs>>& generate_table();
//! See generate_table.
const std::vector<Field<SftArgs>>& sft_table();
//! See generate_table.
const std::vector<Field<GrpoArgs>>& grpo_table();
//! See generate_table.
const std::vector<Field<RftArgs>>& rft_table();
//! See generate_table.
const std::vector<Field<EvaluateArgs>>& evaluate_table();

//! The fields of a kind, in table order.
std::vector<FieldInfo> job_fields(JobKind kind);
//! One field of a kind by path; throws std::out_of_range for an unknown path (a bug).
FieldInfo job_field(JobKind kind, const std::string& path);

//! A default as flag text ("8", "1e-05", "kforge-tiny", "true"; "" when none).
std::string default_text(const FieldInfo& field);

//! kforge-train's flags for the kind's fields that have one: default, range and doc from the table.
std::vector<FlagSpec> job_flags(JobKind kind);
//! The parsed values of job_flags(kind) as a document for the kind's reader (Source::flags).
json flags_document(const Flags& flags, JobKind kind);
//! Errors of a flags read, named by flag: "--lr: must be in 1e-09..1.0, got 5.0".
std::string describe_flag_errors(const std::vector<FieldError>& errors, JobKind kind);

}  // namespace kforge::spec
