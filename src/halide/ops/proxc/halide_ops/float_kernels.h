/// \file
/// proxc::halide_ops::DemoteKernelDoubles: GPU kernels without double
/// precision (Schedule::GpuFloat), for OpenCL devices without cl_khr_fp64.
/// Part of the Halide-op library (proxc/halide_ops.h includes every part).
#pragma once

#include <Halide.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace proxc::halide_ops {

/// A custom lowering pass (Halide runs it after its own passes, before it
/// splits the kernels off): inside every GPU kernel, arithmetic in double
/// becomes arithmetic in float, and each double the kernel reads from the
/// host (a parameter such as a step size, a scalar the host computed, a
/// value bound outside the kernel) is rounded to float on the host just
/// before the kernel starts, so that the kernel's arguments are floats too.
/// What cannot be demoted is an error: a kernel that stores doubles or
/// allocates them (the schedule's reductions keep float partial values in
/// GpuFloat), a double read at a position the thread computes (the host
/// cannot read it for the kernel), or a reinterpretation of a double's bits.
class DemoteKernelDoubles : public Halide::Internal::IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Halide::Internal::Stmt visit(const Halide::Internal::For* op) override {
    if (depth_ > 0 || !Halide::Internal::is_gpu(op->for_type)) {
      if (depth_ == 0) return IRMutator::visit(op);
      // A loop inside the kernel: its variable is the kernel's own.
      Halide::Expr min = mutate(op->min), extent = mutate(op->extent);
      bind(op->name);
      Halide::Internal::Stmt body = mutate(op->body);
      unbind(op->name);
      return Halide::Internal::For::make(op->name, min, extent, op->for_type, op->partition_policy,
                                         op->device_api, body);
    }
    // The outermost GPU loop: the kernel.
    ++depth_;
    bind(op->name);
    Halide::Internal::Stmt body = mutate(op->body);
    unbind(op->name);
    --depth_;
    Halide::Internal::Stmt s = Halide::Internal::For::make(op->name, op->min, op->extent, op->for_type,
                                                           op->partition_policy, op->device_api, body);
    for (auto it = hoisted_.rbegin(); it != hoisted_.rend(); ++it)
      s = Halide::Internal::LetStmt::make(it->first, it->second, s);
    hoisted_.clear();
    return s;
  }

  Halide::Expr visit(const Halide::Internal::Variable* op) override {
    if (depth_ == 0 || !is_f64(op->type)) return op;
    // Bound inside the kernel: its value is demoted where it is bound.
    if (bound_.count(op->name)) return Halide::Internal::Variable::make(f32(op->type), op->name);
    return hoist(op);
  }

  Halide::Expr visit(const Halide::Internal::Load* op) override {
    if (depth_ == 0 || !is_f64(op->type)) return IRMutator::visit(op);
    if (uses_kernel_variables(op->index) || uses_kernel_variables(op->predicate)) {
      fail("reads doubles from '" + op->name + "' at a position each thread computes");
    }
    return hoist(op);
  }

  Halide::Expr visit(const Halide::Internal::FloatImm* op) override {
    if (depth_ == 0 || !is_f64(op->type)) return op;
    return Halide::Internal::FloatImm::make(Halide::Float(32), op->value);
  }

  Halide::Expr visit(const Halide::Internal::Cast* op) override {
    if (depth_ == 0) return IRMutator::visit(op);
    Halide::Expr v = mutate(op->value);
    const Halide::Type t = is_f64(op->type) ? f32(op->type) : op->type;
    if (v.type() == t) return v;
    return Halide::Internal::Cast::make(t, v);
  }

  Halide::Expr visit(const Halide::Internal::Reinterpret* op) override {
    if (depth_ > 0 && (is_f64(op->type) || is_f64(op->value.type())))
      fail("reinterprets the bits of a double");
    return IRMutator::visit(op);
  }

  Halide::Expr visit(const Halide::Internal::Call* op) override {
    if (depth_ == 0) return IRMutator::visit(op);
    bool doubles = is_f64(op->type);
    for (const Halide::Expr& a : op->args) doubles = doubles || (a.defined() && is_f64(a.type()));
    auto [args, changed] = mutate_with_changes(op->args);
    if (!doubles && !changed) return op;
    std::string name = op->name;
    // Halide's math functions by type: sqrt_f64 → sqrt_f32, is_nan_f64 → is_nan_f32.
    const std::string suffix = "_f64";
    if (doubles && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name = name.substr(0, name.size() - suffix.size()) + "_f32";
    }
    return Halide::Internal::Call::make(is_f64(op->type) ? f32(op->type) : op->type, name, args,
                                        op->call_type, op->func, op->value_index, op->image, op->param);
  }

  Halide::Expr visit(const Halide::Internal::Let* op) override {
    if (depth_ == 0) return IRMutator::visit(op);
    Halide::Expr value = mutate(op->value);
    bind(op->name);
    Halide::Expr body = mutate(op->body);
    unbind(op->name);
    return Halide::Internal::Let::make(op->name, value, body);
  }

  Halide::Internal::Stmt visit(const Halide::Internal::LetStmt* op) override {
    if (depth_ == 0) return IRMutator::visit(op);
    Halide::Expr value = mutate(op->value);
    bind(op->name);
    Halide::Internal::Stmt body = mutate(op->body);
    unbind(op->name);
    return Halide::Internal::LetStmt::make(op->name, value, body);
  }

  Halide::Internal::Stmt visit(const Halide::Internal::Store* op) override {
    if (depth_ > 0 && is_f64(op->value.type())) fail("stores doubles into '" + op->name + "'");
    return IRMutator::visit(op);
  }

  Halide::Internal::Stmt visit(const Halide::Internal::Allocate* op) override {
    if (depth_ > 0 && is_f64(op->type)) fail("allocates doubles ('" + op->name + "')");
    if (depth_ == 0) return IRMutator::visit(op);
    bind(op->name);
    Halide::Internal::Stmt s = IRMutator::visit(op);
    unbind(op->name);
    return s;
  }

 private:
  static bool is_f64(const Halide::Type& t) { return t.is_float() && t.bits() == 64; }
  static Halide::Type f32(const Halide::Type& t) { return Halide::Float(32, t.lanes()); }

  [[noreturn]] static void fail(const std::string& what) {
    throw Halide::InternalError("a GPU kernel of the schedule without doubles (GpuFloat) " + what);
  }

  void bind(const std::string& name) { ++bound_[name]; }
  void unbind(const std::string& name) {
    auto it = bound_.find(name);
    if (--it->second == 0) bound_.erase(it);
  }

  // Whether e reads a variable bound inside the kernel (a thread's own).
  bool uses_kernel_variables(const Halide::Expr& e) const {
    struct Uses : Halide::Internal::IRVisitor {
      const std::map<std::string, int>& bound;
      bool found = false;
      explicit Uses(const std::map<std::string, int>& b) : bound(b) {}
      using IRVisitor::visit;
      void visit(const Halide::Internal::Variable* v) override { found = found || bound.count(v->name) > 0; }
    } uses(bound_);
    if (e.defined()) e.accept(&uses);
    return uses.found;
  }

  // A double the host has (a free variable, a load at a position the host
  // knows) as a float the host computes before the kernel starts.
  Halide::Expr hoist(const Halide::Expr& e) {
    for (const auto& [name, value] : hoisted_) {
      if (Halide::Internal::equal(value.as<Halide::Internal::Cast>()->value, e)) {
        return Halide::Internal::Variable::make(value.type(), name);
      }
    }
    const std::string name = "f32_of_double." + std::to_string(counter_++);
    hoisted_.emplace_back(name, Halide::Internal::Cast::make(f32(e.type()), e));
    return Halide::Internal::Variable::make(f32(e.type()), name);
  }

  int depth_ = 0;
  int counter_ = 0;
  std::map<std::string, int> bound_;                           ///< names bound inside the kernel
  std::vector<std::pair<std::string, Halide::Expr>> hoisted_;  ///< the kernel's floats computed before it
};

}  // namespace proxc::halide_ops
