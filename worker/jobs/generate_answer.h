// What a generation answers, from its correct candidates: the best unflagged kernel; when
// every correct one is flagged, the best verified one with the reason; and, when the best
// is slower than PyTorch eager, that eager wins. Pure (no database).
// Test: ctest -R jobs_generate_answer_test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kforge::jobs {

//! One correct candidate, as the answer needs it.
struct RankedCandidate {
  int64_t id = 0;
  double speedup = 0;       //!< eager time / kernel time
  bool flagged = false;     //!< suspicious speedup or weak test: never ranked first if anything else is correct
  std::string flag_reason;  //!< why it is flagged (for the answer's message)
};

//! The answer of a generation.
struct GenerationAnswer {
  std::optional<int64_t> best_id;  //!< the answer's kernel; none when nothing was correct
  double best_speedup = 0;
  bool best_flagged = false;  //!< every correct kernel was flagged: this is the best verified one
  bool eager_wins = false;    //!< the best kernel is slower than PyTorch eager
  std::string message;        //!< what the user reads ("" when the best is unflagged and faster than eager)
};

//! Chooses the answer among `correct` candidates of `checked` in all.
GenerationAnswer choose_answer(const std::vector<RankedCandidate>& correct, int checked);

}  // namespace kforge::jobs
