/// \file
/// proxc::halide_ops::Graph: reductions and circulant solves. Part of the Halide-op library
/// (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline Val Graph::reduce(const std::string& kind, const Val& a0, const Val& b0, const Val& gate) {
  RowSums row_sums;
  Val v = rec(reduced(kind, a0, b0, gate, &row_sums), "reduce", kind, a0, b0, gate);
  if (row_sums.partial.defined()) {
    partials_[v.id] = row_sums;
    partial_order_.push_back(v.id);
  }
  return v;
}

inline Val Graph::reduced(const std::string& kind, const Val& a0, const Val& b0, const Val& gate,
                          RowSums* row_sums) {
  if (kind != "sum" && kind != "sum_squares" && kind != "max_abs" && kind != "dot") {
    fail("reduce: unknown reduction " + kind);
  }
  // The reduced value of one element, and how values combine.
  // Sums of squares and maxima of |x| take their per-row partial values in
  // float (a max is exact in float; a sum of squares has no cancellation:
  // each lane of a row adds n/8 positive terms, relative error below
  // (n/8)·2⁻²⁴, 1.5e-5 for a 2048-wide row, about √(n/8)·2⁻²⁴ typically)
  // and combine rows in double: the convergence check's norms at the cost
  // of float arithmetic. (Entries beyond 1.8e19 in magnitude, whose squares
  // overflow float, make the sum inf: a state that large has diverged.)
  // Sums and dot products, which may cancel, stay in double throughout.
  // Kernels without doubles (GpuFloat) take every partial value in float: a
  // thread's sum over its block of 64 rows times the axes outside them (a
  // 1-D array: every 4096th element, so n/4096 terms), then each lane's
  // blocks (rows/64 terms); the host adds the lanes in double. Sums that
  // may cancel (sum, dot, values) lose digits in proportion to those counts
  // (float's 6e-8 each), which are small for images, not bounded in general.
  const bool float_partials = kind == "sum_squares" || kind == "max_abs" || schedule_ == Schedule::GpuFloat;
  auto element = [&](const Coords& i) {
    auto as_partial = [&](Halide::Expr v) { return float_partials ? Halide::cast<float>(v) : Halide::cast<double>(v); };
    Halide::Expr x = as_partial(call(a0, i));
    if (kind == "sum") return x;
    if (kind == "sum_squares") return x * x;
    if (kind == "max_abs") return Halide::abs(x);
    return x * as_partial(call(b0, i));
  };
  auto combine = [&](Halide::Expr acc, Halide::Expr v) {
    return kind == "max_abs" ? Halide::max(acc, v) : acc + v;
  };
  // Gated: the first extent is 0 when the gate is 0.
  Halide::Expr on = gate.defined() ? gate.f.value() != 0 : Halide::Expr();
  if (gpu() && a0.rank() > 0) {
    // Partial values on the device in two kernels whose threads read
    // neighbouring elements (coalesced), in float for sums of squares and
    // maxima as on the CPU and in double for sums that may cancel; the host
    // combines the last partial values in double.
    // The lane axis: the innermost one that is not short (its threads are
    // adjacent in memory; the short axes inside it are summed in each
    // thread), or axis 0 when every other is short.
    const int rank = a0.rank();
    int lane_axis = rank - 1;
    while (lane_axis > 0) {
      const std::optional<int64_t> e = const_int(a0.ext[static_cast<size_t>(lane_axis)]);
      if (!e || *e > 16) break;
      --lane_axis;
    }
    const size_t L = static_cast<size_t>(lane_axis);
    Halide::Var lane("px_lane"), blk("px_blk");
    Halide::Func partial(kind + "_partial" + std::to_string(counter_++));
    // The RDom's first dimension is its innermost loop: the short trailing
    // axes (the last first), then the block's rows, then the outer axes.
    Halide::Region ranges;
    for (size_t ax = a0.ext.size(); ax-- > L + 1;) ranges.push_back(Halide::Range(0, a0.ext[ax]));
    const int trailing = static_cast<int>(ranges.size());
    Halide::Expr kept;  // the positions a partial value sums, where they fall inside the array
    Halide::Expr lanes_extent;
    Coords i(static_cast<size_t>(rank));
    if (L == 0) {
      // Axis 0 with short axes inside it (a 1-D array): thread l sums the
      // elements l, l + kStride, l + 2·kStride, ... (one partial per thread).
      constexpr int kStride = 4096;
      ranges.push_back(Halide::Range(0, (a0.ext[0] + kStride - 1) / kStride));
      Halide::RDom r(ranges);
      Halide::Expr pos = r[trailing] * kStride + lane;
      kept = pos < a0.ext[0];
      // (Clamped for bounds inference, which does not read the predicate.)
      i[0] = Halide::min(pos, a0.ext[0] - 1);
      for (size_t ax = 1; ax < a0.ext.size(); ++ax) i[ax] = r[static_cast<int>(a0.ext.size() - 1 - ax)];
      r.where(kept);
      Halide::Expr e = element(i);
      partial(lane, blk) = kind == "max_abs" ? Halide::maximum(e) : Halide::sum(e);
      lanes_extent = Halide::min(a0.ext[0], kStride);
    } else {
      // Thread (l, b) sums lane l over rows b·kRows .. b·kRows + kRows − 1 of
      // the axis outside the lane axis, and over every outer axis.
      constexpr int kRows = 64;
      const size_t R = L - 1;
      ranges.push_back(Halide::Range(0, kRows));
      for (size_t ax = R; ax-- > 0;) ranges.push_back(Halide::Range(0, a0.ext[ax]));
      Halide::RDom r(ranges);
      Halide::Expr row = blk * kRows + r[trailing];
      kept = row < a0.ext[R];
      for (size_t ax = L + 1; ax < a0.ext.size(); ++ax) i[ax] = r[static_cast<int>(a0.ext.size() - 1 - ax)];
      i[L] = lane;
      i[R] = Halide::min(row, a0.ext[R] - 1);
      for (size_t ax = 0; ax < R; ++ax) i[ax] = r[trailing + static_cast<int>(R - ax)];
      r.where(kept);
      Halide::Expr e = element(i);
      partial(lane, blk) = kind == "max_abs" ? Halide::maximum(e) : Halide::sum(e);
      lanes_extent = a0.ext[L];
    }
    const Halide::Expr blocks =
        L == 0 ? Halide::Expr(1) : (a0.ext[L - 1] + 63) / 64;  // (kRows)
    partial.compute_root().gpu_tile(lane, blk, Halide::Var("px_lane_blk"), Halide::Var("px_blk_blk"),
                                    Halide::Var("px_lane_thr"), Halide::Var("px_blk_thr"), 64, 1,
                                    Halide::TailStrategy::GuardWithIf);
    gpu_scheduled_.insert(partial.name());
    // The blocks of each lane combined on the device (in double; GpuFloat: float), the lanes on the host.
    Halide::Func lanes(kind + "_lanes" + std::to_string(counter_++));
    Halide::RDom rb(0, blocks);
    Halide::Expr pb = partial(lane, rb.x);
    if (schedule_ != Schedule::GpuFloat) pb = Halide::cast<double>(pb);
    lanes(lane) = kind == "max_abs" ? Halide::maximum(pb) : Halide::sum(pb);
    lanes.compute_root().gpu_tile(lane, Halide::Var("px_lane_blk"), Halide::Var("px_lane_thr"), 64,
                                  Halide::TailStrategy::GuardWithIf);
    gpu_scheduled_.insert(lanes.name());
    Halide::Expr n_lanes = lanes_extent;
    if (on.defined()) n_lanes = Halide::select(on, n_lanes, 0);
    Halide::RDom rr(0, n_lanes);
    Halide::Expr p = Halide::cast<double>(lanes(rr.x));
    Halide::Expr red = kind == "max_abs" ? Halide::maximum(p) : Halide::sum(p);
    // (An empty maximum is the lowest double; gated off, nothing reads it.)
    return define0(kind, red);
  }
  if (schedule_ != Schedule::Default) {
    // One plain reduction: an autoscheduler splits it as it sees fit.
    std::vector<Halide::Expr> ext = a0.ext;
    if (on.defined() && !ext.empty()) ext[0] = Halide::select(on, ext[0], 0);
    Halide::RDom r = full_domain(ext);
    Coords i = domain_point(r, a0.ext.size());
    Halide::Expr e = Halide::cast<double>(element(i));
    Halide::Expr red = kind == "max_abs" ? Halide::maximum(e) : Halide::sum(e);
    return define0(kind, red);
  }
  return parallel_reduce(kind, a0, element, combine, on, row_sums);
}

inline Val Graph::circulant_solve(const Val& rhs0, int spectrum, int kr, const Val& a0, const Val& c0,
                                  const Ext& ext) {
  Val rhs = rhs0;
  schedule_at_root(rhs);
  // An extern stage reads a buffer of its own (without a schedule too: --emit c).
  if (rhs.is_buffer || schedule_ != Schedule::Default) rhs.f.compute_root();
  auto it = spectra_.find(spectrum);
  if (it == spectra_.end()) {
    it = spectra_
             .emplace(spectrum,
                      Halide::ImageParam(Halide::Float(32), kr, "spectrum" + std::to_string(spectrum)))
             .first;
  }
  spectrum_ext_[spectrum] = Ext(ext.begin(), ext.begin() + kr);
  Val out;
  out.ext = extents(ext);
  if (gpu() && device_fft_ != 0) {
    // The solve's filter on the device: the r2c spectrum times
    // 1/(n·(a·|otf|² + c)), as the host's stage computes it in float.
    Halide::ImageParam s2 = it->second;
    Halide::Expr a = Halide::cast<float>(scalar_definition(a0)), c = Halide::cast<float>(scalar_definition(c0));
    out.f = device_fft_filter(rhs, kr, "solve",
                              [&](Halide::Func spec, const std::vector<Halide::Var>& v, Halide::Expr inv_n) {
                                std::vector<Halide::Expr> at(v.end() - kr, v.end());
                                return spec(std::vector<Halide::Expr>(v.begin(), v.end())) *
                                       (inv_n / (a * s2(at) + c));
                              });
    return rec(out, "circulant_solve", rhs0, spectrum, kr, a0, c0, ext);
  }
  out.f = Halide::Func("solve" + std::to_string(counter_++));
  // a and c reach the extern stage as Exprs: their definitions, which must
  // not call Funcs (an extern's Expr arguments cannot).
  std::vector<Halide::ExternFuncArgument> args = {rhs.f, it->second, scalar_definition(a0),
                                                  scalar_definition(c0), Halide::Expr(kr)};
  out.f.define_extern("proxc_circulant_solve", args, Halide::Float(32), static_cast<int>(ext.size()));
  out.f.compute_root();
  return rec(out, "circulant_solve", rhs0, spectrum, kr, a0, c0, ext);
}

// x's r2c transform over its first kr numpy axes, `filter` of the half
// spectrum as a kernel (given the spectrum as a Func of (re/im, Halide's
// dimensions), the point's coordinates v (v[0] its re/im index) and 1/n, the
// inverse transform's scale in float), then the c2r transform.
template <typename Filter>
inline Halide::Func Graph::device_fft_filter(const Val& x, int kr, const std::string& name, Filter filter) {
  const int rank = x.rank();
  const Halide::DeviceAPI api = device_fft_ == 1 ? Halide::DeviceAPI::OpenCL : Halide::DeviceAPI::CUDA;
  // The half spectrum: (re, im), then x's dimensions with the innermost
  // spatial one (numpy axis kr − 1) halved.
  Halide::Func spec(name + "_spectrum" + std::to_string(counter_++));
  std::vector<Halide::ExternFuncArgument> to = {x.f, Halide::Expr(kr), x.ext[static_cast<size_t>(kr - 1)],
                                                Halide::Expr(device_fft_)};
  spec.define_extern("proxc_fft_r2c_device", to, Halide::Float(32), rank + 1, Halide::NameMangling::C, api);
  spec.compute_root();
  std::vector<Halide::Var> v;
  v.emplace_back("px_reim");
  for (int d = 0; d < rank; ++d) v.emplace_back("px_" + std::to_string(rank - 1 - d));  // numpy axis of Halide dim d
  Halide::Expr n = Halide::cast<float>(x.ext[0]);
  for (int i = 1; i < kr; ++i) n = n * Halide::cast<float>(x.ext[static_cast<size_t>(i)]);
  Halide::Func filtered(name + "_filter" + std::to_string(counter_++));
  filtered(v) = filter(spec, v, 1.0f / n);
  // One thread per spectral point (both halves of a complex number and
  // every channel in it), in 16×16 tiles of the spatial dimensions.
  const int sp = rank - kr + 1;  // the spectrum's innermost spatial dimension
  const Halide::TailStrategy guard = Halide::TailStrategy::GuardWithIf;
  filtered.compute_root().bound(v[0], 0, 2).unroll(v[0]);
  if (kr >= 2) {
    Halide::Var xo("px_fft_x_blk"), xi("px_fft_x_thr"), yo("px_fft_y_blk"), yi("px_fft_y_thr");
    filtered.gpu_tile(v[static_cast<size_t>(sp)], v[static_cast<size_t>(sp + 1)], xo, yo, xi, yi, 16, 16, guard);
  } else {
    filtered.gpu_tile(v[static_cast<size_t>(sp)], Halide::Var("px_fft_x_blk"), Halide::Var("px_fft_x_thr"), 64,
                      guard);
  }
  gpu_scheduled_.insert(filtered.name());
  Halide::Func out(name + std::to_string(counter_++));
  std::vector<Halide::ExternFuncArgument> back = {filtered, Halide::Expr(kr), Halide::Expr(device_fft_)};
  out.define_extern("proxc_fft_c2r_device", back, Halide::Float(32), rank, Halide::NameMangling::C, api);
  out.compute_root();
  return out;
}

template <typename Element, typename Combine>
inline Val Graph::parallel_reduce(const std::string& kind, const Val& a, Element element, Combine combine,
                                  Halide::Expr on, RowSums* row_sums) {
  constexpr int kLanes = kVectorLanes;
  constexpr int kChunk = 16384;
  const int rank = a.rank();
  if (rank == 0) {
    Halide::Expr e = Halide::cast<double>(element({}));
    return define0(kind, on.defined() ? Halide::select(on, e, Halide::cast<double>(0)) : e);
  }
  int lane_axis = rank - 1, folded = 1;
  while (lane_axis > 0) {
    const std::optional<int64_t> e = const_int(a.ext[static_cast<size_t>(lane_axis)]);
    if (!e || folded * *e > 16) break;
    folded *= static_cast<int>(*e);
    --lane_axis;
  }
  const bool chunked = lane_axis == 0;  // 1-D, or only axis 0 is long: chunks of it are the rows
  // The row variable is named as the outputs' rows are (px_0): compute_with
  // matches loops by name (fuse_partials_into_outputs).
  Halide::Var lane("lane"), row("px_0");
  Halide::Expr n = a.ext[static_cast<size_t>(lane_axis)];
  Halide::Expr rows = chunked ? n / kChunk : a.ext[0];
  // With every extent at least kLanes (assume_min_extent), a row's last,
  // partial group of lanes is taken in the vector loop: that group starts
  // kLanes before the row's end and counts only its lanes past the whole
  // groups (its start marked likely to be the whole groups': Halide then
  // partitions the loop, and the whole groups' loop has neither the min nor
  // the mask). Otherwise a scalar tail loop takes them.
  const bool shifted = !chunked && min_extent_ >= kLanes;
  Halide::Expr groups = chunked   ? Halide::Expr(kChunk / kLanes)
                        : shifted ? (n + kLanes - 1) / kLanes
                                  : n / kLanes;
  if (on.defined()) rows = Halide::select(on, rows, 0);  // gated off: no rows
  // The value at lane-axis position `pos` (and the other axes at i).
  auto value_at = [&](Coords i, Halide::Expr pos) {
    i[static_cast<size_t>(lane_axis)] = pos;
    Halide::Expr value;
    for (int f = 0; f < folded; ++f) {
      int rest = f;
      for (int ax = rank - 1; ax > lane_axis; --ax) {
        const int e = static_cast<int>(*const_int(a.ext[static_cast<size_t>(ax)]));
        i[static_cast<size_t>(ax)] = rest % e;
        rest /= e;
      }
      Halide::Expr v = element(i);
      value = value.defined() ? combine(value, v) : v;
    }
    return value;
  };
  // Coordinates of the middle axes 1 .. lane_axis-1 from RDom dimensions first..
  auto middle = [&](const Halide::RDom& r, int first) {
    Coords i(static_cast<size_t>(rank));
    if (!chunked) i[0] = row;
    for (int ax = 1; ax < lane_axis; ++ax) i[static_cast<size_t>(ax)] = r[first + lane_axis - 1 - ax];
    return i;
  };
  auto middle_ranges = [&](Halide::Region* ranges) {
    for (int ax = lane_axis - 1; ax >= 1; --ax)
      ranges->push_back(Halide::Range(0, a.ext[static_cast<size_t>(ax)]));
  };
  Halide::Region main_ranges = {Halide::Range(0, groups)};
  middle_ranges(&main_ranges);
  Halide::RDom r = shared_domain(main_ranges);
  Halide::Expr pos = chunked   ? row * kChunk + r[0] * kLanes + lane
                     : shifted ? Halide::min(Halide::likely(r[0] * kLanes), n - kLanes) + lane
                               : r[0] * kLanes + lane;
  Halide::Expr value = value_at(middle(r, 1), pos);
  // A float element (see reduce) is summed in float along a row's lane,
  // but a chunk's lanes have 2048 terms each: those sum in double.
  if (chunked && kind != "max_abs") value = Halide::cast<double>(value);
  const Halide::Expr zero = Halide::cast(value.type(), 0);
  if (shifted) value = Halide::select(pos >= r[0] * kLanes, value, zero);
  Halide::Func partial(kind + "_partial" + std::to_string(counter_++));
  partial(lane, row) = zero;
  partial(lane, row) = combine(partial(lane, row), value);
  partial.compute_root().vectorize(lane, kLanes);
  // The vector lanes' loop is named alike in every partial: compute_with
  // fuses two stages' loops only where their names match (fuse_reductions).
  Halide::Var lane_v("lane_v");
  partial.update().parallel(row).split(lane, lane, lane_v, kLanes).vectorize(lane_v);
  if (!chunked) *row_sums = {partial, r, a.ext[0], on.defined()};  // fuse_reductions may share its loops
  Halide::RDom all(0, kLanes, 0, rows);
  Halide::Expr p = Halide::cast<double>(partial(all.x, all.y));
  Halide::Expr total = kind == "max_abs" ? Halide::maximum(p) : Halide::sum(p);
  if (shifted) return define0(kind, total);
  // The rest: n mod kLanes positions per row, or the elements after the
  // last whole chunk.
  Halide::Expr done = chunked ? rows * kChunk : groups * kLanes;
  Halide::Region tail_ranges = {Halide::Range(0, on.defined() ? Halide::select(on, n - done, 0) : n - done)};
  middle_ranges(&tail_ranges);
  Halide::RDom t(tail_ranges);
  Halide::Func tail(kind + "_tail" + std::to_string(counter_++));
  tail(row) = Halide::cast<double>(0);
  tail(row) = combine(tail(row), Halide::cast<double>(value_at(middle(t, 1), done + t[0])));
  tail.compute_root();
  if (!chunked) tail.update().parallel(row);
  Halide::Expr rest;
  if (chunked) {
    rest = tail(0);
  } else {
    Halide::RDom tr(0, rows);
    rest = kind == "max_abs" ? Halide::maximum(tail(tr)) : Halide::sum(tail(tr));
  }
  return define0(kind, combine(total, rest));
}

inline Halide::RDom Graph::shared_domain(const Halide::Region& ranges) {
  auto same = [](const Halide::Region& a, const Halide::Region& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Halide::Internal::equal(a[i].min, b[i].min) || !Halide::Internal::equal(a[i].extent, b[i].extent))
        return false;
    }
    return true;
  };
  for (const auto& [region, r] : domains_) {
    if (same(region, ranges)) return r;
  }
  domains_.push_back({ranges, Halide::RDom(ranges)});
  return domains_.back().second;
}

inline Halide::RDom Graph::full_domain(const std::vector<Halide::Expr>& ext) {
  Halide::Region ranges;
  for (auto it = ext.rbegin(); it != ext.rend(); ++it) ranges.push_back(Halide::Range(0, *it));
  return Halide::RDom(ranges);
}

inline Graph::Coords Graph::domain_point(const Halide::RDom& r, size_t rank) {
  Coords i(rank);
  for (size_t a = 0; a < rank; ++a) i[a] = r[static_cast<int>(rank - 1 - a)];
  return i;
}

}  // namespace proxc::halide_ops
