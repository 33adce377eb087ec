// The .prox parser: statements and expressions (the Parser class,
// parser_impl.h), the arguments of a call, and the entry points.
#include "frontend/parser_impl.h"
#include "frontend/plugin.h"

namespace proxc::internal {

namespace parsing {

// ---- Args ----

void Args::arity(size_t lo, size_t hi, const char* usage) {
  if (pos.size() < lo || pos.size() > hi) {
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    p_->fail(loc_, fn_ + " takes " + want + " positional argument" + (hi == 1 ? "" : "s") + ", got " +
                       std::to_string(pos.size()) + " (usage: " + usage + ")");
  }
}

const Value* Args::take_kw(const std::string& name) {
  for (const auto& [k, v] : kw) {
    if (k == name) {
      taken_.insert(name);
      return &v;
    }
  }
  return nullptr;
}

void Args::done(const std::vector<std::string>& allowed) {
  for (size_t i = 0; i < kw.size(); ++i) {
    if (taken_.count(kw[i].first)) continue;
    std::string list;
    for (const std::string& s : allowed) list += (list.empty() ? "" : ", ") + s;
    p_->fail(kw_locs[i], fn_ + " has no keyword '" + kw[i].first + "'" +
                             (list.empty() ? " (it takes no keywords)" : " (allowed: " + list + ")"));
  }
}

proxc::internal::Expr Args::expr(const Value& v, const char* what) const {
  if (v.type == Value::Type::Expr) return v.expr;
  p_->fail(v.loc, fn_ + ": the " + what + " must be an expression, got " + describe_value(v));
}

proxc::internal::Expr Args::constant(const Value& v, const char* what) const {
  if (v.type == Value::Type::Expr && v.expr->is_constant()) return v.expr;
  p_->fail(v.loc, fn_ + ": the " + what + " must be a constant (load(...), gaussian(...)), got " +
                      describe_value(v));
}

double Args::scalar(const Value& v, const char* what) const {
  if (v.type == Value::Type::Scalar) return v.scalar;
  p_->fail(v.loc, fn_ + ": " + what + " must be a number, got " + describe_value(v));
}

int64_t Args::integer(const Value& v, const char* what) const {
  double d = scalar(v, what);
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) {
    p_->fail(v.loc, fn_ + ": " + what + " must be an integer, got " + format_number(d));
  }
  return static_cast<int64_t>(d);
}

std::vector<int64_t> Args::ints(const Value& v, const char* what) const {
  if (v.type == Value::Type::List) {
    std::vector<int64_t> out;
    for (const Value& e : v.list) out.push_back(integer(e, what));
    return out;
  }
  if (v.type == Value::Type::Scalar) return {integer(v, what)};
  p_->fail(v.loc, fn_ + ": " + what + " must be a list of integers such as [2, 2], got " + describe_value(v));
}

}  // namespace parsing

using parsing::kMaxSourceBytes;
using parsing::Parser;

ParsedProgram parse_program(const std::string& text, const std::string& file, const std::string& base_dir) {
  register_builtin_prox_fns();
  // A UTF-8 byte-order mark, as some editors write one, is not text: dropped,
  // so that columns and the lines errors show start after it.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) return Parser(text.substr(3), file, base_dir).run();
  return Parser(text, file, base_dir).run();
}

ParsedProgram parse_program_file(const std::string& path) {
  std::string text = read_file(path, kMaxSourceBytes);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return parse_program(text, path, dir.empty() ? "." : dir);
}

}  // namespace proxc::internal
