// Job kinds a worker runs (generate, train_sft, train_grpo, evaluate). The
// runners arrive with their issues; this names the vocabulary.
#pragma once

#include <string>
#include <vector>

namespace kforge::jobs {

//! Kinds of job this build of the worker can run.
std::vector<std::string> job_kinds();

}  // namespace kforge::jobs
