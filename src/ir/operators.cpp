#include "ir/operators.h"

#include <limits>

#include "support/error.h"

namespace proxc::internal {

namespace {

// A table read from its X-macro, checked to be indexed by its kind enum.
template <typename Info>
std::vector<Info> in_kind_order(std::vector<Info> t, const char* what) {
  for (size_t i = 0; i < t.size(); ++i) {
    internal_assert(static_cast<size_t>(t[i].kind) == i) << what << " table out of order at " << t[i].keyword;
  }
  return t;
}

std::vector<OperatorInfo> build_table() {
  std::vector<OperatorInfo> t;
#define PROXC_SLOT(role, what, key) Slot{SlotRole::role, what, key}
#define PROXC_X(name, keyword, syntax, spelling, latex, ...) \
  t.push_back(OperatorInfo{ExprKind::name, keyword, OperatorSyntax::syntax, spelling, latex, {__VA_ARGS__}});
  PROXC_FOR_EACH_EXPR_KIND(PROXC_X)
#undef PROXC_X
#undef PROXC_SLOT
  return in_kind_order(std::move(t), "operator");
}

std::vector<FunctionInfo> build_function_table() {
  std::vector<FunctionInfo> t;
#define PROXC_TERM_SLOT(role, key, what, missing) TermSlot{TermSlotRole::role, key, what, missing}
#define PROXC_X(name, keyword, usage, latex, ...) \
  t.push_back(FunctionInfo{FunctionKind::name, keyword, usage, latex, {__VA_ARGS__}});
  PROXC_FOR_EACH_FUNCTION_KIND(PROXC_X)
#undef PROXC_X
#undef PROXC_TERM_SLOT
  return in_kind_order(std::move(t), "function");
}

size_t int_slot_count(const OperatorInfo& op) {
  size_t n = 0;
  for (const Slot& s : op.slots) n += OperatorInfo::is_int_list(s.role) ? 1 : 0;
  return n;
}

}  // namespace

const std::vector<OperatorInfo>& operator_table() {
  static const std::vector<OperatorInfo> table = build_table();
  return table;
}

const FunctionInfo& function_info(FunctionKind kind) {
  static const std::vector<FunctionInfo> table = build_function_table();
  return table[static_cast<size_t>(kind)];
}

Param& bound_param(FunctionTerm& t, const TermSlot& slot) {
  internal_assert(slot.role == TermSlotRole::Lower || slot.role == TermSlotRole::Upper) << slot.key;
  return slot.role == TermSlotRole::Lower ? t.lower : t.upper;
}

const Param& bound_param(const FunctionTerm& t, const TermSlot& slot) {
  internal_assert(slot.role == TermSlotRole::Lower || slot.role == TermSlotRole::Upper) << slot.key;
  return slot.role == TermSlotRole::Lower ? t.lower : t.upper;
}

double bound_default(const TermSlot& slot) {
  return slot.role == TermSlotRole::Lower ? -std::numeric_limits<double>::infinity()
                                          : std::numeric_limits<double>::infinity();
}

const OperatorInfo& operator_info(ExprKind kind) { return operator_table()[static_cast<size_t>(kind)]; }

const OperatorInfo* find_operator(const std::string& keyword) {
  for (const OperatorInfo& op : operator_table()) {
    if (keyword == op.keyword) return &op;
  }
  return nullptr;
}

std::vector<int64_t> slot_ints(const ExprNode& n, size_t slot) {
  const OperatorInfo& op = operator_info(n.kind);
  internal_assert(slot < op.slots.size() && OperatorInfo::is_int_list(op.slots[slot].role))
      << op.keyword << ": slot " << slot << " holds no integers";
  // The integer slots share ints in equal parts, in slot order (crop: begin, then extent).
  size_t count = int_slot_count(op), index = 0;
  for (size_t i = 0; i < slot; ++i) index += OperatorInfo::is_int_list(op.slots[i].role) ? 1 : 0;
  size_t part = n.ints.size() / count;
  auto first = n.ints.begin() + static_cast<long>(index * part);
  return std::vector<int64_t>(first, first + static_cast<long>(part));
}

OperatorArgs operator_args(const ExprNode& n) {
  const OperatorInfo& op = operator_info(n.kind);
  OperatorArgs a;
  a.operands = n.args;
  a.factor = n.scalar;
  a.name = n.str;
  for (size_t i = 0; i < op.slots.size(); ++i) {
    if (OperatorInfo::is_int_list(op.slots[i].role)) a.lists.push_back(slot_ints(n, i));
  }
  return a;
}

Expr make_operator(ExprKind kind, const OperatorArgs& a) {
  const OperatorInfo& op = operator_info(kind);
  internal_assert(op.syntax != OperatorSyntax::Leaf) << "make_operator: " << op.keyword << " is a leaf";
  size_t want = 0;
  bool variadic = false;
  for (const Slot& s : op.slots) {
    want += s.role == SlotRole::Operand || s.role == SlotRole::Constant ? 1 : 0;
    variadic = variadic || s.role == SlotRole::Operands || s.role == SlotRole::ConstantOrName;
  }
  internal_assert(variadic ? a.operands.size() >= want : a.operands.size() == want)
      << op.keyword << ": " << a.operands.size() << " operands";
  internal_assert(a.lists.size() == int_slot_count(op))
      << op.keyword << ": " << a.lists.size() << " integer lists";
  const auto& x = a.operands;
  auto list = [&](size_t i) { return a.lists[i]; };
  switch (kind) {
    case ExprKind::Variable:
    case ExprKind::Constant:
      break;
    case ExprKind::Grad:
      return make_grad(x[0], a.lists[0].empty() ? -1 : a.lists[0][0], a.name);
    case ExprKind::Conv:
      return make_conv(x[0], x[1], a.name, a.lists[0].empty() ? -1 : a.lists[0][0]);
    case ExprKind::MulElemwise:
      return make_mul_elemwise(x[0], x[1]);
    case ExprKind::UnevenSubsample:
      return make_uneven_subsample(x[0], x[1]);
    case ExprKind::Subsample:
      return make_subsample(x[0], list(0));
    case ExprKind::Scale:
      return make_scale(a.factor, x[0]);
    case ExprKind::Add:
      return make_add(x[0], x[1]);
    case ExprKind::Sub:
      return make_sub(x[0], x[1]);
    case ExprKind::Neg:
      return make_neg(x[0]);
    case ExprKind::VStack:
      return make_vstack(x);
    case ExprKind::Reshape:
      return make_reshape(x[0], list(0));
    case ExprKind::Transpose:
      return make_transpose(x[0], list(0));
    case ExprKind::Crop:
      return make_crop(x[0], list(0), list(1));
    case ExprKind::MulColor:
      return x.size() > 1 ? make_mul_color(x[0], x[1]) : make_mul_color(x[0], nullptr, a.name);
    case ExprKind::PxwiseMatrixmult:
      return make_pxwise_matrixmult(x[0], x[1]);
    case ExprKind::Warp:
      return make_warp(x[0], x[1], a.lists[0]);
    case ExprKind::BlackBox:
      return make_black_box(a.name, x[0]);
  }
  internal_error << "make_operator: " << op.keyword;
  return nullptr;
}

Expr with_args(const Expr& e, std::vector<Expr> args) {
  internal_assert(args.size() == e->args.size())
      << "with_args: " << args.size() << " operands for " << to_string(e->kind) << " with " << e->args.size();
  bool same = true;
  for (size_t i = 0; i < args.size(); ++i) same = same && args[i] == e->args[i];
  if (same || e->is_variable() || e->is_constant()) return e;
  OperatorArgs a = operator_args(*e);
  a.operands = std::move(args);
  Expr out = make_operator(e->kind, a);
  return e->name_hint.empty() ? out : with_name_hint(out, e->name_hint);
}

}  // namespace proxc::internal

namespace proxc::internal {

std::vector<size_t> linear_positions(const ExprNode& e) {
  // The operands in Operand and Operands slots; constants and named matrices are not linear inputs.
  std::vector<size_t> out;
  size_t next = 0;
  for (const Slot& s : operator_info(e.kind).slots) {
    if (s.role == SlotRole::Operands) {
      for (size_t i = 0; i < e.args.size(); ++i) out.push_back(i);
      return out;
    }
    bool takes = s.role == SlotRole::Operand || s.role == SlotRole::Constant ||
                 (s.role == SlotRole::ConstantOrName && next < e.args.size());
    if (!takes) continue;
    if (s.role == SlotRole::Operand) out.push_back(next);
    ++next;
  }
  return out;
}

std::vector<Expr> ExprNode::linear_args() const {
  std::vector<Expr> out;
  for (size_t i : linear_positions(*this)) out.push_back(args[i]);
  return out;
}

}  // namespace proxc::internal
