/// \file
/// proxc::halide_ops::Graph: outputs, the default schedule's fusion of outputs and reductions,
/// autoscheduling, the pipeline and its arguments. Part of the Halide-op library (proxc/halide_ops.h includes
/// every part).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "proxc/halide_ops/float_kernels.h"
#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline Halide::Func Graph::output(const std::string& name, const Val& v, const Ext& ext) {
  if (record_) *record_ << "  g.output(" << args(name, v, ext) << ");\n";
  // A value computed at root anyway is the output itself (its users read
  // the output buffer): no copy. So is a host extern stage's (the circulant
  // solve writes x⁺ into the output buffer itself).
  const bool host_extern = schedule_ == Schedule::Default && !gpu() && v.f.defined() && v.f.is_extern();
  if ((schedule_ == Schedule::Default || gpu()) && !v.is_buffer &&
      ((!v.vars.empty() && materialized_.count(v.f.name())) || host_extern) && strip_rows_ == kRowsPerTask &&
      output_funcs_.insert(v.f.name()).second) {
    outputs_.push_back(v.f);
    output_ext_.push_back(ext);
    return v.f;
  }
  Halide::Func f(name + "_out");
  std::vector<Halide::Var> vars = make_vars(v.rank());
  Coords c(vars.begin(), vars.end());
  if (vars.empty())
    f() = call(v, {});
  else
    f(reversed(c)) = call(v, c);
  if (schedule_ == Schedule::Default) schedule_root(f, vars, v.ext, v.small_inner);
  outputs_.push_back(f);
  output_ext_.push_back(ext);
  return f;
}

inline bool Graph::fuse_outputs(int a, int b) {
  // Outputs are rows-first: px_0 is the outermost loop of every output at root.
  if (record_) *record_ << "  g.fuse_outputs(" << args(a, b) << ");\n";
  if (schedule_ != Schedule::Default || strip_rows_ != kRowsPerTask) return false;
  const size_t ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
  if (ia >= outputs_.size() || ib >= outputs_.size() || ia == ib)
    fail("fuse_outputs: no such pair of outputs");
  if (merged_.count(a) || merged_.count(b)) return false;
  Halide::Func fa = outputs_[ia], fb = outputs_[ib];
  auto fusable = [&](const Halide::Func& f, const Ext& ext) {
    return ext.size() >= 2 && f.defined() && !f.is_extern() && f.num_update_definitions() == 0 &&
           f.outputs() == 1 && f.args().size() == ext.size() && f.args().back().name() == "px_0";
  };
  // (Their rows are run-time extents: the caller knows they are equal;
  // Halide would run the union of both ranges, each stage within its own.)
  if (!fusable(fa, output_ext_[ia]) || !fusable(fb, output_ext_[ib])) return false;
  fb.compute_with(fa, Halide::Var("px_0"));
  fused_.insert(fa.name());
  fused_.insert(fb.name());
  group_lead_[fb.name()] = fa.name();
  return true;
}

inline std::vector<Halide::Internal::Function> Graph::direct_calls(const std::vector<Halide::Expr>& exprs) {
  struct Calls : Halide::Internal::IRVisitor {
    std::vector<Halide::Internal::Function> funcs;
    using Halide::Internal::IRVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (op->call_type == Halide::Internal::Call::Halide && op->func.defined()) funcs.emplace_back(op->func);
      Halide::Internal::IRVisitor::visit(op);
    }
  } calls;
  for (const Halide::Expr& e : exprs) e.accept(&calls);
  return calls.funcs;
}

inline std::vector<Halide::Expr> Graph::definition_exprs(const Halide::Internal::Function& f) {
  std::vector<Halide::Expr> exprs = f.definition().values();
  for (const Halide::Internal::Definition& u : f.updates()) {
    exprs.insert(exprs.end(), u.values().begin(), u.values().end());
    exprs.insert(exprs.end(), u.args().begin(), u.args().end());
  }
  return exprs;
}

inline bool Graph::any_call_through(const std::vector<Halide::Expr>& exprs, const FunctionTest& inlined,
                                    const FunctionTest& visit) {
  std::set<std::string> seen;
  std::function<bool(const std::vector<Halide::Expr>&)> go = [&](const std::vector<Halide::Expr>& es) {
    for (const Halide::Internal::Function& g : direct_calls(es)) {
      if (!seen.insert(g.name()).second) continue;
      if (visit(g)) return true;
      if (inlined(g) && go(definition_exprs(g))) return true;
    }
    return false;
  };
  return go(exprs);
}

inline bool Graph::calls_through_inlined(const Halide::Expr& e, const std::string& name) const {
  return any_call_through(
      {e}, [&](const Halide::Internal::Function& g) { return !computed_at_root(g); },
      [&](const Halide::Internal::Function& g) { return g.name() == name; });
}

inline bool Graph::pair_outputs(int a, int b) {
  if (record_) *record_ << "  g.pair_outputs(" << args(a, b) << ");\n";
  if (schedule_ != Schedule::Default || strip_rows_ != kRowsPerTask) return false;
  const size_t ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
  if (ib != ia + 1 || ib >= outputs_.size() || merged_.count(a) || merged_.count(b)) return false;
  Halide::Func fa = outputs_[ia], fb = outputs_[ib];
  auto pure = [](const Halide::Func& f) {
    return f.defined() && !f.is_extern() && f.num_update_definitions() == 0 && f.outputs() == 1 &&
           f.args().size() >= 2;
  };
  // (Run-time extents are the caller's to compare: each is a parameter of its own.)
  const Ext &ea = output_ext_[ia], &eb = output_ext_[ib];
  if (!output_funcs_.count(fa.name()) || !pure(fa) || !pure(fb) || ea.size() != fa.args().size() ||
      eb.size() != ea.size()) {
    return false;
  }
  for (size_t i = 0; i < ea.size(); ++i) {
    if ((ea[i] < 0 || eb[i] < 0) && ea[i] != eb[i]) return false;  // compile-time extents differ
  }
  const std::vector<Halide::Var> va = fa.args(), vb = fb.args();
  if (va.size() != vb.size()) return false;
  for (size_t i = 0; i < va.size(); ++i) {
    if (va[i].name() != vb[i].name()) return false;
  }
  // b's definition with its reads of a (at its own position) replaced by a's definition.
  struct Substitute : Halide::Internal::IRMutator {
    std::string name;
    std::vector<Halide::Var> vars;
    Halide::Expr value;
    bool pointwise = true;
    int replaced = 0;
    using Halide::Internal::IRMutator::visit;
    Halide::Expr visit(const Halide::Internal::Call* op) override {
      if (op->call_type != Halide::Internal::Call::Halide || op->name != name) return IRMutator::visit(op);
      for (size_t i = 0; i < op->args.size(); ++i) {
        const auto* v = op->args[i].as<Halide::Internal::Variable>();
        pointwise = pointwise && v && v->name == vars[i].name();
      }
      ++replaced;
      return value;
    }
  } sub;
  sub.name = fa.name();
  sub.vars = va;
  sub.value = fa.value();
  Halide::Expr vb_value = sub.mutate(fb.value());
  if (!sub.pointwise || sub.replaced == 0 || calls_through_inlined(vb_value, fa.name())) return false;
  Halide::Func t(fa.name() + "_and_" + fb.name());
  t(va) = Halide::Tuple(fa.value(), vb_value);
  std::vector<Halide::Var> numpy(va.rbegin(), va.rend());
  schedule_root(t, numpy, extents(output_ext_[ia]), false);
  outputs_[ia] = t;
  merged_.insert(b);
  return true;
}

inline bool Graph::fuse_reductions(const Val& a, const Val& b) {
  if (record_) *record_ << "  g.fuse_reductions(" << args(a, b) << ");\n";
  if (schedule_ != Schedule::Default) return false;
  auto pa = partials_.find(a.id), pb = partials_.find(b.id);
  if (pa == partials_.end() || pb == partials_.end() || a.id == b.id) return false;
  // Applied by pipeline() (fuse_partials), unless one of them is computed
  // in an output's loop (fuse_partials_into_outputs; Halide would replace
  // one compute_with by the other, with a warning).
  if (strips_split_) fail("fuse_reductions: called after pipeline()");
  reduction_partner_[pb->second.partial.name()] = pa->second.partial.name();
  return true;
}

inline void Graph::set_estimates(const std::vector<int64_t>& extent_values,
                                 const std::vector<double>& scalar_values) {
  auto value = [&](int slot) -> int {
    if (slot < 0) return -slot;
    if (static_cast<size_t>(slot) >= extent_values.size())
      fail("set_estimates: no value for extent slot " + std::to_string(slot));
    return static_cast<int>(extent_values[static_cast<size_t>(slot)]);
  };
  auto region = [&](const Ext& e) {
    Halide::Region r;  // Halide order: innermost first
    for (auto it = e.rbegin(); it != e.rend(); ++it) r.push_back(Halide::Range(0, value(*it)));
    return r;
  };
  for (auto& [name, p] : inputs_) p.set_estimates(region(buffer_ext_.at(p.name())));
  for (auto& [i, p] : data_) p.set_estimates(region(buffer_ext_.at(p.name())));
  for (auto& [i, p] : spectra_) {
    Halide::Region r = region(spectrum_ext_.at(i));
    r[0] = Halide::Range(0, value(spectrum_ext_.at(i).back()) / 2 + 1);
    p.set_estimates(r);
  }
  for (auto& [i, p] : otfs_) {
    Halide::Region r = region(otf_ext_.at(i));
    r[0] = Halide::Range(0, value(otf_ext_.at(i).back()) / 2 + 1);
    r.insert(r.begin(), Halide::Range(0, 2));
    p.set_estimates(r);
  }
  for (auto& [i, p] : params_) p.set_estimate(1.0);
  for (auto& [i, p] : scalars_) {
    double v = static_cast<size_t>(i) < scalar_values.size() ? scalar_values[static_cast<size_t>(i)] : 1.0;
    p.set_estimate(std::isfinite(v) ? static_cast<float>(v) : 1.0f);
  }
  for (auto& [i, p] : extents_) p.set_estimate(value(i));
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (!output_ext_[k].empty()) outputs_[k].set_estimates(region(output_ext_[k]));
  }
}

inline Halide::AutoSchedulerResults Graph::auto_schedule(const std::string& plugin, const std::string& name,
                                                         const Halide::Target& t) {
  Halide::load_plugin(plugin);
  Halide::Pipeline p = pipeline();
#if HALIDE_VERSION_MAJOR >= 15
  // Halide 15 on: the autoscheduler's options are parameters, not the
  // environment. The beam searches (Adams2019, Anderson2021) take minutes per
  // pipeline at their default beam; greedy (beam 1) unless HL_BEAM_SIZE says.
  std::map<std::string, std::string> extra;
  if (name == "Adams2019" || name == "Anderson2021") {
    const char* beam = std::getenv("HL_BEAM_SIZE");
    extra["beam_size"] = beam && *beam ? beam : "1";
  }
  return p.apply_autoscheduler(t, Halide::AutoschedulerParams(name, extra));
#else
  return p.auto_schedule(name, t, Halide::MachineParams::generic());
#endif
}

inline void Graph::device_fft(int api) {
  if (record_) *record_ << "  g.device_fft(" << api << ");\n";
  if (api < 0 || api > 2) fail("device_fft: api 0 (none), 1 (OpenCL) or 2 (CUDA)");
  device_fft_ = api;
}

inline void Graph::staged_taps(int n) {
  if (record_) *record_ << "  g.staged_taps(" << n << ");\n";
  staged_taps_ = n;
}

inline Halide::Pipeline Graph::pipeline() {
  if (!place_temporal()) strip_rows_ = kRowsPerTask;
  place_strip_candidates();
  fuse_partials_into_outputs();
  split_partial_rows();
  fuse_partials();
  split_row_strips();
  std::vector<Halide::Func> funcs;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (merged_.count(static_cast<int>(k))) continue;
    funcs.push_back(outputs_[k]);
    for (Halide::OutputImageParam b : funcs.back().output_buffers()) dense_strides(b, output_ext_[k]);
  }
  if (gpu()) schedule_gpu(funcs);
  Halide::Pipeline p(funcs);
  if (schedule_ == Schedule::GpuFloat) p.add_custom_lowering_pass(new DemoteKernelDoubles);
  return p;
}

inline void Graph::schedule_gpu(const std::vector<Halide::Func>& outs) {
  std::vector<Halide::Internal::Function> roots;
  std::set<std::string> out_names;
  for (const Halide::Func& f : outs) {
    roots.push_back(f.function());
    out_names.insert(f.name());
  }
  // Short axes: compile-time extents up to this stay inside a thread.
  constexpr int64_t kShort = 16;
  const std::map<std::string, Halide::Internal::Function> env = Halide::Internal::build_environment(roots);
  // At root: the outputs, the values materialized_ holds, and what an extern stage reads.
  std::set<std::string> at_root = out_names;
  at_root.insert(materialized_.begin(), materialized_.end());
  for (const auto& [name, fn] : env) {
    if (!fn.has_extern_definition()) continue;
    for (const Halide::ExternFuncArgument& a : fn.extern_arguments()) {
      if (a.is_func()) at_root.insert(Halide::Internal::Function(a.func).name());
    }
  }
  for (const auto& [name, fn] : env) {
    if (fn.has_extern_definition() || fn.dimensions() == 0 || gpu_scheduled_.count(name)) continue;
    if (!at_root.count(name)) continue;  // inlined into its readers' kernels
    if (!gpu_scheduled_.insert(name).second) continue;
    const int dims = fn.dimensions();
    // Halide's dimension d is numpy axis dims-1-d; without recorded extents every axis counts as long.
    auto long_axis = [&](int d) {
      auto it = ext_of_.find(name);
      if (it == ext_of_.end() || static_cast<int>(it->second.size()) != dims) return true;
      const std::optional<int64_t> e = const_int(it->second[static_cast<size_t>(dims - 1 - d)]);
      return !e || *e > kShort;
    };
    std::vector<int> tiled;
    for (int d = 0; d < dims && tiled.size() < 2; ++d) {
      if (long_axis(d)) tiled.push_back(d);
    }
    if (tiled.empty()) continue;  // a small array: computed on the host
    Halide::Func f(fn);
    const std::vector<std::string> pure = fn.args();
    auto tile = [&](Halide::Stage s) {
      const Halide::TailStrategy guard = Halide::TailStrategy::GuardWithIf;
      Halide::Var x(pure[static_cast<size_t>(tiled[0])]), xo(x.name() + "_blk"), xi(x.name() + "_thr");
      if (tiled.size() == 1) {
        s.gpu_tile(x, xo, xi, 64, guard);
        return;
      }
      Halide::Var y(pure[static_cast<size_t>(tiled[1])]), yo(y.name() + "_blk"), yi(y.name() + "_thr");
      s.gpu_tile(x, y, xo, yo, xi, yi, 16, 16, guard);
    };
    tile(f);
    auto staged = staged_for_.find(name);
    if (staged != staged_for_.end() && tiled.size() == 2 && f.num_update_definitions() == 0) {
      // The operand's tile for this block (16×16 outputs and the kernel's
      // overhang) copied into shared memory by the block's 16×16 threads,
      // each copying the elements 16 apart from its own; the taps then read
      // it there. Halide sizes the allocation per launch.
      Halide::Func s = staged->second;
      const std::vector<std::string> sargs = s.function().args();
      Halide::Var sx(sargs[static_cast<size_t>(tiled[0])]), sy(sargs[static_cast<size_t>(tiled[1])]);
      Halide::Var sxo(sx.name() + "_stage"), syo(sy.name() + "_stage"), sxi(sx.name() + "_stage_thr"),
          syi(sy.name() + "_stage_thr");
      s.compute_at(f, Halide::Var(pure[static_cast<size_t>(tiled[0])] + "_blk"))
          .store_in(Halide::MemoryType::GPUShared)
          .tile(sx, sy, sxo, syo, sxi, syi, 16, 16, Halide::TailStrategy::GuardWithIf)
          .gpu_threads(sxi, syi);
      gpu_scheduled_.insert(s.name());
    }
    for (int u = 0; u < f.num_update_definitions(); ++u) {
      // Only an update that writes each point at its own coordinates runs on the device.
      const std::vector<Halide::Expr>& args = fn.update(u).args();
      bool pointwise = true;
      for (int d : tiled) {
        const auto* v = args[static_cast<size_t>(d)].as<Halide::Internal::Variable>();
        pointwise = pointwise && v && v->name == pure[static_cast<size_t>(d)];
      }
      if (pointwise) {
        tile(f.update(u));
      } else {
        f.update(u).unscheduled();  // on the host, as meant (Halide warns of an update left unscheduled)
      }
    }
  }
}

inline void Graph::dense_strides(Halide::OutputImageParam b, const Ext& ext) {
  const int rank = static_cast<int>(ext.size());
  int stride = 1;
  for (int d = 0; d + 1 < rank; ++d) {  // Halide's dimensions, innermost first
    const int e = ext[static_cast<size_t>(rank - 1 - d)];
    if (e >= 0) break;  // a run-time extent: the strides outside it are run-time values
    stride *= -e;
    b.dim(d + 1).set_stride(stride);
  }
}

inline std::vector<Halide::Argument> Graph::arguments() const {
  std::vector<Halide::Argument> a;
  for (const auto& [n, p] : inputs_) a.push_back(p);
  for (const auto& [n, p] : params_) a.push_back(p);
  for (const auto& [i, p] : data_) a.push_back(p);
  for (const auto& [i, p] : spectra_) a.push_back(p);
  for (const auto& [i, p] : otfs_) a.push_back(p);
  for (const auto& [i, p] : scalars_) a.push_back(p);
  for (const auto& [i, p] : extents_) a.push_back(p);
  return a;
}

inline int Graph::generate(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR FUNCTION_NAME [HALIDE_TARGET]\n", argv[0]);
    return 2;
  }
  Halide::Target t = Halide::get_host_target();
  if (argc == 4 && std::string(argv[3]) != "host") {
    if (!Halide::Target::validate_target_string(argv[3])) {
      std::fprintf(stderr, "%s: '%s' is not a Halide target string\n", argv[0], argv[3]);
      return 2;
    }
    t = Halide::Target(argv[3]);
  }
  t = with_default_features(t);
  if (gpu()) {
    // The GPU schedule's kernels read the check's doubles: OpenCL needs
    // cl_doubles. GpuFloat's have none: cl_doubles is not added.
    if (!t.has_gpu_feature()) {
      std::fprintf(stderr, "%s: this generator builds a GPU schedule: give a GPU target (host-cuda, host-opencl)\n",
                   argv[0]);
      return 2;
    }
    if (schedule_ == Schedule::Gpu && t.has_feature(Halide::Target::OpenCL)) t.set_feature(Halide::Target::CLDoubles);
  }
  std::error_code ec;
  std::filesystem::create_directories(argv[1], ec);  // OUT_DIR, made when missing
  if (ec) {
    std::fprintf(stderr, "%s: cannot create the folder '%s': %s\n", argv[0], argv[1], ec.message().c_str());
    return 2;
  }
  try {
    if (!autoscheduler_.first.empty()) auto_schedule(autoscheduler_.first, autoscheduler_.second, t);
    pipeline().compile_to_static_library(std::string(argv[1]) + "/" + argv[2], arguments(), argv[2], t);
  } catch (const Halide::Error& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  std::printf("wrote %s/%s.a and %s/%s.h\n", argv[1], argv[2], argv[1], argv[2]);
  return 0;
}

}  // namespace proxc::halide_ops
