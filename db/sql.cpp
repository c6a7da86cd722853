// Splits the embedded query files into named blocks, once, on first use.
// Test: scripts/test.sh build -R 'db_'.
#include "db/sql.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "common/embedded.h"

namespace kforge {
extern const EmbeddedFile kQueryFiles[];
extern const EmbeddedFile kMigrationFiles[];
}  // namespace kforge

namespace kforge::db {
namespace {

std::map<std::string, std::string> parse_queries() {
  std::map<std::string, std::string> queries;
  const std::string marker = "-- name: ";
  for (const EmbeddedFile* file = kQueryFiles; file->name; ++file) {
    std::istringstream in(file->text);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.rfind(marker, 0) == 0) {
        current = line.substr(marker.size());
        while (!current.empty() && (current.back() == ' ' || current.back() == '\r')) current.pop_back();
        if (queries.count(current)) throw std::logic_error("duplicate query name " + current + " in " + file->name);
        queries[current] = "";
        continue;
      }
      if (!current.empty()) queries[current] += line + "\n";
    }
  }
  return queries;
}

}  // namespace

const std::string& sql(const std::string& name) {
  static const std::map<std::string, std::string> queries = parse_queries();
  auto found = queries.find(name);
  if (found == queries.end()) throw std::out_of_range("no SQL query named '" + name + "' in db/queries");
  return found->second;
}

const std::vector<std::pair<std::string, std::string>>& migrations() {
  static const std::vector<std::pair<std::string, std::string>> files = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const EmbeddedFile* file = kMigrationFiles; file->name; ++file) out.emplace_back(file->name, file->text);
    return out;
  }();
  return files;
}

}  // namespace kforge::db
