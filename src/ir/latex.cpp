#include "ir/latex.h"

#include <cmath>
#include <sstream>

#include "ir/printer.h"
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
    const auto& a = n->args;
    std::string s;
    switch (n->kind) {
      case ExprKind::Variable: return tex_name(plan_.name(n));
      case ExprKind::Constant:
        if (n->constant->source.type == ConstantSource::Type::Scalar) return num(n->constant->source.scalar);
        if (n->constant->source.type == ConstantSource::Type::Gaussian) {
          return "G_{" + num(n->constant->source.gaussian_sigma) + "}";
        }
        return tex_name(plan_.is_bound(n) ? plan_.name(n) : "c");
      case ExprKind::Grad: return "\\nabla " + e(a[0], true);
      case ExprKind::Conv: return e(a[0], true) + " \\ast " + e(a[1], true);
      case ExprKind::MulElemwise: return e(a[0], true) + " \\odot " + e(a[1], true);
      case ExprKind::Subsample: return "S_{" + ints(n->ints) + "}\\," + e(a[0], true);
      case ExprKind::Scale: return num(n->scalar) + "\\, " + e(a[0], true);
      case ExprKind::Add: s = e(a[0]) + " + " + e(a[1]); break;
      case ExprKind::Sub: s = e(a[0]) + " - " + e(a[1], true); break;
      case ExprKind::Neg: return "-" + e(a[0], true);
      case ExprKind::VStack: {
        s = "\\begin{bmatrix}";
        for (size_t i = 0; i < a.size(); ++i) s += (i ? " \\\\ " : " ") + e(a[i]);
        return s + " \\end{bmatrix}";
      }
      case ExprKind::Reshape: return "\\mathrm{reshape}_{" + ints(n->ints) + "}(" + e(a[0]) + ")";
      case ExprKind::Transpose: return "\\mathrm{transpose}_{" + ints(n->ints) + "}(" + e(a[0]) + ")";
      case ExprKind::Crop: return "\\mathrm{crop}(" + e(a[0]) + ")";
      case ExprKind::MulColor:
        return (a.size() > 1 ? e(a[1], true) : "M_{\\mathrm{" + n->str + "}}") + "\\, " + e(a[0], true);
      case ExprKind::Warp: return "\\mathcal{W}_{" + e(a[1]) + "}(" + e(a[0]) + ")";
      case ExprKind::BlackBox: return tex_name(n->str) + "(" + e(a[0]) + ")";
    }
    return paren_sum ? "\\left(" + s + "\\right)" : s;
  }

  std::string param(const Param& q) { return q.array ? e(q.array, true) : num(q.scalar); }

  std::string term(const FunctionTerm& t) {
    std::string arg = e(t.arg);
    if (t.beta != 1) arg = num(t.beta) + "\\left(" + arg + "\\right)";
    if (!t.b.is_scalar(0)) arg += " - " + param(t.b);
    std::string f;
    switch (t.kind) {
      case FunctionKind::SumSquares:
      case FunctionKind::LeastSquares: f = "\\left\\| " + arg + " \\right\\|_2^2"; break;
      case FunctionKind::Norm1: f = "\\left\\| " + arg + " \\right\\|_1"; break;
      case FunctionKind::GroupNorm1: f = "\\left\\| " + arg + " \\right\\|_{2,1;\\,[" + ints(t.axes) + "]}"; break;
      case FunctionKind::Nonneg: f = "\\iota_{\\geq 0}\\left(" + arg + "\\right)"; break;
      case FunctionKind::PoissonNorm: f = "\\mathrm{Poisson}\\left(" + arg + ";\\, " + e(t.counts) + "\\right)"; break;
      case FunctionKind::SumEntries: f = "\\mathbf{1}^\\top\\left(" + arg + "\\right)"; break;
      case FunctionKind::Box:
        f = "\\iota_{[" + param(t.lower) + ",\\, " + param(t.upper) + "]}\\left(" + arg + "\\right)";
        break;
    }
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

std::string print_latex(const Problem& p) { return LatexPrinter(p).print(); }

}  // namespace proxc::internal
