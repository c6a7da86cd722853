// Training jobs' side of the `models` table: a checkpoint's policy files (HF layout)
// are copied to a stable directory under the worker's data dir, hashed, and
// registered as the next version of a model name, once. Test: ctest -R jobs_training_test.
#pragma once

#include <cstdint>
#include <string>

#include <pqxx/pqxx>

#include "db/models.h"

namespace kforge::jobs {

//! What to register.
struct ModelVersionSpec {
  std::string name;              //!< model family, e.g. kforge-tiny
  int64_t parent_id = 0;         //!< the version training started from (0 = none)
  int64_t training_job_id = 0;   //!< the job producing it
  std::string checkpoint_dir;    //!< where the trainer wrote the files
  std::string dest_dir;          //!< stable copy the row points at (survives checkpoint pruning)
  std::string metrics_json = "{}";  //!< training metrics at this point
};

//! Copies the HF files (config.json, *.safetensors, the index, tokenizer files) to
//! dest_dir, hashes them, and inserts the next version of `name`. Idempotent: when
//! dest_dir was registered before (a retried attempt), returns that row instead.
//! Throws std::runtime_error when the checkpoint has no config.json.
db::ModelRecord model_register_checkpoint(pqxx::connection& conn, const ModelVersionSpec& spec);

}  // namespace kforge::jobs
