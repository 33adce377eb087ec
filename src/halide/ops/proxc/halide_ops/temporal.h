/// \file
/// proxc::halide_ops::Graph: temporal blocking, the default schedule of a program that unrolls several
/// iterations (`--fuse N`). Part of the Halide-op library (proxc/halide_ops.h includes every part).
///
/// Without it each unrolled iteration's state is computed at root: a pass through memory per
/// iteration, as N runs of one iteration would make. With it every value that would be at root is
/// computed per strip of rows of the outputs' one loop (compute_at the strip), over the strip and
/// the halo of rows its readers in later iterations need, so the N iterations run with each strip in
/// cache: the state is read once and written once per N iterations. Halide's bounds inference sizes
/// each value's halo; the stencils must be local (rows near their own, see lower.cpp), or a strip
/// would need the whole image. The strip is taller than kRowsPerTask: halos grow with N, and the
/// rows they recompute are a smaller part of a taller strip.
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline void Graph::temporal_blocking(int n) {
  if (record_) *record_ << "  g.temporal_blocking(" << n << ");\n";
  if (schedule_ != Schedule::Default || n < 2) return;
  // Rows per strip: the halo of a pc iteration on TV is about two rows on each side, so 16 rows
  // per iteration keep the recomputed rows under a quarter (bench/strip_fusion.cpp measured 16 rows
  // for 2 iterations per pass, and 4 per pass lost at 512² with strips of 16).
  strip_rows_ = std::min(16 * n, 64);
}

// Every output in one loop over strips of rows (the first output's, the others joined by
// compute_with), every value at root in the outputs' environment computed per strip of that
// loop. Only when the pipeline has no reductions (their row sums are loops of their own), no extern
// stage (it reads and writes whole buffers), and only pure values and outputs of at least two axes
// with as many rows; otherwise false, and nothing changes.
inline bool Graph::place_temporal() {
  if (strip_rows_ == kRowsPerTask || schedule_ != Schedule::Default || !partials_.empty()) return false;
  std::vector<Halide::Func> outs;
  std::vector<Halide::Internal::Function> roots;
  std::set<std::string> out_names;
  int rows = 0;  // the outputs' row extent (its slot, or its constant)
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Halide::Func& f = outputs_[k];
    if (merged_.count(static_cast<int>(k))) continue;
    const Ext& e = output_ext_[k];
    if (!f.defined() || f.is_extern() || f.num_update_definitions() != 0 || e.size() < 2 ||
        f.args().size() != e.size() || f.args().back().name() != "px_0" || (!outs.empty() && e[0] != rows)) {
      return false;
    }
    rows = e[0];
    outs.push_back(f);
    roots.push_back(f.function());
    out_names.insert(f.name());
  }
  if (outs.empty()) return false;
  // The values at root (materialized ones and strip candidates) that the outputs read.
  std::vector<Halide::Func> at_strip;
  for (const auto& [name, fn] : Halide::Internal::build_environment(roots)) {
    if (fn.has_extern_definition()) return false;
    if (out_names.count(name) || (!materialized_.count(name) && !strip_candidates_.count(name))) continue;
    if (!fn.updates().empty()) return false;
    at_strip.emplace_back(fn);
  }
  const Halide::Func lead = outs[0];
  const Halide::Var strip("px_0");  // the strip loop keeps the row variable's name (split_row_strips)
  for (size_t k = 1; k < outs.size(); ++k) {
    Halide::Func(outs[k]).compute_with(lead, strip);
    fused_.insert(outs[k].name());
    group_lead_[outs[k].name()] = lead.name();
  }
  fused_.insert(lead.name());
  std::set<std::string> moved;
  for (Halide::Func f : at_strip) {
    f.compute_at(lead, strip);
    moved.insert(f.name());
    row_tasks_.erase(f.name());
    auto c = strip_candidates_.find(f.name());
    if (c != strip_candidates_.end()) {
      const Val& v = c->second;
      schedule_vectors(f, v.vars, v.ext, v.small_inner, v.unroll_from, v.lanes > 0 ? v.lanes : kVectorLanes);
      strip_candidates_.erase(c);
    }
    // An array of a few values per pixel (gradient components: the innermost Halide dimension,
    // bounded and unrolled by schedule_vectors) is stored a plane per value in its strip buffer:
    // its vectors load and store without the shuffles of interleaved values.
    const std::vector<std::string> args = f.function().args();
    if (args.size() == 3) {
      for (const Halide::Internal::Bound& b : f.function().schedule().bounds()) {
        if (b.var != args[0] || !const_int(b.extent)) continue;
        f.reorder_storage({Halide::Var(args[1]), Halide::Var(args[2]), Halide::Var(args[0])});
        break;
      }
    }
  }
  // Only the outputs run in parallel strips; the values at a strip are computed in it.
  row_splits_.erase(std::remove_if(row_splits_.begin(), row_splits_.end(),
                                   [&](const auto& s) { return moved.count(s.first.name()) > 0; }),
                    row_splits_.end());
  return true;
}

}  // namespace proxc::halide_ops
