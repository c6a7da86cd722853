// Command-line flags with KFORGE_* environment fallbacks, one table per binary.
// Precedence: --flag value > environment variable > default. `--help` prints the table.
// Test: ctest -R common_config_test.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

//! One configurable setting: flag name (without --), environment variable, default, help.
struct FlagSpec {
  std::string name;
  std::string env;
  std::string default_value;
  std::string help;
  bool is_bool = false;
};

//! Parsed flags; positional arguments are kept in order.
class Flags {
 public:
  explicit Flags(std::vector<FlagSpec> specs);

  //! Parses argv[first..argc). Returns an error message, or nullopt on success.
  std::optional<std::string> parse(int argc, char** argv, int first = 1);

  //! Value of a declared flag (throws std::out_of_range for undeclared names).
  const std::string& get(const std::string& name) const;
  int get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;

  const std::vector<std::string>& positional() const { return positional_; }
  bool help_requested() const { return help_; }

  //! The flag table, for --help: name, env, default, help.
  std::string usage(const std::string& program, const std::string& summary) const;

 private:
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

//! Value of an environment variable, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

//! The data directory: KFORGE_DATA_DIR or ./var.
std::string data_dir();

//! The database URL: KFORGE_DATABASE_URL, or the embedded cluster's URL written by
//! scripts/pg.sh to <data_dir>/pg/url. Empty if neither exists.
std::string database_url();

}  // namespace kforge
