#include "ir/dot.h"

#include <sstream>
#include <unordered_map>

#include "ir/operators.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/format.h"

namespace proxc::internal {

namespace {
std::string node_label(const ExprNode* n, const PrintPlan& plan) {
  std::string label;
  if (plan.is_bound(n)) label = plan.name(n) + " = ";
  if (n->is_constant()) {
    label += n->constant->source.type == ConstantSource::Type::Scalar ? format_double(n->constant->source.scalar)
                                                                      : "constant";
  } else {
    // The keyword, then the factor or name the table gives the node.
    label += to_string(n->kind);
    for (const Slot& slot : operator_info(n->kind).slots) {
      if (slot.role == SlotRole::Factor) label += " " + format_double(n->scalar);
      if (slot.role == SlotRole::Name) label += " " + n->str;
      if (slot.role == SlotRole::Option && !n->str.empty()) label += std::string(" ") + slot.key + "=" + n->str;
    }
  }
  return label + "\\n" + shape_to_string(n->shape);
}
}  // namespace

std::string print_dot(const Problem& problem) {
  const Problem p = unfold_constants(problem);
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
    std::string label = term_function_name(term);
    if (term.alpha != 1) label = format_double(term.alpha) + " * " + label;
    out << "  t" << t << " [label=" << quote_string(label) << ", shape=box, style=filled, fillcolor=lightgrey];\n";
    out << "  n" << id.at(term.arg.get()) << " -> t" << t << ";\n";
    // Constant parameters as dashed edges: b, c, then the function's own slots (ir/operators.h).
    auto edge = [&](const Expr& e, const char* name) {
      if (e) out << "  n" << id.at(e.get()) << " -> t" << t << " [style=dashed, label=\"" << name << "\"];\n";
    };
    edge(term.b.array, "b");
    edge(term.c.array, "c");
    for (const TermSlot& slot : function_info(term.kind).slots) {
      if (slot.role == TermSlotRole::Counts) edge(term.counts, slot.key);
      if (slot.role == TermSlotRole::Weight) edge(term.weight, slot.key);
      if (slot.role == TermSlotRole::Lower || slot.role == TermSlotRole::Upper) {
        edge(bound_param(term, slot).array, slot.key);
      }
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace proxc::internal
