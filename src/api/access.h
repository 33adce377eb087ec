/// \file
/// The bridge between the public API (include/proxc) and the internal IR:
/// what each public handle holds, and internal::Access, the one friend of the
/// public classes, which reaches into them for the API's own .cpp files.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/problem.h"
#include "module/module.h"
#include "proxc/proxc.h"
#include "support/array.h"

namespace proxc {

struct Array::Impl {
  Impl() { array.shape = {0}; }  // an empty array: shape (0,)
  internal::Array array;
  /// Where the values came from: the file load_array read (its path and
  /// content hash), or inline data; what a constant made of it records.
  internal::ConstantSource source;
  /// The constant node made of it (unnamed), so that an array used twice is
  /// one constant; dropped when the elements are written.
  std::shared_ptr<const internal::ExprNode> node;
};

struct Term::Impl {
  std::vector<internal::FunctionTerm> terms;
};

struct Problem::Impl {
  internal::Problem problem;
  /// The last solve's solution, by variable node (the node kept alive).
  std::map<const internal::ExprNode*, std::pair<internal::Expr, Array>> values;
};

struct Module::Impl {
  explicit Impl(internal::Module m) : module(std::move(m)) {}
  internal::Module module;
  std::string cache_dir;
  bool compiled = false;
  CompileReport report;
};

namespace internal {

struct Access {
  static internal::Array& array(proxc::Array& a) { return a.impl().array; }
  static const internal::Array& array(const proxc::Array& a) { return a.impl().array; }
  static const proxc::Array::Impl& impl(const proxc::Array& a) { return a.impl(); }
  // Where an Array keeps the constant node it became (null for an empty
  // handle): the one part of an Array that a const use may set.
  static proxc::Array::Impl* node_cache(const proxc::Array& a) { return a.impl_.get(); }
  static proxc::Array make_array(internal::Array a, internal::ConstantSource source = {});

  static const internal::Expr& node(const proxc::Expr& e) { return e.node_; }
  static proxc::Expr make_expr(internal::Expr e) {
    proxc::Expr out;
    out.node_ = std::move(e);
    return out;
  }

  static std::vector<FunctionTerm>& terms(proxc::Term& t) { return t.impl().terms; }
  static const std::vector<FunctionTerm>& terms(const proxc::Term& t) { return t.impl().terms; }

  static proxc::Problem::Impl& impl(proxc::Problem& p) { return p.impl(); }
  static const proxc::Problem::Impl& impl(const proxc::Problem& p) { return p.impl(); }
  static proxc::Problem make_problem(internal::Problem p) {
    proxc::Problem out;
    out.impl().problem = std::move(p);
    return out;
  }

  static proxc::Module make_module(internal::Module m) {
    return proxc::Module(std::make_unique<proxc::Module::Impl>(std::move(m)));
  }
  static proxc::Module::Impl& impl(proxc::Module& m) { return m.impl(); }
  static const proxc::Module::Impl& impl(const proxc::Module& m) { return m.impl(); }
};

/// The node of `e`; a UserError naming `what` when `e` is undefined.
const Expr& defined_node(const proxc::Expr& e, const char* what);

}  // namespace internal
}  // namespace proxc
