#include "ir/latex.h"

#include <cmath>
#include <functional>
#include <sstream>

#include "ir/operators.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"
#include "support/format.h"

namespace proxc::internal {

namespace {

std::string tex_name(const std::string& name) {
  // x_1 -> x_{1}; other underscores escaped.
  std::string out;
  for (char ch : name) out += ch == '_' ? std::string("\\_") : std::string(1, ch);
  return "\\mathrm{" + out + "}";
}

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "\\infty" : "-\\infty";
  std::string s = format_double(v);
  auto e = s.find('e');
  if (e == std::string::npos) return s;
  int exp = std::stoi(s.substr(e + 1));
  return s.substr(0, e) + " \\cdot 10^{" + std::to_string(exp) + "}";
}

std::string ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// A template of the tables with `#i` replaced by plain(i) and `@i` by paren(i).
std::string fill(const char* tmpl, const std::function<std::string(size_t)>& plain,
                 const std::function<std::string(size_t)>& paren = nullptr) {
  std::string s;
  for (const char* t = tmpl; *t; ++t) {
    if ((*t == '#' || (*t == '@' && paren)) && t[1] >= '0' && t[1] <= '9') {
      size_t i = static_cast<size_t>(t[1] - '0');
      s += *t == '#' ? plain(i) : paren(i);
      ++t;
    } else {
      s += *t;
    }
  }
  return s;
}

class LatexPrinter {
 public:
  explicit LatexPrinter(const Problem& p) : p_(p), plan_(p) {}

  std::string print() {
    std::ostringstream out;
    out << "\\begin{equation*}\n  \\min_{";
    auto vars = p_.variables();
    for (size_t i = 0; i < vars.size(); ++i) out << (i ? ", " : "") << tex_name(plan_.name(vars[i].get()));
    out << "} \\;";
    for (size_t i = 0; i < p_.terms.size(); ++i) {
      out << "\n  " << (i ? "+ " : "") << term(p_.terms[i]);
    }
    out << "\n\\end{equation*}\n";
    return out.str();
  }

 private:
  std::string e(const Expr& x, bool paren_sum = false) {
    const ExprNode* n = x.get();
    if (plan_.is_bound(n) && (n->is_variable() || n->is_constant())) return tex_name(plan_.name(n));
    if (n->is_variable()) return tex_name(plan_.name(n));
    if (n->is_constant()) {
      const ConstantSource& src = n->constant->source;
      if (src.type == ConstantSource::Type::Scalar) return num(src.scalar);
      if (src.type == ConstantSource::Type::Gaussian) return "G_{" + num(src.gaussian_sigma) + "}";
      return tex_name("c");
    }
    // The table's template: #i is slot i, @i the same with a sum in parentheses.
    const OperatorInfo& op = operator_info(n->kind);
    std::vector<std::pair<std::string, std::string>> slots = slot_texts(n, op);
    std::string s = fill(op.latex, [&](size_t i) { return slots.at(i).first; },
                         [&](size_t i) { return slots.at(i).second; });
    bool sum = op.syntax == OperatorSyntax::Infix;
    return sum && paren_sum ? "\\left(" + s + "\\right)" : s;
  }

  // Each slot's LaTeX, plain and parenthesised when it is a sum.
  std::vector<std::pair<std::string, std::string>> slot_texts(const ExprNode* n, const OperatorInfo& op) {
    std::vector<std::pair<std::string, std::string>> out;
    const auto& a = n->args;
    size_t next = 0;
    auto operand = [&](const Expr& x) {
      std::string plain = e(x);
      bool sum = operator_info(x->kind).syntax == OperatorSyntax::Infix;
      out.emplace_back(plain, sum ? "\\left(" + plain + "\\right)" : plain);
    };
    auto text = [&](const std::string& t) { out.emplace_back(t, t); };
    for (size_t i = 0; i < op.slots.size(); ++i) {
      switch (op.slots[i].role) {
        case SlotRole::Operand:
        case SlotRole::Constant: operand(a[next++]); break;
        case SlotRole::Operands: {
          std::string m = "\\begin{bmatrix}";
          for (size_t k = 0; k < a.size(); ++k) m += (k ? " \\\\ " : " ") + e(a[k]);
          text(m + " \\end{bmatrix}");
          break;
        }
        case SlotRole::Ints:
        case SlotRole::OptionalInts:
        case SlotRole::Shape:
        case SlotRole::Dims: text(ints(slot_ints(*n, i))); break;
        case SlotRole::Factor: text(num(n->scalar)); break;
        case SlotRole::Name: text(tex_name(n->str)); break;
        case SlotRole::Option: break;  // the boundary rule: not part of the formula
        case SlotRole::ConstantOrName:
          if (next < a.size()) operand(a[next++]);
          else text("M_{\\mathrm{" + n->str + "}}");
          break;
      }
    }
    return out;
  }

  std::string param(const Param& q) { return q.array ? e(q.array, true) : num(q.scalar); }

  std::string term(const FunctionTerm& t) {
    std::string arg = e(t.arg);
    if (t.beta != 1) arg = num(t.beta) + "\\left(" + arg + "\\right)";
    if (!t.b.is_scalar(0)) arg += " - " + param(t.b);
    // The table's template: #0 the argument, #i slot i.
    const FunctionInfo& info = function_info(t.kind);
    std::vector<std::string> slots = {arg};
    for (const TermSlot& slot : info.slots) {
      switch (slot.role) {
        case TermSlotRole::Axes: slots.push_back(ints(t.axes)); break;
        case TermSlotRole::Counts: slots.push_back(e(t.counts)); break;
        case TermSlotRole::Weight: slots.push_back(e(t.weight, true)); break;  // a sum in parentheses
        case TermSlotRole::Lower:
        case TermSlotRole::Upper: slots.push_back(param(bound_param(t, slot))); break;
      }
    }
    std::string f = t.kind == FunctionKind::UserProx
                        ? tex_name(t.user_name) + "\\left(" + arg + "\\right)"
                        : fill(info.latex, [&](size_t i) { return slots.at(i); });
    std::string s = t.alpha != 1 ? num(t.alpha) + "\\, " + f : f;
    std::string x = e(t.arg, true);
    if (!t.c.is_scalar(0)) s += " + \\langle " + param(t.c) + ", " + x + " \\rangle";
    if (t.gamma != 0) s += " + " + num(t.gamma) + " \\left\\| " + x + " \\right\\|_2^2";
    if (t.d != 0) s += " + " + num(t.d);
    return s;
  }

  const Problem& p_;
  PrintPlan plan_;
};

}  // namespace

std::string print_latex(const Problem& p) { return LatexPrinter(unfold_constants(p)).print(); }

}  // namespace proxc::internal
