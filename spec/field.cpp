// describe_errors behind spec/field.h. Test: ctest -R spec_op_spec_test.
#include "spec/field.h"

namespace kforge::spec {

std::string describe_errors(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& error : errors) {
    if (!out.empty()) out += "; ";
    out += error.field.empty() ? error.message : error.field + ": " + error.message;
  }
  return out;
}

}  // namespace kforge::spec
