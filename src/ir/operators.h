/// \file
/// The operator table (PROXC_FOR_EACH_EXPR_KIND in ir/expr.h) as data: for
/// each node kind its keyword, how the text form writes it, its LaTeX form and
/// its argument slots. The parser, the printers (text, JSON, LaTeX, dot) and
/// with_args read a node's arguments through these slots instead of a switch
/// of their own, and build nodes through make_operator.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/function.h"

namespace proxc::internal {

/// How the text form writes a node.
enum class OperatorSyntax {
  Leaf,     ///< variable(...), constants: written by their own rules
  Call,     ///< keyword(slot, slot, key=slot)
  Infix,    ///< a <symbol> b
  Prefix,   ///< <symbol>a
  Scaling,  ///< factor * a
};

/// What one argument slot of an operator holds and where the node keeps it.
enum class SlotRole {
  Operand,         ///< an affine expression of the variables (one of ExprNode::args)
  Constant,        ///< a constant operand: a kernel, weights, a matrix (one of args)
  Operands,        ///< one or more operands written as a list: vstack([a, b]) (all of args)
  Ints,            ///< a list of integers (a share of ExprNode::ints)
  OptionalInts,    ///< a list of integers that may be left out (the operator's default)
  Shape,           ///< a list of integers that is the node's shape (reshape)
  Dims,            ///< an integer keyword `key=`; the default is the operand's rank
  Factor,          ///< the scalar factor (ExprNode::scalar)
  Name,            ///< a string (ExprNode::str)
  ConstantOrName,  ///< a constant operand, or the name of a built-in one (args or str)
  Option,          ///< a string keyword `key="..."` (ExprNode::str); "" is the default, not written
};

/// One argument slot: its role, how messages name it ("the steps"), and its
/// keyword and JSON field ("steps"; empty for operands).
struct Slot {
  SlotRole role;
  const char* what;
  const char* key;
};

/// One row of the table.
struct OperatorInfo {
  ExprKind kind;
  const char* keyword;
  OperatorSyntax syntax;
  /// Call: the usage shown in arity errors; Infix and Prefix: the symbol.
  const char* spelling;
  /// The LaTeX form: `#i` is slot i's text, `@i` the same, parenthesised
  /// when it is a sum.
  const char* latex;
  std::vector<Slot> slots;

  /// True for slots stored in ExprNode::ints.
  static bool is_int_list(SlotRole r) {
    return r == SlotRole::Ints || r == SlotRole::OptionalInts || r == SlotRole::Shape || r == SlotRole::Dims;
  }
};

/// The row of a kind.
const OperatorInfo& operator_info(ExprKind kind);
/// The row whose keyword is `keyword`; null when there is none.
const OperatorInfo* find_operator(const std::string& keyword);
/// Every row, in the order of the table.
const std::vector<OperatorInfo>& operator_table();

/// What a prox function's slot holds (PROXC_FOR_EACH_FUNCTION_KIND), and
/// where FunctionTerm keeps it.
enum class TermSlotRole {
  Axes,    ///< group axes: an integer list after the operand, or `axes=` (FunctionTerm::axes)
  Counts,  ///< a constant after the operand, or `counts=` (FunctionTerm::counts)
  Lower,   ///< a keyword parameter, a scalar or a constant (FunctionTerm::lower; default −inf)
  Upper,   ///< the same (FunctionTerm::upper; default +inf)
  Weight,  ///< a constant after the operand (and the axes or counts), or `weight=` / `mask=` (FunctionTerm::weight)
};

struct TermSlot {
  TermSlotRole role;
  const char* key;
  const char* what;
  /// The message when a required slot is left out ("" when it has a default).
  const char* missing;

  /// True for slots that may be written after the operand without a keyword.
  bool positional() const {
    return role == TermSlotRole::Axes || role == TermSlotRole::Counts || role == TermSlotRole::Weight;
  }
};

/// One row of the function table.
struct FunctionInfo {
  FunctionKind kind;
  const char* keyword;
  /// Shown in an arity error; "" for the common form.
  const char* usage;
  /// `#0` the argument, `#i` slot i.
  const char* latex;
  std::vector<TermSlot> slots;
};

const FunctionInfo& function_info(FunctionKind kind);

/// The parameter a Lower or Upper slot names, and its default.
Param& bound_param(FunctionTerm& t, const TermSlot& slot);
const Param& bound_param(const FunctionTerm& t, const TermSlot& slot);
double bound_default(const TermSlot& slot);

/// A node's arguments, slot by slot: the operands (in slot order), one
/// integer list per integer slot (empty: left out, the default), the factor
/// and the name. The common currency of the parser, JSON and with_args.
struct OperatorArgs {
  std::vector<Expr> operands;
  std::vector<std::vector<int64_t>> lists;
  double factor = 0;
  std::string name;
};

/// The arguments of a node (lists split from ExprNode::ints; a Dims slot
/// holds the node's value, so that the node rebuilt is the same node).
OperatorArgs operator_args(const ExprNode& n);

/// The integer list of slot `slot` of node `n` (an integer slot).
std::vector<int64_t> slot_ints(const ExprNode& n, size_t slot);

/// Builds a node of `kind` (not a leaf) through its checking make function.
Expr make_operator(ExprKind kind, const OperatorArgs& args);

}  // namespace proxc::internal
