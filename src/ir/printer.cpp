#include "ir/printer.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "ir/operators.h"
#include "ir/traverse.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"
#include "support/names.h"

namespace proxc::internal {

namespace {
bool always_bound(const ExprNode* n) {
  if (n->is_variable()) return true;
  if (n->is_constant()) {
    auto t = n->constant->source.type;
    return t == ConstantSource::Type::File || t == ConstantSource::Type::Inline;
  }
  return false;
}

bool never_bound(const ExprNode* n) {
  return n->is_constant() && n->constant->source.type == ConstantSource::Type::Scalar;
}

const char* fallback_name(const ExprNode* n) {
  if (n->is_variable()) return "x";
  if (n->is_constant()) return "c";
  return "e";
}
}  // namespace

PrintPlan::PrintPlan(const Problem& p, const std::unordered_map<const ExprNode*, std::string>* fixed)
    : order_(topo_order(p)) {
  for (const Expr& e : order_) {
    for (const Expr& a : e->args) ++uses_[a.get()];
  }
  for (const FunctionTerm& t : p.terms) {
    ++uses_[t.arg.get()];
    for (const Param* q : {&t.b, &t.c, &t.lower, &t.upper}) {
      if (q->array) ++uses_[q->array.get()];
    }
    if (t.counts) ++uses_[t.counts.get()];
    if (t.weight) ++uses_[t.weight.get()];
  }
  NameScope scope;
  if (fixed) {
    for (const auto& [n, name] : *fixed) scope.unique(name);  // reserved
  }
  for (const Expr& e : order_) {
    const ExprNode* n = e.get();
    if (never_bound(n)) continue;
    if (fixed && fixed->count(n)) {
      names_[n] = fixed->at(n);
      continue;
    }
    if (always_bound(n) || uses(n) > 1) names_[n] = scope.unique(n->name_hint, fallback_name(n));
  }
}

const std::string& PrintPlan::name(const ExprNode* n) const {
  auto it = names_.find(n);
  internal_assert(it != names_.end()) << "PrintPlan::name of an unbound node";
  return it->second;
}

int PrintPlan::uses(const ExprNode* n) const {
  auto it = uses_.find(n);
  return it == uses_.end() ? 0 : it->second;
}

std::string relative_path(const std::string& full_path, const std::string& base_dir) {
  namespace fs = std::filesystem;
  // A container's member ("scan.h5:/entry/data") keeps its member as it is.
  const MemberPath split = split_member_path(full_path);
  if (split.has_member()) return MemberPath{relative_path(split.file, base_dir), split.member}.joined();
  const std::string& path = split.file;
  fs::path abs = fs::absolute(path).lexically_normal();
  fs::path base = fs::absolute(base_dir.empty() ? "." : base_dir).lexically_normal();
  fs::path rel = abs.lexically_relative(base);
  if (rel.empty()) return abs.generic_string();
  return rel.generic_string();
}

namespace {

std::string format_scalar(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return format_double(v);
}

std::string format_ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Precedence of the printed form: an operand with a lower level than its
// context needs parentheses.
enum Level { kAdditive = 0, kMultiplicative = 1, kUnary = 2, kAtom = 3 };

class TextPrinter {
 public:
  TextPrinter(const Problem& p, const TextPrintOptions& o,
              const std::unordered_map<const ExprNode*, std::string>* fixed = nullptr)
      : p_(p), opts_(o), plan_(p, fixed) {}

  std::string print() {
    std::ostringstream out;
    // The record of rewriting passes, when there is one.
    if (!p_.passes_run.empty()) {
      out << "passes_run = [";
      for (size_t i = 0; i < p_.passes_run.size(); ++i) out << (i ? ", " : "") << quote_string(p_.passes_run[i]);
      out << "]\n";
    }
    if (!p_.solver.empty()) out << "solver = " << quote_string(p_.solver) << "\n";
    if (p_.knorm > 0) out << "knorm = " << format_double(p_.knorm) << "\n";
    for (const Expr& e : plan_.order()) {
      if (!plan_.is_bound(e.get())) continue;
      out << plan_.name(e.get()) << " = " << definition(e.get()) << "\n";
    }
    out << "minimize ";
    for (size_t i = 0; i < p_.terms.size(); ++i) {
      if (i) out << "\n    + ";
      out << term(p_.terms[i]);
    }
    out << "\n";
    return out.str();
  }

  // The text of an expression on its own, leaves by name.
  std::string expression(const Expr& e) { return ref(e.get(), kAdditive); }

 private:
  // The text of a node where it is used: its name when bound.
  std::string ref(const ExprNode* n, Level context) {
    if (plan_.is_bound(n)) return plan_.name(n);
    Level own = level(n);
    std::string s = definition(n);
    return own < context ? "(" + s + ")" : s;
  }

  static Level level(const ExprNode* n) {
    switch (operator_info(n->kind).syntax) {
      case OperatorSyntax::Infix: return kAdditive;
      case OperatorSyntax::Scaling: return kMultiplicative;
      case OperatorSyntax::Prefix: return kUnary;
      case OperatorSyntax::Call: return kAtom;
      case OperatorSyntax::Leaf:
        // A negative scalar prints with a leading minus.
        return n->is_constant() && n->constant->source.type == ConstantSource::Type::Scalar &&
                       n->constant->source.scalar < 0
                   ? kUnary
                   : kAtom;
    }
    return kAtom;
  }

  std::string constant_text(const ExprNode* n) {
    const ConstantSource& src = n->constant->source;
    switch (src.type) {
      case ConstantSource::Type::File:
        return "load(" + quote_string(relative_path(src.resolved_path, opts_.base_dir)) +
               ((opts_.pin_hashes || src.pinned) && !src.hash.empty() ? ", hash=" + quote_string(src.hash) : "") + ")";
      case ConstantSource::Type::Gaussian: {
        const Shape& s = src.gaussian_size;
        std::string size = s[0] == s[1] ? std::to_string(s[0]) : format_ints(s);
        return "gaussian(" + size + ", " + format_double(src.gaussian_sigma) + ")";
      }
      case ConstantSource::Type::Scalar:
        return format_double(src.scalar);
      case ConstantSource::Type::Inline: {
        const auto& d = n->constant->array.data;
        if (opts_.hash_inline) {
          const std::string bytes(reinterpret_cast<const char*>(d.data()), d.size() * sizeof(float));
          return "array(" + format_ints(n->shape) + ", hash=" + quote_string(content_hash(bytes)) + ")";
        }
        std::string s = "array(" + format_ints(n->shape) + ", [";
        for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + format_double(d[i]);
        return s + "])";
      }
      case ConstantSource::Type::Derived: break;  // unfolded before printing
    }
    internal_error << "unknown constant source";
    return "";
  }

  std::string definition(const ExprNode* n) {
    const OperatorInfo& op = operator_info(n->kind);
    const auto& a = n->args;
    switch (op.syntax) {
      case OperatorSyntax::Leaf: {
        if (n->is_constant()) return constant_text(n);
        std::string s = "variable(";
        for (size_t i = 0; i < n->shape.size(); ++i) s += (i ? ", " : "") + std::to_string(n->shape[i]);
        return s + ")";
      }
      case OperatorSyntax::Infix: return ref(a[0].get(), kAdditive) + op.spelling + ref(a[1].get(), kMultiplicative);
      case OperatorSyntax::Prefix: return op.spelling + ref(a[0].get(), kAtom);
      case OperatorSyntax::Scaling: return format_double(n->scalar) + op.spelling + ref(a[0].get(), kUnary);
      case OperatorSyntax::Call: break;
    }
    // keyword(slot, slot, key=slot): each slot as the table says.
    std::string s = std::string(op.keyword) + "(";
    size_t next = 0;  // the next operand
    bool first = true;
    auto put = [&](const std::string& text) {
      s += (first ? "" : ", ") + text;
      first = false;
    };
    for (size_t i = 0; i < op.slots.size(); ++i) {
      const Slot& slot = op.slots[i];
      switch (slot.role) {
        case SlotRole::Operand:
        case SlotRole::Constant: put(ref(a[next++].get(), kAdditive)); break;
        case SlotRole::Operands: {
          std::string list = "[";
          for (; next < a.size(); ++next) list += (list.size() > 1 ? ", " : "") + ref(a[next].get(), kAdditive);
          put(list + "]");
          break;
        }
        case SlotRole::Ints:
        case SlotRole::Shape: put(format_ints(slot_ints(*n, i))); break;
        case SlotRole::OptionalInts:  // left out when empty: the operator's default
          if (!slot_ints(*n, i).empty()) put(format_ints(slot_ints(*n, i)));
          break;
        case SlotRole::Dims:
          // Written only when it differs from its default, the operand's rank.
          if (n->ints[0] != a[0]->rank()) put(std::string(slot.key) + "=" + std::to_string(n->ints[0]));
          break;
        case SlotRole::Factor: put(format_double(n->scalar)); break;
        case SlotRole::Name: put(quote_string(n->str)); break;
        case SlotRole::Option:
          if (!n->str.empty()) put(std::string(slot.key) + "=" + quote_string(n->str));
          break;
        case SlotRole::ConstantOrName:
          put(next < a.size() ? ref(a[next++].get(), kAdditive) : quote_string(n->str));
          break;
      }
    }
    return s + ")";
  }

  std::string param(const Param& q) { return q.array ? ref(q.array.get(), kAdditive) : format_scalar(q.scalar); }

  std::string term(const FunctionTerm& t) {
    std::string s;
    if (t.alpha != 1) s += format_double(t.alpha) + " * ";
    s += term_function_name(t);
    s += "(" + ref(t.arg.get(), kAdditive);
    // A prox function of the user's: every declared parameter, defaults
    // included (the text then means the same under another default).
    for (size_t i = 0; i < t.user_params.size(); ++i) {
      s += std::string(", ") + user_param_name(t, i) + "=" + format_double(t.user_params[i]);
    }
    const FunctionInfo& info = function_info(t.kind);
    for (const TermSlot& slot : info.slots) {  // the slots written after the operand
      if (slot.role == TermSlotRole::Axes) s += ", " + format_ints(t.axes);
      if (slot.role == TermSlotRole::Counts) s += ", " + ref(t.counts.get(), kAdditive);
      if (slot.role == TermSlotRole::Weight) s += ", " + ref(t.weight.get(), kAdditive);
    }
    if (t.beta != 1) s += ", beta=" + format_double(t.beta);
    if (!t.b.is_scalar(0)) s += ", b=" + param(t.b);
    if (!t.c.is_scalar(0)) s += ", c=" + param(t.c);
    if (t.gamma != 0) s += ", gamma=" + format_double(t.gamma);
    if (t.d != 0) s += ", d=" + format_double(t.d);
    for (const TermSlot& slot : info.slots) {  // keyword slots, when not their default
      if (slot.positional()) continue;
      const Param& q = bound_param(t, slot);
      if (!q.is_scalar(bound_default(slot))) s += std::string(", ") + slot.key + "=" + param(q);
    }
    s += ")";
    if (t.role != TermRole::Unassigned) s = std::string(to_string(t.role)) + "(" + s + ")";
    return s;
  }

  const Problem& p_;
  const TextPrintOptions& opts_;
  PrintPlan plan_;
};

}  // namespace

std::string print_expression(const Expr& e) {
  Problem p;
  FunctionTerm t;
  t.arg = unfold_constants(e);
  p.terms.push_back(t);
  return TextPrinter(p, TextPrintOptions{}).expression(t.arg);
}

void LeafNames::add(const Expr& e) {
  for_each_node({unfold_constants(e)}, [&](const Expr& n) {
    if (!n->args.empty() || never_bound(n.get()) || names_.count(n.get())) return;
    names_[n.get()] = scope_.unique(n->name_hint, fallback_name(n.get()));
  });
}

std::string LeafNames::print(const Expr& e) const {
  Problem p;
  FunctionTerm t;
  t.arg = unfold_constants(e);
  p.terms.push_back(t);
  return TextPrinter(p, TextPrintOptions{}, &names_).expression(t.arg);
}

std::string print_text(const Problem& p, const TextPrintOptions& options) {
  return TextPrinter(unfold_constants(p), options).print();
}

}  // namespace proxc::internal
