// choose_answer (generate_answer.h): best unflagged, else best flagged with its reason;
// eager named as the winner when the best kernel is slower. Test: ctest -R jobs_generate_answer_test.
#include "worker/jobs/generate_answer.h"

#include <cstdio>

namespace kforge::jobs {
namespace {

std::string ratio(double speedup) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", speedup);
  return text;
}

}  // namespace

GenerationAnswer choose_answer(const std::vector<RankedCandidate>& correct, int checked) {
  GenerationAnswer answer;
  const RankedCandidate* best = nullptr;
  const RankedCandidate* best_flagged = nullptr;
  for (const auto& candidate : correct) {
    const RankedCandidate*& slot = candidate.flagged ? best_flagged : best;
    if (!slot || candidate.speedup > slot->speedup) slot = &candidate;
  }
  const std::string among = std::to_string(checked) + " candidates";
  if (!best && !best_flagged) {
    answer.message = checked == 0 ? "no kernel was checked" : "no correct kernel among " + among;
    return answer;
  }
  if (!best) {
    // A flag asks for review; it does not make the kernel wrong. Answer with it and say why.
    best = best_flagged;
    answer.best_flagged = true;
    answer.message = "every correct kernel among " + among + " is flagged; this is the best verified one (" +
                     best->flag_reason + ")";
  }
  answer.best_id = best->id;
  answer.best_speedup = best->speedup;
  if (best->speedup < 1.0) {
    answer.eager_wins = true;
    std::string eager = "PyTorch eager is faster: the best correct kernel runs at " + ratio(best->speedup) +
                        " of eager's speed; use eager for this op";
    answer.message = answer.message.empty() ? eager : answer.message + ". " + eager;
  }
  return answer;
}

}  // namespace kforge::jobs
