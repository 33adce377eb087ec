/// \file
/// The parser's insides, shared by parser.cpp (statements, expressions, the
/// arguments of a call) and builtins.cpp (the built-in functions): a parsed
/// value, the arguments of one call, and the recursive-descent Parser.
#pragma once

#include <cmath>
#include <filesystem>
#include <set>
#include <type_traits>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "frontend/constant_io.h"
#include "emulate/fold.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"
#include "support/names.h"

namespace proxc::internal::parsing {

/// Deepest nesting of parentheses, brackets and unary operators accepted.
constexpr int kMaxDepth = 200;
/// Largest .prox file accepted.
constexpr int64_t kMaxSourceBytes = kMaxProgramBytes;

struct Value {
  enum class Type { Scalar, List, String, Expr, Terms };
  Type type = Type::Scalar;
  double scalar = 0;
  std::vector<Value> list;
  std::string str;
  proxc::internal::Expr expr;
  std::vector<FunctionTerm> terms;
  SourceLoc loc;
  /// True when the value came from a name (so binding it again aliases it).
  bool from_name = false;
};

inline const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Scalar:
      return "a number";
    case Value::Type::List:
      return "a list";
    case Value::Type::String:
      return "a string";
    case Value::Type::Expr:
      return "an expression";
    case Value::Type::Terms:
      return "a function term";
  }
  return "?";
}

inline std::string describe_value(const Value& v) {
  if (v.type == Value::Type::Expr) {
    if (v.expr->is_constant()) return "a constant of shape " + shape_to_string(v.expr->shape);
    return "an expression of shape " + shape_to_string(v.expr->shape);
  }
  return type_name(v.type);
}

class Parser;

/// The arguments of one call, consumed by the builtin that handles it.
class Args {
 public:
  Args(Parser* p, std::string fn, SourceLoc loc) : p_(p), fn_(std::move(fn)), loc_(std::move(loc)) {}
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  std::vector<SourceLoc> kw_locs;

  const SourceLoc& loc() const { return loc_; }
  const std::string& fn() const { return fn_; }
  /// Checks the positional count is within [lo, hi].
  void arity(size_t lo, size_t hi, const char* usage);
  /// Removes and returns a keyword argument, or nullptr.
  const Value* take_kw(const std::string& name);
  /// Fails on any keyword not taken.
  void done(const std::vector<std::string>& allowed);

  proxc::internal::Expr expr(const Value& v, const char* what) const;
  proxc::internal::Expr constant(const Value& v, const char* what) const;
  double scalar(const Value& v, const char* what) const;
  int64_t integer(const Value& v, const char* what) const;
  std::vector<int64_t> ints(const Value& v, const char* what) const;

 private:
  Parser* p_;
  std::string fn_;
  SourceLoc loc_;
  std::set<std::string> taken_;
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& file, const std::string& base_dir)
      : src_(text), file_(file), base_dir_(base_dir), toks_(internal::tokenize(text, file)) {}

  ParsedProgram run() {
    ParsedProgram out;
    bool have_minimize = false;
    SourceLoc minimize_loc;
    skip_newlines();
    if (peek().kind == TokenKind::End) fail(SourceLoc{file_, 1, 1}, "empty problem: no 'minimize' statement");
    while (peek().kind != TokenKind::End) {
      const Token& t = peek();
      if (t.kind == TokenKind::Ident && t.text == "minimize") {
        SourceLoc loc = here();
        next();
        if (have_minimize) {
          fail(loc, "a second 'minimize' statement; a problem has exactly one (the first is at line " +
                        std::to_string(minimize_loc.line) + ")");
        }
        have_minimize = true;
        minimize_loc = loc;
        Value v = expression();
        if (v.type != Value::Type::Terms) {
          fail(v.loc,
               "'minimize' needs a sum of function terms such as sum_squares(...) or norm1(...), got " +
                   describe_value(v));
        }
        out.problem.terms = v.terms;
      } else if (t.kind == TokenKind::Ident && peek(1).kind == TokenKind::Assign) {
        statement(&out);
      } else {
        fail(here(), "expected a statement ('name = ...' or 'minimize ...'), found " + internal::describe(t));
      }
      end_of_statement();
    }
    if (!have_minimize) fail(here(), "no 'minimize' statement: the problem has nothing to minimize");
    out.problem.passes_run = passes_run_;
    out.problem.solver = solver_;
    out.problem.knorm = knorm_;
    out.problem.record_origin = record_origin_;
    try {
      verify(out.problem);
    } catch (const UserError& e) {
      fail(minimize_loc, e.what());
    }
    return out;
  }

  [[noreturn]] void fail(const SourceLoc& loc, const std::string& msg) const {
    throw UserError(format_located_error(loc, msg, src_));
  }

  const std::string& base_dir() const { return base_dir_; }

 private:
  // ---- Tokens ----
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  SourceLoc here() const { return loc_of(peek()); }
  SourceLoc loc_of(const Token& t) const { return SourceLoc{file_, t.line, t.col}; }
  void skip_newlines() {
    while (peek().kind == TokenKind::Newline) next();
  }
  const Token& expect(TokenKind k, const std::string& context) {
    if (peek().kind != k) {
      fail(here(),
           "expected " + internal::describe(k) + " " + context + ", found " + internal::describe(peek()));
    }
    return next();
  }
  void end_of_statement() {
    if (peek().kind == TokenKind::End) return;
    if (peek().kind != TokenKind::Newline) {
      fail(here(), "expected the end of the statement, found " + internal::describe(peek()));
    }
    skip_newlines();
  }
  // A line that starts with a binary operator continues the expression above.
  bool at_operator(std::initializer_list<TokenKind> ops) {
    size_t k = 0;
    while (peek(k).kind == TokenKind::Newline) ++k;
    for (TokenKind op : ops) {
      if (peek(k).kind == op) {
        while (k--) next();
        return true;
      }
    }
    return false;
  }

  // ---- Statements ----
  // statement := IDENT '=' expression
  void statement(ParsedProgram* out) {
    const Token& name_tok = next();
    SourceLoc name_loc = loc_of(name_tok);
    std::string name = name_tok.text;
    next();  // '='
    if (name == "minimize") fail(name_loc, "'minimize' is a keyword and cannot be assigned");
    if (name == "passes_run" || name == "solver" || name == "knorm") return record(name, name_loc);
    if (NameScope::is_reserved(name)) {
      fail(name_loc, "'" + name + "' is a built-in name of the language and cannot be assigned");
    }
    auto prev = env_.find(name);
    if (prev != env_.end()) {
      fail(name_loc, "'" + name + "' is already defined (at line " + std::to_string(prev->second.loc.line) +
                         "); names are bound once");
    }
    binding_name_ = name;
    Value v = expression();
    binding_name_.clear();
    if (v.type == Value::Type::Expr && !v.from_name && v.expr->name_hint != name) {
      v.expr = with_name_hint(v.expr, name);
    }
    if (v.type == Value::Type::Expr) out->names[name] = v.expr;
    v.from_name = false;
    v.loc = name_loc;
    env_[name] = v;
  }

  // record := 'passes_run' '=' '[' STRING {',' STRING} ']' | 'solver' '=' STRING | 'knorm' '=' NUMBER
  // The record of rewriting passes that a dump carries (see docs/passes.md).
  void record(const std::string& name, const SourceLoc& loc) {
    if (!recorded_.insert(name).second) fail(loc, "'" + name + "' is recorded twice");
    if (record_origin_.empty()) record_origin_ = loc.to_string();
    Value v = expression();
    if (name == "passes_run") {
      if (v.type != Value::Type::List)
        fail(v.loc, "passes_run must be a list of pass names, e.g. [\"absorb\"]");
      for (const Value& e : v.list) {
        if (e.type != Value::Type::String) fail(e.loc, "passes_run must be a list of pass names (strings)");
        passes_run_.push_back(e.str);
      }
    } else if (name == "solver") {
      if (v.type != Value::Type::String) fail(v.loc, "solver must be a string such as \"pc\"");
      solver_ = v.str;
    } else {
      if (v.type != Value::Type::Scalar || !(v.scalar > 0) || !std::isfinite(v.scalar)) {
        fail(v.loc, "knorm must be a positive finite number");
      }
      knorm_ = v.scalar;
    }
  }

  // ---- Expressions ----
  // expression := product { ('+' | '-') product }
  Value expression() {
    Depth d(this);
    Value lhs = product();
    while (at_operator({TokenKind::Plus, TokenKind::Minus})) {
      const Token& op = next();
      skip_newlines();
      Value rhs = product();
      lhs = binary(op, lhs, rhs);
    }
    return lhs;
  }

  // product := unary { ('*' | '/') unary }
  Value product() {
    Value lhs = unary();
    while (at_operator({TokenKind::Star, TokenKind::Slash})) {
      const Token& op = next();
      skip_newlines();
      Value rhs = unary();
      lhs = binary(op, lhs, rhs);
    }
    return lhs;
  }

  // unary := ('-' | '+') unary | primary
  Value unary() {
    Depth d(this);
    if (peek().kind == TokenKind::Minus || peek().kind == TokenKind::Plus) {
      const Token& op = next();
      SourceLoc loc = loc_of(op);
      Value v = unary();
      if (op.kind == TokenKind::Plus) {
        if (v.type != Value::Type::Scalar && v.type != Value::Type::Expr) {
          fail(loc, "unary '+' applies to a number or an expression, not " + describe_value(v));
        }
        v.loc = loc;
        return v;
      }
      Value out;
      out.loc = loc;
      switch (v.type) {
        case Value::Type::Scalar:
          out.type = Value::Type::Scalar;
          out.scalar = -v.scalar;
          return out;
        case Value::Type::Expr:
          out.type = Value::Type::Expr;
          out.expr = located(loc, [&] { return make_neg(v.expr); });
          return out;
        default:
          fail(loc,
               "cannot negate " + describe_value(v) +
                   (v.type == Value::Type::Terms ? " (a minimized function must keep a factor >= 0)" : ""));
      }
    }
    return primary();
  }

  // primary := NUMBER | STRING | IDENT | call | '(' expression ')' | '[' list ']'
  Value primary() {
    const Token& t = peek();
    SourceLoc loc = here();
    Value v;
    v.loc = loc;
    switch (t.kind) {
      case TokenKind::Number:
        next();
        if (!fits_float32(t.number)) {
          fail(loc, t.text + " is beyond float32's range (±3.4e38), in which proxc computes");
        }
        v.type = Value::Type::Scalar;
        v.scalar = t.number;
        return v;
      case TokenKind::String:
        next();
        v.type = Value::Type::String;
        v.str = t.text;
        return v;
      case TokenKind::LParen: {
        next();
        Value inner = expression();
        expect(TokenKind::RParen,
               "to close the '(' at " + std::to_string(loc.line) + ":" + std::to_string(loc.col));
        inner.loc = loc;
        return inner;
      }
      case TokenKind::LBracket: {
        next();
        Depth d(this);
        v.type = Value::Type::List;
        while (peek().kind != TokenKind::RBracket) {
          v.list.push_back(expression());
          if (peek().kind == TokenKind::Comma) {
            next();
          } else if (peek().kind != TokenKind::RBracket) {
            fail(here(), "expected ',' or ']' in the list opened at " + std::to_string(loc.line) + ":" +
                             std::to_string(loc.col) + ", found " + internal::describe(peek()));
          }
        }
        next();
        return v;
      }
      case TokenKind::Ident: {
        next();
        if (peek().kind == TokenKind::LParen) return call(t.text, loc);
        if (t.text == "inf") {
          v.type = Value::Type::Scalar;
          v.scalar = INFINITY;
          return v;
        }
        auto it = env_.find(t.text);
        if (it == env_.end()) {
          if (NameScope::is_reserved(t.text)) fail(loc, "'" + t.text + "' is a function; call it with (...)");
          fail(loc, "undefined name '" + t.text + "'");
        }
        v = it->second;
        v.loc = loc;
        v.from_name = true;
        return v;
      }
      default:
        fail(loc, "expected a value, found " + internal::describe(t));
    }
  }

  Value call(const std::string& fn, const SourceLoc& loc) {
    Depth d(this);
    next();  // '('
    Args args(this, fn, loc);
    bool seen_kw = false;
    while (peek().kind != TokenKind::RParen) {
      if (peek().kind == TokenKind::Ident && peek(1).kind == TokenKind::Assign) {
        SourceLoc kloc = here();
        std::string key = next().text;
        next();
        for (const auto& [k, unused] : args.kw) {
          if (k == key) fail(kloc, fn + ": keyword '" + key + "' given twice");
        }
        args.kw.emplace_back(key, expression());
        args.kw_locs.push_back(kloc);
        seen_kw = true;
      } else {
        if (seen_kw) fail(here(), fn + ": a positional argument cannot follow keyword arguments");
        args.pos.push_back(expression());
      }
      if (peek().kind == TokenKind::Comma) {
        next();
      } else if (peek().kind != TokenKind::RParen) {
        fail(here(), "expected ',' or ')' in the call of '" + fn + "' opened at " + std::to_string(loc.line) +
                         ":" + std::to_string(loc.col) + ", found " + internal::describe(peek()));
      }
    }
    next();  // ')'
    Value v = builtin(args);
    v.loc = loc;
    return v;
  }

  // ---- Operators ----
  Value binary(const Token& op, const Value& a, const Value& b) {
    SourceLoc loc = loc_of(op);
    Value out;
    out.loc = a.loc;
    using T = Value::Type;
    char sym = op.text[0];
    if (a.type == T::Scalar && b.type == T::Scalar) {
      double r = sym == '+'   ? a.scalar + b.scalar
                 : sym == '-' ? a.scalar - b.scalar
                 : sym == '*' ? a.scalar * b.scalar
                              : a.scalar / b.scalar;
      if (sym == '/' && b.scalar == 0) fail(loc, "division by zero");
      if (!std::isfinite(r)) fail(loc, "the result of '" + op.text + "' is not a finite number");
      if (!fits_float32(r)) {
        fail(loc, "the result of '" + op.text + "', " + format_double(r) +
                      ", is beyond float32's range (±3.4e38), in which proxc computes");
      }
      out.type = T::Scalar;
      out.scalar = r;
      return out;
    }
    if (sym == '+' || sym == '-') {
      if (a.type == T::Terms && b.type == T::Terms) {
        if (sym == '-') fail(loc, "cannot subtract a function term; terms of an objective are added");
        out.type = T::Terms;
        out.terms = a.terms;
        out.terms.insert(out.terms.end(), b.terms.begin(), b.terms.end());
        return out;
      }
      if ((a.type == T::Expr || a.type == T::Scalar) && (b.type == T::Expr || b.type == T::Scalar)) {
        proxc::internal::Expr ea =
            a.type == T::Expr ? a.expr : located(a.loc, [&] { return make_scalar_constant(a.scalar); });
        proxc::internal::Expr eb =
            b.type == T::Expr ? b.expr : located(b.loc, [&] { return make_scalar_constant(b.scalar); });
        out.type = T::Expr;
        out.expr = located(loc, [&] { return sym == '+' ? make_add(ea, eb) : make_sub(ea, eb); });
        return out;
      }
      if (a.type == T::Terms || b.type == T::Terms) {
        fail(loc, std::string("cannot ") + (sym == '+' ? "add " : "subtract ") + describe_value(b) + " and " +
                      describe_value(a) + "; only function terms add up to an objective");
      }
      fail(loc,
           std::string("'") + sym + "' does not apply to " + describe_value(a) + " and " + describe_value(b));
    }
    // '*' and '/'
    const Value* s = a.type == T::Scalar ? &a : (b.type == T::Scalar ? &b : nullptr);
    const Value* other = s == &a ? &b : &a;
    if (s && (sym == '*' || s == &b)) {
      double f = sym == '*' ? s->scalar : 1.0 / s->scalar;
      if (sym == '/' && s->scalar == 0) fail(loc, "division by zero");
      if (!fits_float32(f)) {
        fail(loc, "the factor " + format_double(f) + " is beyond float32's range (±3.4e38), in which proxc computes");
      }
      if (other->type == T::Expr) {
        out.type = T::Expr;
        out.expr = located(loc, [&] { return make_scale(f, other->expr); });
        return out;
      }
      if (other->type == T::Terms) {
        if (!(f >= 0) || !std::isfinite(f)) {
          fail(s->loc, "the factor of a function term must be a finite number >= 0, got " + format_number(f));
        }
        out.type = T::Terms;
        out.terms = other->terms;
        for (FunctionTerm& t : out.terms) {
          const double alpha = t.alpha * f;
          if (!fits_float32(alpha)) {
            fail(loc, "the factor of a function term overflows: " + format_double(t.alpha) + " * " +
                          format_double(f) + " is beyond float32's range (±3.4e38), in which proxc computes");
          }
          t.alpha = alpha;
        }
        return out;
      }
    }
    if (a.type == T::Expr && b.type == T::Expr && sym == '*') {
      fail(loc, "cannot multiply two expressions (not linear); for a constant weight use mul_elemwise(w, x)");
    }
    fail(loc,
         std::string("'") + sym + "' does not apply to " + describe_value(a) + " and " + describe_value(b));
  }

  // Runs f; a UserError from inside is re-thrown located at `loc` (unless it
  // already carries a location).
  template <typename F>
  auto located(const SourceLoc& loc, F&& f) -> decltype(f()) {
    try {
      auto out = f();
      if constexpr (std::is_same_v<decltype(out), proxc::internal::Expr>) {
        out = proxc::internal::fold_constant(out);  // `-b`, `2 * b`, `conv(k, b)`: one constant
        // Room for the passes (kPassHeadroom), unless this is a dump they already ran on.
        const int most = kMaxExprDepth - kPassHeadroom;
        if (passes_run_.empty() && out->depth > most) {
          fail(loc, "the expression nests " + std::to_string(out->depth) + " operators deep; a problem may nest " +
                        std::to_string(most) + " (the rewriting passes add levels, up to the limit of " +
                        std::to_string(kMaxExprDepth) + ")");
        }
      }
      return out;
    } catch (const UserError& e) {
      std::string msg = e.what();
      if (msg.rfind(file_ + ":", 0) == 0) throw;
      fail(loc, msg);
    }
  }

  // ---- Builtins ----
  Value builtin(Args& a);
  bool constructor(Args& a, Value* out);
  bool linear_operator(Args& a, Value* out);
  bool term_role(Args& a, Value* out);
  bool prox_function(Args& a, Value* out);
  bool user_prox_function(Args& a, Value* out);
  void term_param(Args& a, const char* name, Param* out);
  void common_parameters(Args& a, FunctionTerm* t);
  Value make_expr_value(proxc::internal::Expr e) {
    Value v;
    v.type = Value::Type::Expr;
    v.expr = std::move(e);
    return v;
  }

  struct Depth {
    explicit Depth(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxDepth) {
        p_->fail(p_->here(),
                 "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      }
    }
    ~Depth() { --p_->depth_; }
    Parser* p_;
  };

  const std::string& src_;
  std::string file_;
  std::string record_origin_;  // the first record statement's place
  std::string base_dir_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::map<std::string, Value> env_;
  std::string binding_name_;
  std::set<std::string> recorded_;
  std::vector<std::string> passes_run_;
  std::string solver_;
  double knorm_ = 0;

  friend class Args;
};

}  // namespace proxc::internal::parsing
