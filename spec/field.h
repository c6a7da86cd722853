// Field errors: what every reader in spec/ (the op format, op_spec.h) returns instead of
// throwing, so the API can answer 422 naming each field and the worker can fail a job
// with the same words. Test: ctest -R spec_op_spec_test.
#pragma once

#include <string>
#include <vector>

namespace kforge::spec {

//! One rejected field: its path ("inputs[1].shape") and why.
struct FieldError {
  std::string field;
  std::string message;
};

//! "field: message; field: message" (the message alone when the field is "").
std::string describe_errors(const std::vector<FieldError>& errors);

}  // namespace kforge::spec
