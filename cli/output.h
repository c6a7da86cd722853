// Output helpers shared by the CLI's commands (commands.cpp, eval_commands.cpp):
// aligned tables, numbers, problem+json errors, key=value settings. Test: ctest -R cli_test.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client.h"

namespace kforge::cli {

//! Prints rows under headers, each column as wide as its widest cell plus two spaces.
void print_table(std::ostream& out, const std::vector<std::string>& headers,
                 const std::vector<std::vector<std::string>>& rows);

//! Prints a problem+json reply readably (title, detail, each field); returns 1.
int report_error(const ClientResponse& resp, std::ostream& err);

//! A JSON number with fixed decimals, "-" for anything else.
std::string fmt_number(const nlohmann::json& value, int precision = 2);

//! "42.0% [31.5, 52.0]": metrics[key] (else metrics[fallback], for evaluations stored
//! before `key` existed) in percent with its metrics.intervals entry when there is one; "-" when absent.
std::string rate_with_interval(const nlohmann::json& metrics, const std::string& key, const std::string& fallback = "");

//! "epochs=2" -> (*into)["epochs"] = 2; numbers stay numbers. False (and a message) when malformed.
bool parse_assignment(const std::string& text, nlohmann::json* into, std::ostream& err);

}  // namespace kforge::cli
