// Parser for the kernel program format: launch and scratch lines, size
// expressions (recursive descent), and kernel signatures from the OpenCL source.
// Test: ctest -R harness_program. Format: docs/kernel-format.md.
#include "worker/harness/program.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace kforge::harness {
namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// ---- size expressions -------------------------------------------------------

struct ConstExpr : SizeExpr {
  int64_t value;
  explicit ConstExpr(int64_t v) : value(v) {}
  std::optional<int64_t> eval(const Shapes&, std::string&) const override { return value; }
  void names(std::vector<std::string>&) const override {}
};

struct BinaryExpr : SizeExpr {
  char op;
  SizeExprPtr lhs, rhs;
  BinaryExpr(char o, SizeExprPtr l, SizeExprPtr r) : op(o), lhs(std::move(l)), rhs(std::move(r)) {}
  std::optional<int64_t> eval(const Shapes& shapes, std::string& error) const override {
    auto a = lhs->eval(shapes, error);
    if (!a) return std::nullopt;
    auto b = rhs->eval(shapes, error);
    if (!b) return std::nullopt;
    int64_t out = 0;
    switch (op) {
      case '+': if (__builtin_add_overflow(*a, *b, &out)) break; return out;
      case '-': if (__builtin_sub_overflow(*a, *b, &out)) break; return out;
      case '*': if (__builtin_mul_overflow(*a, *b, &out)) break; return out;
      case '/':
      case '%':
        if (*b == 0) {
          error = std::string("division by zero (") + op + ")";
          return std::nullopt;
        }
        return op == '/' ? *a / *b : *a % *b;
    }
    error = "integer overflow in size expression";
    return std::nullopt;
  }
  void names(std::vector<std::string>& out) const override {
    lhs->names(out);
    rhs->names(out);
  }
};

struct CallExpr : SizeExpr {
  std::string fn;  // cdiv, min, max
  SizeExprPtr a, b;
  CallExpr(std::string f, SizeExprPtr x, SizeExprPtr y) : fn(std::move(f)), a(std::move(x)), b(std::move(y)) {}
  std::optional<int64_t> eval(const Shapes& shapes, std::string& error) const override {
    auto x = a->eval(shapes, error);
    if (!x) return std::nullopt;
    auto y = b->eval(shapes, error);
    if (!y) return std::nullopt;
    if (fn == "min") return std::min(*x, *y);
    if (fn == "max") return std::max(*x, *y);
    if (*y <= 0) {
      error = "cdiv by " + std::to_string(*y) + " (the divisor must be positive)";
      return std::nullopt;
    }
    return (*x + *y - 1) / *y;
  }
  void names(std::vector<std::string>& out) const override {
    a->names(out);
    b->names(out);
  }
};

struct ShapeExpr : SizeExpr {
  std::string buffer;
  bool numel;  // numel(x) when true, else x.size(dim)
  int64_t dim;
  ShapeExpr(std::string name, bool is_numel, int64_t d) : buffer(std::move(name)), numel(is_numel), dim(d) {}
  std::optional<int64_t> eval(const Shapes& shapes, std::string& error) const override {
    auto found = shapes.find(buffer);
    if (found == shapes.end()) {
      error = "unknown buffer '" + buffer + "' (sizes exist for inputs and outputs)";
      return std::nullopt;
    }
    const auto& shape = found->second;
    if (numel) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      return n;
    }
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t index = dim < 0 ? dim + rank : dim;
    if (index < 0 || index >= rank) {
      error = buffer + ".size(" + std::to_string(dim) + "): '" + buffer + "' has " + std::to_string(rank) +
              " dimensions";
      return std::nullopt;
    }
    return shape[static_cast<size_t>(index)];
  }
  void names(std::vector<std::string>& out) const override { out.push_back(buffer); }
};

class ExprParser {
 public:
  explicit ExprParser(const std::string& text) : text_(text) {}

  SizeExprPtr parse_all(std::string& error) {
    auto expr = parse_sum();
    skip_space();
    if (expr && pos_ != text_.size()) fail("an operator or the end of the expression");
    if (!error_.empty()) {
      error = error_;
      return nullptr;
    }
    return expr;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;
  std::string error_;

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  SizeExprPtr fail(const std::string& expected) {
    if (error_.empty()) {
      std::string got = pos_ < text_.size() ? "'" + text_.substr(pos_, 12) + "'" : "the end";
      error_ = "expected " + expected + " at column " + std::to_string(pos_ + 1) + " of '" + text_ + "', got " + got;
    }
    return nullptr;
  }
  bool expect(char c) {
    if (accept(c)) return true;
    fail(std::string("'") + c + "'");
    return false;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start < text_.size() && std::isdigit(static_cast<unsigned char>(text_[start]))) {
      pos_ = start;
      return "";
    }
    return text_.substr(start, pos_ - start);
  }

  SizeExprPtr parse_sum() {
    auto lhs = parse_product();
    while (lhs) {
      if (accept('+')) lhs = combine('+', lhs, parse_product());
      else if (accept('-')) lhs = combine('-', lhs, parse_product());
      else break;
    }
    return lhs;
  }
  SizeExprPtr parse_product() {
    auto lhs = parse_unary();
    while (lhs) {
      if (accept('*')) lhs = combine('*', lhs, parse_unary());
      else if (accept('/')) lhs = combine('/', lhs, parse_unary());
      else if (accept('%')) lhs = combine('%', lhs, parse_unary());
      else break;
    }
    return lhs;
  }
  SizeExprPtr combine(char op, SizeExprPtr lhs, SizeExprPtr rhs) {
    if (!rhs) return nullptr;
    return std::make_shared<BinaryExpr>(op, lhs, rhs);
  }
  SizeExprPtr parse_unary() {
    if (accept('-')) {
      auto operand = parse_unary();
      if (!operand) return nullptr;
      return std::make_shared<BinaryExpr>('-', std::make_shared<ConstExpr>(0), operand);
    }
    return parse_primary();
  }
  SizeExprPtr parse_primary() {
    skip_space();
    if (pos_ >= text_.size()) return fail("a number, a name or '('");
    if (std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ - start > 15) return fail("a number below 10^15");
      return std::make_shared<ConstExpr>(std::stoll(text_.substr(start, pos_ - start)));
    }
    if (accept('(')) {
      auto inner = parse_sum();
      if (!inner || !expect(')')) return nullptr;
      return inner;
    }
    std::string name = identifier();
    if (name.empty()) return fail("a number, a name or '('");
    if (name == "cdiv" || name == "min" || name == "max") {
      if (!expect('(')) return nullptr;
      auto a = parse_sum();
      if (!a || !expect(',')) return nullptr;
      auto b = parse_sum();
      if (!b || !expect(')')) return nullptr;
      return std::make_shared<CallExpr>(name, a, b);
    }
    if (name == "numel") {
      if (!expect('(')) return nullptr;
      std::string buffer = identifier();
      if (buffer.empty()) return fail("a buffer name inside numel(...)");
      if (!expect(')')) return nullptr;
      return std::make_shared<ShapeExpr>(buffer, true, 0);
    }
    if (accept('.')) {
      std::string method = identifier();
      if (method == "numel") {
        if (!expect('(') || !expect(')')) return nullptr;
        return std::make_shared<ShapeExpr>(name, true, 0);
      }
      if (method != "size") return fail("size(d) or numel() after '" + name + ".'");
      if (!expect('(')) return nullptr;
      bool negative = accept('-');
      skip_space();
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (start == pos_ || pos_ - start > 2) return fail("a dimension number in " + name + ".size(...)");
      int64_t dim = std::stoll(text_.substr(start, pos_ - start));
      if (!expect(')')) return nullptr;
      return std::make_shared<ShapeExpr>(name, false, negative ? -dim : dim);
    }
    if (accept('(')) return fail("a known function (cdiv, min, max, numel), not '" + name + "('");
    return fail("numel(" + name + ") or " + name + ".size(d), not the bare name '" + name + "'");
  }
};

// ---- program text -----------------------------------------------------------

std::string trim(const std::string& s) {
  // Any whitespace: kernel parameters are often written one per line.
  size_t a = s.find_first_not_of(" \t\r\n\f\v");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n\f\v");
  return s.substr(a, b - a + 1);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(trim(current));
  return parts;
}

// "grid=a block=b args=c" -> {{grid,a},{block,b},{args,c}}: a value runs until the next
// `word=` that starts after whitespace at parenthesis depth 0, so values may hold spaces.
bool split_keys(const std::string& text, std::vector<std::pair<std::string, std::string>>& out, std::string& error) {
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  auto key_at = [&](size_t at) -> size_t {  // length of "key=" at `at`, 0 if none
    size_t end = at;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end == at || end >= text.size() || text[end] != '=') return 0;
    if (end + 1 < text.size() && text[end + 1] == '=') return 0;
    return end - at + 1;
  };
  skip();
  while (pos < text.size()) {
    size_t key_len = key_at(pos);
    if (key_len == 0) {
      error = "expected key=value (grid=, block=, args=), got '" + text.substr(pos, 20) + "'";
      return false;
    }
    std::string key = text.substr(pos, key_len - 1);
    pos += key_len;
    size_t start = pos;
    int depth = 0;
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (depth == 0 && std::isspace(static_cast<unsigned char>(c))) {
        size_t next = pos;
        while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
        if (next < text.size() && key_at(next)) break;
      }
      ++pos;
    }
    out.push_back({key, trim(text.substr(start, pos - start))});
    skip();
  }
  return true;
}

int scratch_element_size(const std::string& type) {
  static const std::map<std::string, int> sizes = {{"float", 4}, {"half", 2},  {"double", 8}, {"int", 4},
                                                   {"uint", 4},  {"long", 8},  {"ulong", 8},  {"char", 1},
                                                   {"uchar", 1}, {"short", 2}, {"ushort", 2}};
  auto found = sizes.find(type);
  return found == sizes.end() ? 0 : found->second;
}

// Blanks comments and string/char literals (keeping newlines and offsets), so rules
// and the kernel scan see only code.
std::string strip_comments(const std::string& src) {
  std::string out = src;
  size_t pos = 0;
  while (pos < out.size()) {
    if (out.compare(pos, 2, "//") == 0) {
      while (pos < out.size() && out[pos] != '\n') out[pos++] = ' ';
    } else if (out.compare(pos, 2, "/*") == 0) {
      size_t end = out.find("*/", pos + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; pos < end; ++pos)
        if (out[pos] != '\n') out[pos] = ' ';
    } else if (out[pos] == '"' || out[pos] == '\'') {
      char quote = out[pos++];
      while (pos < out.size() && out[pos] != quote && out[pos] != '\n') {
        if (out[pos] == '\\' && pos + 1 < out.size()) out[pos++] = ' ';
        out[pos++] = ' ';
      }
      ++pos;
    } else {
      ++pos;
    }
  }
  return out;
}

int line_of(const std::string& text, size_t offset) {
  int line = 1;
  for (size_t pos = 0; pos < offset && pos < text.size(); ++pos)
    if (text[pos] == '\n') ++line;
  return line;
}

KernelParam parse_param(const std::string& raw) {
  KernelParam param;
  std::string text = trim(raw);
  static const std::regex name_at_end(R"((\w+)\s*(\[\s*\w*\s*\])?\s*$)");
  std::smatch m;
  if (std::regex_search(text, m, name_at_end)) {
    param.name = m[1].str();
    param.type = trim(text.substr(0, static_cast<size_t>(m.position(0))));
  } else {
    param.type = text;
  }
  param.is_pointer = param.type.find('*') != std::string::npos;
  std::string before_star = param.type.substr(0, param.type.find('*'));
  static const std::regex const_word(R"(\bconst\b)");
  param.is_const = param.is_pointer && std::regex_search(before_star, const_word);
  static const std::regex global_word(R"(\b(__global|global)\b)"), local_word(R"(\b(__local|local)\b)"),
      constant_word(R"(\b(__constant|constant)\b)");
  param.is_global = std::regex_search(param.type, global_word);
  param.is_local = std::regex_search(param.type, local_word);
  if (std::regex_search(param.type, constant_word)) param.is_const = true;
  return param;
}

std::vector<KernelDecl> find_kernels(const std::string& code, Dialect& dialect) {
  std::vector<KernelDecl> kernels;
  // OpenCL: `__kernel void name(`; CUDA: `__global__ void name(` (extern "C" before it or not).
  static const std::regex kernel_head(R"(\b(__kernel|kernel|__global__)\b[^;{}]*?\bvoid\s+(\w+)\s*\()");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kernel_head); it != std::sregex_iterator(); ++it) {
    KernelDecl decl;
    decl.name = (*it)[2].str();
    const bool cuda = (*it)[1].str() == "__global__";
    if (cuda) dialect = Dialect::cuda;
    size_t open = static_cast<size_t>(it->position(0) + it->length(0));
    decl.line = line_of(code, static_cast<size_t>(it->position(0)));
    int depth = 1;
    size_t pos = open;
    while (pos < code.size() && depth > 0) {
      if (code[pos] == '(') ++depth;
      if (code[pos] == ')') --depth;
      ++pos;
    }
    std::string params = code.substr(open, pos - open - 1);
    decl.body_begin = code.find('{', pos);
    if (decl.body_begin == std::string::npos) decl.body_begin = code.size();
    size_t body = decl.body_begin;
    for (int body_depth = 0; body < code.size(); ++body) {
      if (code[body] == '{') ++body_depth;
      if (code[body] == '}' && --body_depth == 0) {
        ++body;
        break;
      }
    }
    decl.body_end = std::min(body, code.size());
    if (!trim(params).empty() && trim(params) != "void")
      for (const auto& part : split_top_level(params)) {
        KernelParam param = parse_param(part);
        if (cuda) param.is_global = param.is_pointer;  // CUDA kernels take device (global) pointers
        decl.params.push_back(param);
      }
    kernels.push_back(decl);
  }
  return kernels;
}


// Translation phases 1-2 as a C preprocessor runs them, so the static rules see what the
// compiler will: trigraphs (??= is #), then backslash-newline splices joined (prin\<nl>tf
// is printf, #inc\<nl>lude is #include); the digraph %: is # as a directive or paster.
std::string lexed_view(const std::string& source) {
  static const std::map<char, char> trigraphs = {{'=', '#'}, {'/', '\\'}, {'\'', '^'}, {'(', '['}, {')', ']'},
                                                 {'!', '|'},  {'<', '{'},  {'>', '}'},   {'-', '~'}};
  std::string phase1;
  phase1.reserve(source.size());
  for (size_t at = 0; at < source.size(); ++at) {
    if (source.compare(at, 2, "??") == 0 && at + 2 < source.size()) {
      auto found = trigraphs.find(source[at + 2]);
      if (found != trigraphs.end()) {
        phase1 += found->second;
        at += 2;
        continue;
      }
    }
    if (source.compare(at, 2, "%:") == 0) {
      phase1 += '#';
      ++at;
      continue;
    }
    phase1 += source[at];
  }
  std::string joined;
  joined.reserve(phase1.size());
  for (size_t at = 0; at < phase1.size(); ++at) {
    if (phase1[at] == '\\') {
      size_t next = at + 1;
      while (next < phase1.size() && (phase1[next] == ' ' || phase1[next] == '\t' || phase1[next] == '\r')) ++next;
      if (next < phase1.size() && phase1[next] == '\n') {  // a splice (clang allows trailing blanks)
        at = next;
        continue;
      }
    }
    joined += phase1[at];
  }
  return strip_comments(joined);
}

}  // namespace

SizeExprPtr SizeExpr::parse(const std::string& text, std::string& error) {
  if (trim(text).empty()) {
    error = "expected an expression, got nothing";
    return nullptr;
  }
  ExprParser parser(text);
  return parser.parse_all(error);
}

std::string output_name(size_t index, size_t count) { return count == 1 ? "out" : "out" + std::to_string(index); }

size_t invalid_utf8_offset(const std::string& text) {
  const auto byte = [&](size_t index) { return static_cast<unsigned char>(text[index]); };
  for (size_t at = 0; at < text.size();) {
    const unsigned char lead = byte(at);
    if (lead < 0x80) {
      ++at;
      continue;
    }
    size_t extra = 0;
    uint32_t smallest = 0;  // the smallest code point of this length (longer forms are overlong)
    if ((lead & 0xE0) == 0xC0) extra = 1, smallest = 0x80;
    else if ((lead & 0xF0) == 0xE0) extra = 2, smallest = 0x800;
    else if ((lead & 0xF8) == 0xF0) extra = 3, smallest = 0x10000;
    else return at;
    if (at + extra >= text.size()) return at;
    uint32_t code_point = lead & (0x3Fu >> extra);
    for (size_t next = 1; next <= extra; ++next) {
      if ((byte(at + next) & 0xC0) != 0x80) return at;
      code_point = code_point << 6 | (byte(at + next) & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return at;
    at += extra + 1;
  }
  return std::string::npos;
}

ProgramParse parse_program(const std::string& text) {
  ProgramParse result;
  KernelProgram& program = result.program;
  program.source = strip_fence(text);
  auto fail = [&](int line, const std::string& message) {
    result.error = (line > 0 ? "line " + std::to_string(line) + ": " : "") + message;
    result.line = line;
    return result;
  };
  if (trim(program.source).empty()) return fail(0, "the program is empty; expected OpenCL C with // kforge-launch: lines");
  if (size_t bad = invalid_utf8_offset(program.source); bad != std::string::npos)
    return fail(1 + static_cast<int>(std::count(program.source.begin(), program.source.begin() + bad, '\n')),
                "the program is not valid UTF-8 (byte " + std::to_string(bad) + "); write it in ASCII or UTF-8");
  if (program.source.find('\0') != std::string::npos)
    return fail(1 + static_cast<int>(std::count(program.source.begin(),
                                                program.source.begin() + program.source.find('\0'), '\n')),
                "the program contains a NUL byte");
  std::istringstream lines(program.source);
  std::string line;
  int line_no = 0;
  static const std::regex directive(R"(^\s*//\s*kforge-(\w+)\s*:?(.*)$)");
  while (std::getline(lines, line)) {
    ++line_no;
    std::smatch m;
    if (!std::regex_match(line, m, directive)) continue;
    std::string kind = m[1].str(), rest = trim(m[2].str());
    if (kind == "scratch") {
      std::istringstream words(rest);
      ScratchDecl decl;
      decl.line = line_no;
      words >> decl.name >> decl.type;
      std::string count_text;
      std::getline(words, count_text);
      if (!is_identifier(decl.name))
        return fail(line_no, "kforge-scratch: expected '<name> <type> <element count>', e.g. "
                             "'// kforge-scratch: partial float cdiv(numel(x),256)'");
      decl.element_size = scratch_element_size(decl.type);
      if (decl.element_size == 0)
        return fail(line_no, "kforge-scratch: unknown element type '" + decl.type +
                                 "' (float, half, double, int, uint, long, ulong, char, uchar, short, ushort)");
      std::string error;
      decl.count = SizeExpr::parse(count_text, error);
      if (!decl.count) return fail(line_no, "kforge-scratch " + decl.name + ": element count: " + error);
      program.scratch.push_back(decl);
      continue;
    }
    if (kind != "launch")
      return fail(line_no, "unknown directive 'kforge-" + kind + "' (expected kforge-launch or kforge-scratch)");
    Launch launch;
    launch.line = line_no;
    size_t name_end = 0;
    while (name_end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[name_end]))) ++name_end;
    launch.kernel = rest.substr(0, name_end);
    if (!is_identifier(launch.kernel))
      return fail(line_no, "kforge-launch: expected a kernel name first, e.g. "
                           "'// kforge-launch: my_kernel grid=cdiv(numel(x),256) block=256 args=x,out,numel(x)'");
    std::vector<std::pair<std::string, std::string>> keys;
    std::string error;
    if (!split_keys(rest.substr(name_end), keys, error)) return fail(line_no, "kforge-launch " + launch.kernel + ": " + error);
    bool seen_grid = false, seen_block = false, seen_args = false;
    for (const auto& [key, value] : keys) {
      if (key == "grid" || key == "block") {
        bool& seen = key == "grid" ? seen_grid : seen_block;
        if (seen) return fail(line_no, "kforge-launch " + launch.kernel + ": " + key + "= given twice");
        seen = true;
        auto parts = split_top_level(value);
        if (parts.size() > 3)
          return fail(line_no, "kforge-launch " + launch.kernel + ": " + key + "= takes 1 to 3 expressions, got " +
                                   std::to_string(parts.size()));
        auto& dims = key == "grid" ? launch.grid : launch.block;
        for (const auto& part : parts) {
          auto expr = SizeExpr::parse(part, error);
          if (!expr) return fail(line_no, "kforge-launch " + launch.kernel + ": " + key + "=: " + error);
          dims.push_back(expr);
        }
      } else if (key == "args") {
        if (seen_args) return fail(line_no, "kforge-launch " + launch.kernel + ": args= given twice");
        seen_args = true;
        for (const auto& part : split_top_level(value)) {
          LaunchArg arg;
          arg.text = part;
          char* end = nullptr;
          if (is_identifier(part)) {
            arg.kind = LaunchArg::Kind::buffer;
            arg.name = part;
          } else if (part.find_first_of(".eE") != std::string::npos && part.find('(') == std::string::npos &&
                     (std::strtod(part.c_str(), &end), end && *end == '\0' && !part.empty())) {
            arg.kind = LaunchArg::Kind::real;
            arg.real = std::strtod(part.c_str(), nullptr);
          } else {
            arg.kind = LaunchArg::Kind::integer;
            arg.expr = SizeExpr::parse(part, error);
            if (!arg.expr)
              return fail(line_no, "kforge-launch " + launch.kernel + ": argument '" + part + "': " + error);
          }
          launch.args.push_back(arg);
        }
      } else {
        return fail(line_no, "kforge-launch " + launch.kernel + ": unknown key '" + key +
                                 "=' (expected grid=, block=, args=)");
      }
    }
    if (!seen_grid || !seen_block || !seen_args)
      return fail(line_no, "kforge-launch " + launch.kernel + ": needs grid=, block= and args= (missing " +
                               std::string(!seen_grid ? "grid=" : !seen_block ? "block=" : "args=") + ")");
    if (launch.grid.size() != launch.block.size())
      return fail(line_no, "kforge-launch " + launch.kernel + ": grid= has " + std::to_string(launch.grid.size()) +
                               " dimensions but block= has " + std::to_string(launch.block.size()));
    program.launches.push_back(launch);
  }
  if (program.launches.empty())
    return fail(0, "no '// kforge-launch:' line: a program says how to run its kernels, e.g. "
                   "'// kforge-launch: my_kernel grid=cdiv(numel(x),256) block=256 args=x,out,numel(x)'");
  program.code_without_comments = strip_comments(program.source);
  program.code_as_lexed = lexed_view(program.source);
  program.kernels = find_kernels(program.code_without_comments, program.dialect);
  return result;
}

// Model output often comes wrapped in a markdown fence; take the first fenced block.
std::string strip_fence(const std::string& text) {
  size_t open = text.find("```");
  if (open == std::string::npos) return text;
  size_t body = text.find('\n', open);
  if (body == std::string::npos) return text;
  size_t close = text.find("```", body + 1);
  return text.substr(body + 1, close == std::string::npos ? std::string::npos : close - body - 1);
}

}  // namespace kforge::harness
