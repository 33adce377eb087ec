#include "emulate/emulate_backend.h"

#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "emulate/prox.h"
#include "fft/fft.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

using emulate::Tensor;

class EmulatedStep : public CompiledStep {
 public:
  EmulatedStep(StepProgram p, emulate::EmulateDebug debug)
      : program_(std::move(p)), check_inputs_(program_), nodes_(program_.nodes()), check_outputs_(program_.check_outputs()),
        debug_(debug) {
    program_.verify();
  }

  StepOutputs run(const StepInputs& in) override {
    check_inputs_(in);
    emulate::ConstantLookup data = [&in](const ExprNode* c) -> const Array& {
      auto it = in.data.find(c);
      return it != in.data.end() ? *it->second : c->constant->array;
    };
    // A run that does not check computes only what the other outputs need:
    // the nodes reachable from them without passing through a gated reduction.
    const bool check = run_checks(in.params);
    std::unordered_set<const StepNode*> needed;
    for (const auto& [name, s] : program_.outputs) {
      if (check || !check_outputs_.count(name)) needed.insert(s.get());
    }
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      const StepNode& n = **it;
      if (!needed.count(&n) || (!check && is_gated(n))) continue;
      for (const Step& a : n.args) needed.insert(a.get());
    }
    std::unordered_map<const StepNode*, Tensor> val;
    for (const Step& n : nodes_) {
      if (needed.count(n.get())) val[n.get()] = eval(*n, val, in, data);
    }
    StepOutputs out;
    for (const auto& [name, s] : program_.outputs) {
      if (!check && check_outputs_.count(name)) continue;
      const Tensor& t = val.at(s.get());
      if (t.shape.empty()) out.scalars[name] = t.data[0];
      else out.arrays[name] = t.to_array();
    }
    return out;
  }

 private:
  Tensor eval(const StepNode& n, const std::unordered_map<const StepNode*, Tensor>& val, const StepInputs& in,
              const emulate::ConstantLookup& data) {
    auto arg = [&](size_t i) -> const Tensor& { return val.at(n.args[i].get()); };
    auto scalar = [&](size_t i) { return arg(i).data[0]; };
    auto unary = [&](auto f) {
      Tensor t = arg(0);
      for (double& v : t.data) v = f(v);
      return t;
    };
    auto binary = [&](auto f) {
      Tensor t(n.shape);
      const Tensor &a = arg(0), &b = arg(1);
      for (size_t i = 0; i < t.size(); ++i) t.data[i] = f(a.at(i), b.at(i));
      return t;
    };
    auto rank0 = [](double v) {
      Tensor t(Shape{});
      t.data[0] = v;
      return t;
    };
    switch (n.kind) {
      case StepKind::Input: return Tensor::from(*in.buffers.at(n.name));
      case StepKind::Param: return rank0(n.name == kCheckParam ? (run_checks(in.params) ? 1.0 : 0.0) : in.params.at(n.name));
      case StepKind::Constant: return rank0(n.value);
      case StepKind::Data: return emulate::constant_tensor(n.expr.get(), data);
      case StepKind::Forward: {
        std::map<const ExprNode*, const Tensor*> vars;
        for (size_t i = 0; i < n.vars.size(); ++i) vars[n.vars[i].get()] = &arg(i);
        return emulate::forward(n.expr, vars, n.index != 0, data);
      }
      case StepKind::Adjoint: {
        auto res = emulate::adjoint(n.expr, arg(0), data, debug_);
        return std::move(res.at(n.vars[static_cast<size_t>(n.index)].get()));
      }
      case StepKind::Prox: return emulate::prox(*n.term, arg(0), scalar(1), data);
      case StepKind::Value: return rank0(emulate::value(*n.term, arg(0), data));
      case StepKind::CirculantSolve: {
        Tensor t = arg(0);
        fft::circulant_solve(data(n.expr.get()), t.shape, scalar(1), scalar(2), &t.data);
        return t;
      }
      case StepKind::Add: return binary([](double a, double b) { return a + b; });
      case StepKind::Sub: return binary([](double a, double b) { return a - b; });
      case StepKind::Mul: return binary([](double a, double b) { return a * b; });
      case StepKind::Div: return binary([](double a, double b) { return a / b; });
      case StepKind::Min: return binary([](double a, double b) { return std::min(a, b); });
      case StepKind::Max: return binary([](double a, double b) { return std::max(a, b); });
      case StepKind::Neg: return unary([](double v) { return -v; });
      case StepKind::Abs: return unary([](double v) { return std::fabs(v); });
      case StepKind::Sqrt: return unary([](double v) { return std::sqrt(v); });
      case StepKind::Sign: return unary([](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; });
      case StepKind::Axpby: {
        Tensor t(n.shape);
        double a = scalar(0), b = scalar(2);
        const Tensor &x = arg(1), &y = arg(3);
        for (size_t i = 0; i < t.size(); ++i) t.data[i] = a * x.at(i) + b * y.at(i);
        return t;
      }
      case StepKind::Fill: {
        Tensor t(n.shape);
        std::fill(t.data.begin(), t.data.end(), n.value);
        return t;
      }
      case StepKind::Sum: {
        double s = 0;
        for (double v : arg(0).data) s += v;
        return rank0(s);
      }
      case StepKind::SumSquares: {
        double s = 0;
        for (double v : arg(0).data) s += v * v;
        return rank0(s);
      }
      case StepKind::Dot: {
        double s = 0;
        const Tensor &a = arg(0), &b = arg(1);
        for (size_t i = 0; i < a.size(); ++i) s += a.data[i] * b.data[i];
        return rank0(s);
      }
      case StepKind::MaxAbs: {
        double s = 0;
        for (double v : arg(0).data) s = std::isnan(v) ? v : std::max(s, std::fabs(v));
        return rank0(s);
      }
    }
    internal_error << "unknown step kind";
    return Tensor();
  }

  StepProgram program_;
  StepInputCheck check_inputs_;
  std::vector<Step> nodes_;
  std::set<std::string> check_outputs_;
  emulate::EmulateDebug debug_;
};

class EmulateBackend : public Backend {
 public:
  explicit EmulateBackend(emulate::EmulateDebug debug) : debug_(debug) {}
  std::string name() const override { return "emulate"; }
  double epsilon() const override { return std::numeric_limits<double>::epsilon(); }
  std::unique_ptr<CompiledStep> compile(const StepProgram& program) override {
    return std::make_unique<EmulatedStep>(program, debug_);
  }

 private:
  emulate::EmulateDebug debug_;
};

}  // namespace

std::unique_ptr<Backend> make_emulate_backend(const emulate::EmulateDebug& debug) {
  return std::make_unique<EmulateBackend>(debug);
}

}  // namespace proxc::internal
