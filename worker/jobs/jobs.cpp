// Placeholder until the job runners land; see jobs.h.
#include "worker/jobs/jobs.h"

namespace kforge::jobs {

std::vector<std::string> job_kinds() { return {"generate", "train_sft", "train_grpo", "evaluate"}; }

}  // namespace kforge::jobs
