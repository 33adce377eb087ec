#include "ir/dot.h"

#include <sstream>
#include <unordered_map>

#include "ir/printer.h"
#include "support/format.h"

namespace proxc::internal {

namespace {
std::string node_label(const ExprNode* n, const PrintPlan& plan) {
  std::string label;
  if (plan.is_bound(n)) label = plan.name(n) + " = ";
  switch (n->kind) {
    case ExprKind::Constant:
      if (n->constant->source.type == ConstantSource::Type::Scalar) {
        label += format_double(n->constant->source.scalar);
      } else {
        label += "constant";
      }
      break;
    case ExprKind::Scale: label += "scale " + format_double(n->scalar); break;
    case ExprKind::BlackBox: label += "black_box " + n->str; break;
    default: label += to_string(n->kind); break;
  }
  return label + "\\n" + shape_to_string(n->shape);
}
}  // namespace

std::string print_dot(const Problem& p) {
  PrintPlan plan(p);
  std::unordered_map<const ExprNode*, int> id;
  std::ostringstream out;
  out << "digraph problem {\n  rankdir=BT;\n  node [fontname=\"Helvetica\"];\n";
  for (const Expr& e : plan.order()) {
    int i = static_cast<int>(id.size());
    id[e.get()] = i;
    const char* shape = e->is_variable() ? "ellipse, style=bold" : e->is_constant() ? "note" : "ellipse";
    out << "  n" << i << " [label=" << quote_string(node_label(e.get(), plan)) << ", shape=" << shape << "];\n";
    for (size_t k = 0; k < e->args.size(); ++k) {
      out << "  n" << id.at(e->args[k].get()) << " -> n" << i << ";\n";
    }
  }
  for (size_t t = 0; t < p.terms.size(); ++t) {
    const FunctionTerm& term = p.terms[t];
    std::string label = std::string(to_string(term.kind));
    if (term.alpha != 1) label = format_double(term.alpha) + " * " + label;
    out << "  t" << t << " [label=" << quote_string(label) << ", shape=box, style=filled, fillcolor=lightgrey];\n";
    out << "  n" << id.at(term.arg.get()) << " -> t" << t << ";\n";
    for (const auto& [param, name] : {std::pair{&term.b, "b"}, {&term.c, "c"}, {&term.lower, "lower"},
                                      {&term.upper, "upper"}}) {
      if (param->array) {
        out << "  n" << id.at(param->array.get()) << " -> t" << t << " [style=dashed, label=\"" << name
            << "\"];\n";
      }
    }
    if (term.counts) out << "  n" << id.at(term.counts.get()) << " -> t" << t << " [style=dashed, label=\"counts\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace proxc::internal
