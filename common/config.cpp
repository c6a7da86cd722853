// Flag parsing behind common/config.h. Deliberately small: --name value,
// --name=value, boolean --name / --no-name, and positionals.
// Test: ctest -R common_config_test.
#include "common/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kforge {

Flags::Flags(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {
  for (const auto& spec : specs_) {
    values_[spec.name] = env_or(spec.env.c_str(), spec.default_value);
  }
}

std::optional<std::string> Flags::parse(int argc, char** argv, int first) {
  for (int arg_idx = first; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    bool negated = false;
    const FlagSpec* spec = nullptr;
    for (const auto& candidate : specs_) {
      if (candidate.name == name) spec = &candidate;
      if (candidate.is_bool && "no-" + candidate.name == name) {
        spec = &candidate;
        negated = true;
      }
    }
    if (!spec) return "unknown flag --" + name + " (see --help)";
    if (spec->is_bool) {
      values_[spec->name] = value ? *value : (negated ? "false" : "true");
      continue;
    }
    if (!value) {
      if (arg_idx + 1 >= argc) return "flag --" + name + " needs a value";
      value = argv[++arg_idx];
    }
    values_[spec->name] = *value;
  }
  return std::nullopt;
}

const std::string& Flags::get(const std::string& name) const { return values_.at(name); }

int Flags::get_int(const std::string& name) const {
  const std::string& text = get(name);
  try {
    size_t used = 0;
    int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--" + name + " must be an integer, got '" + text + "'");
}

double Flags::get_double(const std::string& name) const {
  const std::string& text = get(name);
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--" + name + " must be a number, got '" + text + "'");
}

bool Flags::get_bool(const std::string& name) const {
  const std::string& text = get(name);
  return text == "1" || text == "true" || text == "yes" || text == "on";
}

std::string Flags::usage(const std::string& program, const std::string& summary) const {
  std::ostringstream out;
  out << "usage: " << program << " [flags]\n" << summary << "\n\nflags:\n";
  for (const auto& spec : specs_) {
    out << "  --" << spec.name;
    if (!spec.env.empty()) out << " (" << spec.env << ")";
    out << "\n      " << spec.help;
    if (!spec.default_value.empty()) out << " [default: " << spec.default_value << "]";
    out << "\n";
  }
  return out.str();
}

std::string env_or(const char* name, const std::string& fallback) {
  if (!name || !*name) return fallback;
  const char* value = std::getenv(name);
  return (value && *value) ? std::string(value) : fallback;
}

std::string data_dir() { return env_or("KFORGE_DATA_DIR", "./var"); }

std::string database_url() {
  std::string url = env_or("KFORGE_DATABASE_URL", "");
  if (!url.empty()) return url;
  std::ifstream in(data_dir() + "/pg/url");
  std::getline(in, url);
  return url;
}

}  // namespace kforge
