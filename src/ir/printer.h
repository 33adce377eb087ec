/// \file
/// The canonical text form of a problem (the .prox language), and the naming
/// plan that every printer (text, JSON, dot, LaTeX) shares.
///
/// The printer picks the names: a node's identity is the node; hints are
/// sanitized and get `_1`, `_2` on a clash; a node used more than once is
/// printed once as a binding; variables and file constants are always bound.
/// print → parse → print is byte-identical.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/problem.h"
#include "support/names.h"

namespace proxc::internal {

/// Which nodes are printed as bindings and under what names.
class PrintPlan {
 public:
  /// `fixed`: names chosen by the caller for some nodes (used as given).
  explicit PrintPlan(const Problem& p, const std::unordered_map<const ExprNode*, std::string>* fixed = nullptr);

  /// Every node once, operands first (see topo_order).
  const std::vector<Expr>& order() const { return order_; }
  /// True when the node is printed as `name = ...` and referred to by name.
  bool is_bound(const ExprNode* n) const { return names_.count(n) > 0; }
  /// The chosen name of a bound node.
  const std::string& name(const ExprNode* n) const;
  /// How many times the node is referred to (by other nodes and by terms).
  int uses(const ExprNode* n) const;

 private:
  std::vector<Expr> order_;
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const ExprNode*, std::string> names_;
};

struct TextPrintOptions {
  /// File constants print their path relative to this folder ("" = the
  /// current directory). A path that has no relative form prints absolute.
  std::string base_dir;
  /// File constants print their content hash too (`load("b.npy",
  /// hash="xxh3-128:...")`), as dumps do: a pinned file loads from outside
  /// the problem's folder.
  bool pin_hashes = false;
  /// Inline arrays print as `array((shape), hash="xxh3-128:...")` instead of
  /// their values: text that does not parse, for comparing problems and
  /// keying their state cheaply (a 512x512 array's values print in about a
  /// second).
  bool hash_inline = false;
};

/// The canonical .prox text of `p`.
std::string print_text(const Problem& p, const TextPrintOptions& options = {});

/// The expression `e` in .prox syntax; variables and file constants by their
/// (uniquified) hints; a subexpression used twice appears under the name
/// print_text would bind it to.
std::string print_expression(const Expr& e);

/// Names for the leaves (variables and constants other than scalars) of
/// several expressions printed side by side, unique among them all, in order
/// of first appearance: two variables both hinted `x` are `x` and `x_1`
/// wherever they appear.
class LeafNames {
 public:
  /// Names the leaves of `e` not named yet.
  void add(const Expr& e);
  /// `e` in .prox syntax with its leaves by these names (add(e) first).
  std::string print(const Expr& e) const;

 private:
  std::unordered_map<const ExprNode*, std::string> names_;
  NameScope scope_;
};

/// `path` relative to `base_dir` ("" = the current directory), with '/'.
std::string relative_path(const std::string& path, const std::string& base_dir);

}  // namespace proxc::internal
