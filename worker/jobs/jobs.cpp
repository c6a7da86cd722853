// The job kinds kforge_jobs implements, by name (jobs.h); also the library's only source
// without the server parts. The runners' tests: scripts/test.sh build -R 'jobs_'.
#include "worker/jobs/jobs.h"

namespace kforge::jobs {

std::vector<std::string> job_kinds() { return {"generate", "train_sft", "train_grpo", "train_rft", "evaluate"}; }

}  // namespace kforge::jobs
