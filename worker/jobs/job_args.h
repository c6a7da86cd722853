// Payloads of the train_sft, train_grpo and evaluate jobs, as POST /v1/training-jobs
// and POST /v1/evaluations store them, parsed into structs (JSON stops here), and the
// suite names they use. Test: ctest -R jobs_args_test.
#pragma once

#include <cstdint>
#include <string>

namespace kforge::jobs {

//! Harness settings shared by dataset building, GRPO and evaluation.
struct CheckSettings {
  int limit_ops = 0;                //!< first N ops of the split (0 = all)
  int64_t max_check_elements = 0;   //!< > 0: check on main shapes shrunk to this many input elements
  int trials = 2;                   //!< correctness trials per check
  int threads = 2;                  //!< checks at once
  bool time_kernels = true;         //!< time correct kernels against eager (speed reward, fast_p)
};

//! A train_sft job: where the pairs come from, the model to start from, hyperparameters.
struct SftJobArgs {
  std::string dataset;                 //!< JSONL path on the worker ("" when suite is set)
  std::string suite;                   //!< suite name ("" when dataset is set)
  int64_t base_model_id = 0;           //!< 0: bootstrap a fresh model of the output_model preset
  std::string output_model = "kforge-tiny";  //!< name of the versions this job registers
  int epochs = 3;                      //!< passes over the pairs (when max_steps is 0)
  int max_steps = 0;                   //!< optimizer steps; 0 = from epochs
  int batch_size = 16;                 //!< sequences per step
  int micro_batch = 4;                 //!< sequences per forward
  int max_seq_len = 2048;              //!< longer pairs are skipped
  int warmup_steps = 10;               //!< linear warm-up
  int eval_every = 25;                 //!< validation loss every N steps
  int checkpoint_every = 50;           //!< checkpoint (and model version) every N steps; 0 = end only
  int vocab_size = 4096;               //!< BPE vocabulary when bootstrapping
  double learning_rate = 3e-4;         //!< peak learning rate
  double weight_decay = 0.0;           //!< AdamW decay
  double grad_clip = 1.0;              //!< global-norm clip
  uint64_t seed = 0;                   //!< data order and weight init
  int variants_per_op = 4;             //!< suite dataset: teacher schedules per op
  CheckSettings check{0, 65536, 2, 2, false};  //!< suite dataset: how variants are verified
};

//! A train_grpo job: the parent model version, the suite, hyperparameters.
struct GrpoJobArgs {
  std::string suite;                   //!< suite name (the train split is used)
  int64_t base_model_id = 0;           //!< the model version to start from (required)
  std::string output_model = "kforge-tiny";  //!< name of the versions this job registers
  int steps = 200;                     //!< optimizer steps
  double learning_rate = 1e-5;         //!< peak learning rate
  int prompts_per_step = 4;            //!< ops per step
  int group_size = 8;                  //!< samples per op
  double eps_low = 0.2, eps_high = 0.28;  //!< ratio clip
  double kl_coef = 0.0;                //!< k3 KL weight to the frozen base model
  double temperature = 1.0, top_p = 1.0;  //!< sampling
  int max_new_tokens = 1024;           //!< completion limit
  double speed_weight = 0.5, speed_cap = 3.0;  //!< reward speed bonus w * min(speedup, cap)
  double grad_clip = 1.0;              //!< global-norm clip
  uint64_t seed = 0;                   //!< sampling seeds and task order
  int warmup_steps = 0;                //!< linear warm-up
  int micro_batch = 4;                 //!< sequences per forward
  int checkpoint_every = 50;           //!< checkpoint (and model version) every N steps; 0 = end only
  CheckSettings check{0, 65536, 2, 2, true};  //!< how samples are checked
};

//! An evaluate job: model version x suite split x target.
struct EvaluateJobArgs {
  int64_t model_id = 0;                //!< the model version
  std::string model;                   //!< "name@version" as the API resolved it
  std::string suite = "heldout";       //!< suite name as given ("heldout", "builtin", "builtin:train"...)
  std::string target = "opencl";       //!< kernel language
  int samples = 4;                     //!< samples per op
  int k = 4;                           //!< pass@k
  int max_new_tokens = 768;            //!< completion limit
  double temperature = 0.8, top_p = 0.95;  //!< sampling
  uint64_t seed = 1234;                //!< sampling seed base
  CheckSettings check{0, 0, 3, 2, true};  //!< how samples are checked
};

//! Parse a job's args JSON; each throws std::invalid_argument naming the bad field
//! ("hyperparameters.batch_size: ..."), so the job fails with a message a person can act on.
SftJobArgs parse_sft_job_args(const std::string& args_json);
//! See parse_sft_job_args.
GrpoJobArgs parse_grpo_job_args(const std::string& args_json);
//! See parse_sft_job_args.
EvaluateJobArgs parse_evaluate_job_args(const std::string& args_json);

//! A suite name resolved to a directory and a split ("" = every op).
struct SuiteRef {
  std::string dir;
  std::string split;
};

//! Training suites: "builtin", "train" or "builtin:train" -> the built-in suite's train
//! split under `builtin_dir`; an existing directory -> its train split. Throws
//! std::invalid_argument naming `suite` otherwise (held-out ops are never trained on).
SuiteRef resolve_training_suite(const std::string& suite, const std::string& builtin_dir);
//! Evaluation suites: "builtin" and "heldout" -> held-out split; "train"; "all";
//! "builtin:<split>"; an existing directory -> its held-out split.
SuiteRef resolve_evaluation_suite(const std::string& suite, const std::string& builtin_dir);

}  // namespace kforge::jobs
