// Output helpers shared by the CLI's commands: aligned tables, numbers, problem+json
// errors, key=value settings. Test: ctest -R cli_test.
#include "cli/output.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace kforge::cli {

using json = nlohmann::json;

// Prints rows under headers with each column as wide as its widest cell plus two
// spaces, so long values (device names, op names) never run into the next column.
void print_table(std::ostream& out, const std::vector<std::string>& headers,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(headers.size());
  for (size_t col_idx = 0; col_idx < headers.size(); ++col_idx) widths[col_idx] = headers[col_idx].size();
  for (const auto& row : rows) {
    for (size_t col_idx = 0; col_idx < row.size() && col_idx < widths.size(); ++col_idx) {
      widths[col_idx] = std::max(widths[col_idx], row[col_idx].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (size_t col_idx = 0; col_idx < cells.size(); ++col_idx) {
      bool last = col_idx + 1 == cells.size();
      out << (last ? cells[col_idx] : cells[col_idx] + std::string(widths[col_idx] + 2 - cells[col_idx].size(), ' '));
    }
    out << "\n";
  };
  print_row(headers);
  for (const auto& row : rows) print_row(row);
}

// Prints a problem+json reply readably; returns 1.
int report_error(const ClientResponse& resp, std::ostream& err) {
  json body = json::parse(resp.body, nullptr, false);
  if (body.is_object() && body.contains("detail")) {
    err << "kforge: " << resp.status << " " << body.value("title", "") << ": " << body.value("detail", "") << "\n";
    for (const auto& field : body.value("errors", json::array())) {
      err << "  " << field.value("field", "") << ": " << field.value("message", "") << "\n";
    }
  } else {
    err << "kforge: HTTP " << resp.status << ": " << resp.body.substr(0, 500) << "\n";
  }
  return 1;
}

std::string fmt_number(const json& value, int precision) {
  if (!value.is_number()) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value.get<double>();
  return out.str();
}

// "epochs=2" -> {"epochs": 2}; numbers stay numbers.
bool parse_assignment(const std::string& text, json* into, std::ostream& err) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    err << "kforge: expected key=value, got '" << text << "'\n";
    return false;
  }
  std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  json parsed = json::parse(value, nullptr, false);
  (*into)[key] = parsed.is_discarded() ? json(value) : parsed;
  return true;
}

std::string rate_with_interval(const json& metrics, const std::string& key, const std::string& fallback) {
  if (!metrics.is_object()) return "-";
  std::string found = metrics.contains(key) && metrics[key].is_number() ? key : fallback;
  if (!metrics.contains(found) || !metrics[found].is_number()) return "-";
  std::string text = fmt_number(metrics[found].get<double>() * 100, 1) + "%";
  json intervals = metrics.value("intervals", json());
  json interval = intervals.is_object() ? intervals.value(found, json()) : json();
  if (interval.is_array() && interval.size() == 2 && interval[0].is_number() && interval[1].is_number())
    text += " [" + fmt_number(interval[0].get<double>() * 100, 1) + ", " + fmt_number(interval[1].get<double>() * 100, 1) + "]";
  return text;
}

}  // namespace kforge::cli
