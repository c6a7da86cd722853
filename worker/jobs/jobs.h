// Job kinds a worker runs (generate, train_sft, train_grpo, evaluate): the vocabulary;
// the runners are generate.h and training_jobs.h. Tests: scripts/test.sh build -R 'jobs_'.
#pragma once

#include <string>
#include <vector>

namespace kforge::jobs {

//! Kinds of job this build of the worker can run.
std::vector<std::string> job_kinds();

}  // namespace kforge::jobs
