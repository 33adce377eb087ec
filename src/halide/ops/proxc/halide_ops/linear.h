/// \file
/// proxc::halide_ops::Graph: the linear operators and their adjoints. Part of the Halide-op library
/// (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

/// Coordinates of flat index i in a C-order array of extents ext; callers
/// guarantee 0 <= i < the product of ext (< 2^31). A division by a run-time extent is a double division and a
/// floor, which vectorizes (an int32 vector division by a run-time value is
/// eight scalar divisions); it is exact: for i = qn + r (0 <= r < n) the
/// quotient i/n lies within [q, q + 1 - 1/n], and since (q + 1)n <= i + n <
/// 2^32 < 2^53, 1/n is more than half an ulp of q + 1, so the rounded quotient
/// is at least q and below q + 1. A compile-time extent keeps the integer
/// division (a multiply and shifts). Each coordinate is clamped to its
/// axis, which changes no value of an i in range but tells Halide's bounds
/// inference the region read (from i - qn alone it would infer
/// [-(max q)n, max i]).
/// With `integer_division` (kernels without doubles) a run-time extent divides
/// as integers.
inline std::vector<Halide::Expr> unravel(Halide::Expr i, const std::vector<Halide::Expr>& ext,
                                         bool integer_division = false) {
  std::vector<Halide::Expr> c(ext.size());
  for (size_t a = ext.size(); a-- > 0;) {
    if (a == 0) {
      c[a] = Halide::clamp(i, 0, ext[a] - 1);  // what is left: below ext[0]
      break;
    }
    Halide::Expr q =
        Halide::Internal::is_const(ext[a]) || integer_division
            ? i / ext[a]
            : Halide::cast<int>(Halide::floor(Halide::cast<double>(i) / Halide::cast<double>(ext[a])));
    c[a] = Halide::clamp(i - q * ext[a], 0, ext[a] - 1);
    i = q;
  }
  return c;
}

inline Val Graph::grad(const Val& x0, int d, const Ext& ext) {
  Val x = stencil(x0, true);
  Val v = define("grad", extents(ext), [&](const Coords& c) {
    Halide::Expr out = 0.0f;
    for (int ax = d - 1; ax >= 0; --ax) {
      Coords here(c.begin(), c.end() - 1), next = here;
      next[ax] = Halide::min(likely_inside(ax, next[ax] + 1), x.ext[ax] - 1);
      Halide::Expr diff =
          Halide::select(c[ax] < x.ext[ax] - 1, likely_inside(ax, call(x, next) - call(x, here)), 0.0f);
      out = ax == d - 1 ? diff : Halide::select(c.back() == ax, diff, out);
    }
    return out;
  });
  v.small_inner = true;
  // Each component reads two elements of x: inlined into a stencil that
  // reads it (div of grad, in a CG step's A p = KᵀK p) when x is at root,
  // instead of computed per strip of that stencil's rows, interleaved
  // (small_inner), and read back with strided loads. Measured at 512²,
  // interleaved in one process (bench/cg_programs.cpp): cg_apply 3–15 %
  // faster on TV, inpainting and deconvolution, cg_init 2–7 %. (Not when
  // x is computed per strip itself, or inlined: stencils of stencils.)
  const bool x_at_root =
      x.is_buffer || (materialized_.count(x.f.name()) && !strip_candidates_.count(x.f.name()));
  v.loads = x_at_root ? 2 : -1;
  return rec(v, "grad", x0, d, ext);
}

inline Val Graph::grad_bounded(const Val& v0, int d, bool circular, bool adjoint, const Ext& ext) {
  Val v = stencil(v0);  // circular reads the far end: not a stencil of neighbouring rows
  std::vector<Halide::Expr> e = extents(ext);
  if (!adjoint) {
    return rec(define("grad_b", e,
                      [&](const Coords& c) {
                        Halide::Expr out = 0.0f;
                        Coords here(c.begin(), c.end() - 1);
                        for (int ax = d - 1; ax >= 0; --ax) {
                          Coords next = here;
                          const Halide::Expr last = c[ax] >= v.ext[ax] - 1;
                          next[ax] = Halide::select(last, 0, Halide::min(here[ax] + 1, v.ext[ax] - 1));
                          Halide::Expr beyond = circular ? call(v, next) : Halide::Expr(0.0f);
                          Halide::Expr diff = Halide::select(last, beyond, call(v, next)) - call(v, here);
                          out = ax == d - 1 ? diff : Halide::select(c.back() == ax, diff, out);
                        }
                        return out;
                      }),
               "grad_bounded", v0, d, circular, adjoint, ext);
  }
  // Adjoint: x[k] gets p[k − 1] − p[k] along each axis, p[−1] being 0 (zero)
  // or p[n − 1] (circular).
  return rec(define("div_b", e,
                    [&](const Coords& c) {
                      Halide::Expr out = 0.0f;
                      for (int ax = 0; ax < d; ++ax) {
                        Coords here = c, prev = c;
                        here.push_back(ax);
                        prev.push_back(ax);
                        const Halide::Expr first = c[ax] <= 0;
                        prev[ax] = Halide::select(first, e[ax] - 1, Halide::max(c[ax] - 1, 0));
                        Halide::Expr before = circular ? call(v, prev) : Halide::Expr(0.0f);
                        out = out + Halide::select(first, before, call(v, prev)) - call(v, here);
                      }
                      return out;
                    }),
             "grad_bounded", v0, d, circular, adjoint, ext);
}

inline Val Graph::grad_t(const Val& p0, int d, const Ext& ext) {
  Val p = stencil(p0, true);
  std::vector<Halide::Expr> xe = extents(ext);
  return rec(define("div", xe,
                    [&](const Coords& c) {
                      Halide::Expr s = 0.0f;
                      for (int ax = 0; ax < d; ++ax) {
                        Coords prev = c, here = c;
                        prev[ax] = Halide::max(likely_inside(ax, c[ax] - 1), 0);
                        prev.push_back(ax);
                        here.push_back(ax);
                        s = s + Halide::select(c[ax] > 0, likely_inside(ax, call(p, prev)), 0.0f) -
                            Halide::select(c[ax] < xe[ax] - 1, likely_inside(ax, call(p, here)), 0.0f);
                      }
                      return s;
                    }),
             "grad_t", p0, d, ext);
}

inline Val Graph::conv(const Val& k, const Val& x0, bool adjoint, const Ext& ext) {
  Val x = stencil(x0);
  std::vector<Halide::Expr> e = extents(ext);
  const std::vector<Halide::Expr>& n = adjoint ? e : x.ext;
  const int kr = k.rank();
  // The kernel's axes of more than one tap: only they wrap.
  std::vector<bool> taps_along(static_cast<size_t>(kr));
  for (int i = 0; i < kr; ++i)
    taps_along[static_cast<size_t>(i)] = const_int(k.ext[static_cast<size_t>(i)]) != 1;
  // The kernel is no larger than the image, so coordinates lie in [−n, 2n):
  // two selects, no division (the clamp changes no value; it tells bounds
  // inference the range).
  auto wrap = [&](const Halide::Expr& c, int i) {
    return Halide::clamp(Halide::select(c < 0, c + n[i], c >= n[i], c - n[i], c), 0, n[i] - 1);
  };
  // Taps along the first axis alone (a column kernel, e.g. the first pass of a kernel of rank one)
  // of an image of rank 2 or more: each tap reads a whole row, wrapped once per row, from x itself.
  // Otherwise x extended circularly along the kernel's axes, computed once: the taps then read it
  // densely, with no wrapping per tap (that wrap is per lane along the rows).
  const bool rows_only =
      x.rank() >= 2 && std::none_of(taps_along.begin() + 1, taps_along.end(), [](bool t) { return t; });
  // An image's copy wrapped along its rows (the vectors' axis): inside [0, n) a plain copy, marked
  // likely, so that Halide splits the row loop and its steady state loads whole vectors; wrapped
  // lane by lane (a gather) only in the kernel's overhang. Its vectors round up (no shifted last
  // vector, whose base kept the split from holding: the wrapped values past the row are harmless).
  const int last = x.rank() - 1;
  const bool dense_rows = x.rank() == 2 && kr == 2 && taps_along[1] && !gpu();
  Val xw = rows_only ? x : define("wrapped", x.ext, [&](const Coords& c) {
    Coords src = c, inside = c;
    for (int i = 0; i < kr; ++i) {
      if (taps_along[static_cast<size_t>(i)]) src[i] = inside[i] = wrap(c[i], i);
    }
    if (!dense_rows) return call(x, src);
    inside[last] = Halide::clamp(c[last], 0, n[last] - 1);
    return Halide::select(Halide::likely(c[last] >= 0 && c[last] < n[last]), call(x, inside), call(x, src));
  });
  if (!rows_only) {
    xw.unroll_from = std::max(2, kr);  // its wrapped axes reach beyond [0, n)
    if (dense_rows) round_up_.insert(xw.f.name());
    schedule_at_root(xw);
  }
  Halide::Region ranges;
  for (int i = kr - 1; i >= 0; --i) ranges.push_back(Halide::Range(0, k.ext[i]));
  Halide::RDom r(ranges);
  // On a GPU, the taps of a kernel with staged_taps_ taps or more read a
  // tile of x (the block's outputs and the kernel's overhang) staged in the
  // block's shared memory (schedule_gpu): each element read once from the
  // device's memory per block instead of once per tap.
  Val taps_read = xw;
  int64_t taps = 1;
  for (int i = 0; i < kr; ++i) {
    const std::optional<int64_t> ki = const_int(k.ext[static_cast<size_t>(i)]);
    taps = ki ? taps * *ki : 0;
  }
  const bool staged = gpu() && staged_taps_ > 0 && taps >= staged_taps_ &&
                      x.rank() == static_cast<int>(e.size()) && !rows_only;
  if (staged) taps_read = define("staged", x.ext, [&](const Coords& c) { return call(xw, c); });
  Val v = define(adjoint ? "corr" : "conv", e, [&](const Coords& c) {
    Coords ki(kr), src = c;
    for (int i = 0; i < kr; ++i) {
      Halide::Expr ri = r[kr - 1 - i];
      ki[i] = ri;
      src[i] = adjoint ? c[i] + ri - k.ext[i] / 2 : c[i] - ri + k.ext[i] / 2;
    }
    if (rows_only) src[0] = wrap(src[0], 0);
    return Halide::sum(call(k, ki) * call(taps_read, src));
  });
  if (staged) staged_for_[v.f.name()] = taps_read.f;
  // At root, its taps' sums over wide vectors (kWideLanes) when the sizes
  // allow: a consumer's vectors of 8 would sum one vector at a time.
  if (min_extent_ >= kWideLanes) {
    v.lanes = kWideLanes;
    schedule_at_root(v);
  }
  return rec(v, "conv", k, x0, adjoint, ext);
}

inline Val Graph::conv_general(const Val& k, const Val& x0, bool adjoint, int boundary, int dims, const Ext& ext) {
  Val x = stencil(x0);
  std::vector<Halide::Expr> e = extents(ext);
  const std::vector<Halide::Expr>& n = x.ext;  // the same extents in and out
  const int kr = k.rank();
  Halide::Region ranges;
  for (int i = dims - 1; i >= 0; --i) ranges.push_back(Halide::Range(0, k.ext[i]));
  Halide::RDom r(ranges);
  const bool replicate = boundary == 2, zero = boundary == 1;
  // x (or the adjoint's y) at a coordinate up to a kernel's width outside:
  // wrapped (circular), zero, or clamped (replicate, forward only).
  auto at = [&](const Coords& c) {
    Coords src = c;
    Halide::Expr inside = Halide::Internal::const_true();
    for (int i = 0; i < dims; ++i) {
      inside = inside && c[i] >= 0 && c[i] < n[i];
      Halide::Expr w = boundary == 0 ? Halide::select(c[i] < 0, c[i] + n[i], c[i] >= n[i], c[i] - n[i], c[i]) : c[i];
      src[i] = Halide::clamp(w, 0, n[i] - 1);
    }
    return zero || (replicate && adjoint) ? Halide::select(inside, call(x, src), 0.0f) : call(x, src);
  };
  Val v = define(adjoint ? "corr_g" : "conv_g", e, [&](const Coords& c) {
    Coords ki(kr), src = c;
    for (int i = 0; i < kr; ++i) ki[i] = c[i];  // the slice's kernel beyond dims
    for (int i = 0; i < dims; ++i) {
      Halide::Expr ri = r[dims - 1 - i];
      ki[i] = ri;
      src[i] = adjoint ? c[i] + ri - k.ext[i] / 2 : c[i] - ri + k.ext[i] / 2;
    }
    return Halide::sum(call(k, ki) * at(src));
  });
  if (replicate && adjoint) {
    v.unroll_from = std::max(2, dims);  // read beyond [0, n) along the kernel's axes
    // Forward reads x at m − i + h (h = k/2), clamped: the entries it reads
    // beyond the border belong to the border. The correlation v above,
    // computed over the extended domain, has them at −(k − 1 − h) .. −1 and
    // n .. n − 1 + h along each axis; they are added onto entries 0 and n − 1.
    schedule_at_root(v);
    for (int i = 0; i < dims; ++i) {
      Val prev = v;
      Halide::Expr lo = k.ext[i] - 1 - k.ext[i] / 2, hi = k.ext[i] / 2;
      Halide::RDom below(1, Halide::max(lo, 1)), above(1, Halide::max(hi, 1));
      v = define("fold", e, [&](const Coords& c) {
        Coords b = c, t = c;
        b[i] = -below.x;
        t[i] = n[i] - 1 + above.x;
        Halide::Expr first = Halide::select(lo > 0, Halide::sum(call(prev, b)), 0.0f);
        Halide::Expr last = Halide::select(hi > 0, Halide::sum(call(prev, t)), 0.0f);
        return call(prev, c) + Halide::select(c[i] == 0, first, 0.0f) + Halide::select(c[i] == n[i] - 1, last, 0.0f);
      });
    }
  }
  return rec(v, "conv_general", k, x0, adjoint, boundary, dims, ext);
}

inline Val Graph::fft_conv(const Val& x0, int otf, int kr, bool adjoint, const Ext& ext) {
  Val x = x0;
  schedule_at_root(x);
  // An extern stage reads a buffer of its own (without a schedule too: --emit c).
  if (x.is_buffer || schedule_ != Schedule::Default) x.f.compute_root();
  auto it = otfs_.find(otf);
  if (it == otfs_.end()) {
    it = otfs_.emplace(otf, Halide::ImageParam(Halide::Float(32), kr + 1, "otf" + std::to_string(otf))).first;
  }
  otf_ext_[otf] = Ext(ext.begin(), ext.begin() + kr);
  Val out;
  out.ext = extents(ext);
  if (gpu() && device_fft_ != 0) {
    // The filter on the device: the spectrum times otf/n (its conjugate for
    // the adjoint), as the host's stage computes it in float.
    Halide::ImageParam t = it->second;
    const float sign = adjoint ? -1.0f : 1.0f;
    out.f = device_fft_filter(x, kr, adjoint ? "fft_corr" : "fft_conv",
                              [&](Halide::Func spec, const std::vector<Halide::Var>& v, Halide::Expr scale) {
                                std::vector<Halide::Expr> re(v.begin(), v.end()), im = re;
                                re[0] = 0;
                                im[0] = 1;
                                std::vector<Halide::Expr> tr(v.end() - kr, v.end()), ti = tr;
                                tr.insert(tr.begin(), Halide::Expr(0));
                                ti.insert(ti.begin(), Halide::Expr(1));
                                Halide::Expr a = spec(re), b = spec(im), c = scale * t(tr), d = scale * sign * t(ti);
                                return Halide::select(v[0] == 0, a * c - b * d, a * d + b * c);
                              });
    return rec(out, "fft_conv", x0, otf, kr, adjoint, ext);
  }
  out.f = Halide::Func(std::string(adjoint ? "fft_corr" : "fft_conv") + std::to_string(counter_++));
  std::vector<Halide::ExternFuncArgument> args = {x.f, it->second, Halide::Expr(kr),
                                                  Halide::Expr(adjoint ? 1 : 0)};
  out.f.define_extern("proxc_fft_conv", args, Halide::Float(32), static_cast<int>(ext.size()));
  out.f.compute_root();
  return rec(out, "fft_conv", x0, otf, kr, adjoint, ext);
}

inline Val Graph::black_box(const Val& x0, const std::string& name, bool adjoint, const Ext& in_ext,
                            const Ext& ext) {
  if (in_ext.size() > 6 || ext.size() > 6 || in_ext.empty() || ext.empty()) fail("black_box: ranks 1 to 6");
  Val x = x0;
  schedule_at_root(x);
  // An extern stage reads a buffer of its own (without a schedule too: --emit c).
  if (x.is_buffer || schedule_ != Schedule::Default) x.f.compute_root();
  Val out;
  out.f = Halide::Func("black_box" + std::to_string(counter_++));
  out.ext = extents(ext);
  std::vector<Halide::ExternFuncArgument> args = {x.f, Halide::Expr(proxc_black_box_id(name.c_str())),
                                                  Halide::Expr(adjoint ? 1 : 0)};
  for (const Ext* e : {&in_ext, &ext}) {
    args.push_back(Halide::Expr(static_cast<int>(e->size())));
    for (size_t i = 0; i < 6; ++i) args.push_back(i < e->size() ? extent((*e)[i]) : Halide::Expr(1));
  }
  black_boxes_.insert(name);
  out.f.define_extern("proxc_black_box_stage", args, Halide::Float(32), static_cast<int>(ext.size()));
  out.f.compute_root();
  return rec(out, "black_box", x0, name, adjoint, in_ext, ext);
}

inline Val Graph::subsample(const Val& x0, const std::vector<int>& factors, const Ext& ext) {
  Val x = stencil(x0);
  return rec(define("subsample", extents(ext),
                    [&](const Coords& c) {
                      Coords src;
                      for (size_t i = 0; i < c.size(); ++i) src.push_back(c[i] * factors[i]);
                      return call(x, src);
                    }),
             "subsample", x0, factors, ext);
}

inline Val Graph::upsample(const Val& y0, const std::vector<int>& factors, const Ext& ext) {
  Val y = stencil(y0);
  return rec(define("upsample", extents(ext),
                    [&](const Coords& c) {
                      Halide::Expr on = Halide::Internal::const_true();
                      Coords src;
                      for (size_t i = 0; i < c.size(); ++i) {
                        on = on && c[i] % factors[i] == 0;
                        src.push_back(Halide::clamp(c[i] / factors[i], 0, y.ext[i] - 1));
                      }
                      return Halide::select(on, call(y, src), 0.0f);
                    }),
             "upsample", y0, factors, ext);
}

inline Val Graph::stack(const std::vector<Val>& parts0, const Ext& ext) {
  std::vector<Val> parts;
  for (const Val& p : parts0) parts.push_back(stencil(p));
  return rec(define("vstack", extents(ext),
                    [&](const Coords& c) {
                      Halide::Expr out = 0.0f, offset = 0;
                      std::vector<std::pair<Halide::Expr, Halide::Expr>> pieces;
                      for (const Val& p : parts) {
                        Halide::Expr size = flat_size(p.ext);
                        Halide::Expr local = Halide::clamp(c[0] - offset, 0, size - 1);
                        pieces.push_back({c[0] < offset + size, call(p, unravel(local, p.ext, schedule_ == Schedule::GpuFloat))});
                        offset = offset + size;
                      }
                      for (size_t i = pieces.size(); i-- > 0;) {
                        out = i + 1 == pieces.size() ? pieces[i].second
                                                     : Halide::select(pieces[i].first, pieces[i].second, out);
                      }
                      return out;
                    }),
             "stack", parts0, ext);
}

inline Val Graph::unstack(const Val& y0, const std::vector<Ext>& parts, int k) {
  Val y = stencil(y0);
  Halide::Expr offset = 0;
  for (int i = 0; i < k; ++i) offset = offset + flat_size(extents(parts[i]));
  std::vector<Halide::Expr> pe = extents(parts[k]);
  return rec(define("unstack", pe, [&](const Coords& c) { return call(y, {offset + ravel(c, pe)}); }),
             "unstack", y0, parts, k);
}

inline Val Graph::reshape(const Val& x0, const Ext& ext) {
  Val x = stencil(x0);
  std::vector<Halide::Expr> e = extents(ext);
  return rec(define("reshape", e, [&](const Coords& c) { return call(x, unravel(ravel(c, e), x.ext, schedule_ == Schedule::GpuFloat)); }),
             "reshape", x0, ext);
}

inline Val Graph::transpose(const Val& x0, const std::vector<int>& perm, bool adjoint, const Ext& ext) {
  Val x = stencil(x0);
  return rec(define(adjoint ? "transpose_t" : "transpose", extents(ext),
                    [&](const Coords& c) {
                      Coords src(c.size());
                      for (size_t i = 0; i < c.size(); ++i) {
                        if (adjoint)
                          src[i] = c[static_cast<size_t>(perm[i])];
                        else
                          src[static_cast<size_t>(perm[i])] = c[i];
                      }
                      return call(x, src);
                    }),
             "transpose", x0, perm, adjoint, ext);
}

inline Val Graph::crop(const Val& x0, const std::vector<int>& offsets, const Ext& ext) {
  Val x = stencil(x0);
  return rec(define("crop", extents(ext),
                    [&](const Coords& c) {
                      Coords src;
                      for (size_t i = 0; i < c.size(); ++i) src.push_back(c[i] + offsets[i]);
                      return call(x, src);
                    }),
             "crop", x0, offsets, ext);
}

inline Val Graph::pad(const Val& y0, const std::vector<int>& offsets, const Ext& ext) {
  Val y = stencil(y0);
  return rec(define("pad", extents(ext),
                    [&](const Coords& c) {
                      Halide::Expr in = Halide::Internal::const_true();
                      Coords src;
                      for (size_t i = 0; i < c.size(); ++i) {
                        Halide::Expr o = c[i] - offsets[i];
                        in = in && o >= 0 && o < y.ext[i];
                        src.push_back(Halide::clamp(o, 0, y.ext[i] - 1));
                      }
                      return Halide::select(in, call(y, src), 0.0f);
                    }),
             "pad", y0, offsets, ext);
}

inline Val Graph::color(const Val& x0, const Val& matrix, bool adjoint, const Ext& ext) {
  std::vector<Halide::Expr> m;
  for (int i = 0; i < 9; ++i) m.push_back(call(matrix, {i / 3, i % 3}));
  return rec(color_impl(stencil(x0), m, adjoint, ext), "color", x0, matrix, adjoint, ext);
}

inline Val Graph::pixel_matrix(const Val& a, const Val& x0, bool adjoint, const Ext& ext, int terms) {
  Val x = stencil(x0);
  const std::optional<int64_t> known = const_int(a.ext[static_cast<size_t>(a.rank() - (adjoint ? 2 : 1))]);
  if (terms < 1 || (known && *known != terms)) fail("pixel_matrix: the number of terms is not the matrices'");
  return rec(define(adjoint ? "pxmat_t" : "pxmat", extents(ext),
                    [&](const Coords& c) {
                      Halide::Expr s = 0.0f;
                      for (int t = 0; t < terms; ++t) {
                        Coords at = c, src = c;
                        src.back() = t;
                        at.back() = adjoint ? Halide::Expr(t) : c.back();
                        at.push_back(adjoint ? c.back() : Halide::Expr(t));
                        s = s + call(a, at) * call(x, src);
                      }
                      return s;
                    }),
             "pixel_matrix", a, x0, adjoint, ext, terms);
}

inline Val Graph::color_slots(const Val& x0, int first, bool adjoint, const Ext& ext) {
  std::vector<Halide::Expr> m;
  for (int i = 0; i < 9; ++i) m.push_back(scalar_expr(first + i));
  return rec(color_impl(stencil(x0), m, adjoint, ext), "color_slots", x0, first, adjoint, ext);
}

inline Val Graph::warp(const Val& h, const Val& x0, const Ext& ext) {
  Val x = stencil(x0);
  const bool per_slice = h.rank() == 3;  // (3, 3, K): slice k of the output by homography k
  return rec(define("warp", extents(ext),
                    [&](const Coords& c) {
                      std::vector<Halide::Expr> hh = per_slice ? homography(h, c.back()) : homography(h);
                      Taps t = warp_taps(hh, c[0], c[1], x.ext[0], x.ext[1]);
                      Halide::Expr s = 0.0f;
                      for (int k = 0; k < 4; ++k) {
                        Coords src(c.begin(), c.end() - (per_slice ? 1 : 0));
                        src[0] = Halide::clamp(t.r[k], 0, x.ext[0] - 1);
                        src[1] = Halide::clamp(t.c[k], 0, x.ext[1] - 1);
                        s = s + t.w[k] * call(x, src);
                      }
                      return s;
                    }),
             "warp", h, x0, ext);
}

inline Val Graph::warp_t(const Val& h, const Val& y0, const Ext& ext) {
  Val y = stencil(y0);
  const bool per_slice = h.rank() == 3;
  std::vector<Halide::Expr> e = extents(ext);
  Val out;
  out.f = Halide::Func("warp_t" + std::to_string(counter_++));
  out.ext = e;
  out.vars = make_vars(static_cast<int>(e.size()));
  Coords c(out.vars.begin(), out.vars.end());
  out.f(reversed(c)) = 0.0f;
  // Over y's pixels (the target's), and its slices when there are several homographies.
  Halide::Region ranges = {Halide::Range(0, y.ext[1]), Halide::Range(0, y.ext[0])};
  if (per_slice) ranges.push_back(Halide::Range(0, y.ext.back()));
  Halide::RDom r(ranges);
  std::vector<Halide::Expr> hh = per_slice ? homography(h, r[2]) : homography(h);
  Taps t = warp_taps(hh, r[1], r[0], e[0], e[1]);
  for (int k = 0; k < 4; ++k) {
    Coords dst = c, src = c;
    dst[0] = Halide::clamp(t.r[k], 0, e[0] - 1);
    dst[1] = Halide::clamp(t.c[k], 0, e[1] - 1);
    src[0] = r[1];
    src[1] = r[0];
    if (per_slice) src.push_back(r[2]);
    out.f(reversed(dst)) += t.w[k] * call(y, src);
  }
  schedule_at_root(out);
  if (schedule_ == Schedule::Default) {
    // The scatters run serially (two may write one pixel): said so, not a forgotten schedule.
    for (int k = 0; k < out.f.num_update_definitions(); ++k) out.f.update(k).unscheduled();
  }
  return rec(out, "warp_t", h, y0, ext);
}

inline Val Graph::uneven_subsample(const Val& x0, const Val& idx, const Ext& ext) {
  Val x = stencil(x0);
  const int xr = x.rank();
  return rec(define("uneven", extents(ext),
                    [&](const Coords& c) {
                      Coords src(static_cast<size_t>(xr));
                      Halide::Expr inside = Halide::Internal::const_true();
                      for (int a = 0; a < xr; ++a) {
                        Coords at = {Halide::Expr(a)};
                        at.insert(at.end(), c.begin(), c.end());
                        Halide::Expr v = Halide::cast<int>(call(idx, at));
                        inside = inside && v >= 0 && v < x.ext[a];
                        src[a] = Halide::clamp(v, 0, x.ext[a] - 1);
                      }
                      return Halide::select(inside, call(x, src), 0.0f);
                    }),
             "uneven_subsample", x0, idx, ext);
}

inline Val Graph::uneven_subsample_t(const Val& y0, const Val& idx, const Ext& ext) {
  Val y = stencil(y0);
  std::vector<Halide::Expr> e = extents(ext);
  Val out;
  out.f = Halide::Func("uneven_t" + std::to_string(counter_++));
  out.ext = e;
  out.vars = make_vars(static_cast<int>(e.size()));
  Coords c(out.vars.begin(), out.vars.end());
  out.f(reversed(c)) = 0.0f;
  const int yr = y.rank();
  Halide::Region ranges;
  for (int i = yr - 1; i >= 0; --i) ranges.push_back(Halide::Range(0, y.ext[i]));
  Halide::RDom r(ranges);
  Coords src(static_cast<size_t>(yr)), dst(e.size());
  for (int i = 0; i < yr; ++i) src[i] = r[yr - 1 - i];
  Halide::Expr inside = Halide::Internal::const_true();
  for (size_t a = 0; a < e.size(); ++a) {
    Coords at = {Halide::Expr(static_cast<int>(a))};
    at.insert(at.end(), src.begin(), src.end());
    Halide::Expr v = Halide::cast<int>(call(idx, at));
    inside = inside && v >= 0 && v < e[a];
    dst[a] = Halide::clamp(v, 0, e[a] - 1);
  }
  out.f(reversed(dst)) += Halide::select(inside, call(y, src), 0.0f);
  schedule_at_root(out);
  if (schedule_ == Schedule::Default) {
    // The scatter runs serially (two entries may write one source): said so.
    out.f.update(0).unscheduled();
  }
  return rec(out, "uneven_subsample_t", y0, idx, ext);
}

inline Val Graph::color_impl(const Val& x, const std::vector<Halide::Expr>& m, bool adjoint, const Ext& ext) {
  return define(adjoint ? "color_t" : "color", extents(ext), [&](const Coords& c) {
    std::vector<Halide::Expr> rows;
    for (int o = 0; o < 3; ++o) {
      Halide::Expr s = 0.0f;
      for (int j = 0; j < 3; ++j) {
        Coords src = c;
        src.back() = j;
        s = s +
            (adjoint ? m[static_cast<size_t>(j * 3 + o)] : m[static_cast<size_t>(o * 3 + j)]) * call(x, src);
      }
      rows.push_back(s);
    }
    return Halide::select(c.back() == 0, rows[0], c.back() == 1, rows[1], rows[2]);
  });
}

inline Graph::Taps Graph::warp_taps(const std::vector<Halide::Expr>& h, Halide::Expr i, Halide::Expr j,
                                    Halide::Expr rows, Halide::Expr cols) {
  using Halide::cast;
  Halide::Expr fi = cast<float>(i), fj = cast<float>(j);
  // H·(row, col, 1) is the source's (row, column), ProxImaL's convention.
  Halide::Expr u = h[0] * fi + h[1] * fj + h[2];
  Halide::Expr vv = h[3] * fi + h[4] * fj + h[5];
  Halide::Expr w = h[6] * fi + h[7] * fj + h[8];
  Halide::Expr sy = u / w, sx = vv / w;
  Taps t;
  t.valid = w != 0.0f && sx >= -1.0f && sy >= -1.0f && sx <= cast<float>(cols) && sy <= cast<float>(rows);
  Halide::Expr sxc = Halide::clamp(sx, -2.0f, cast<float>(cols) + 1),
               syc = Halide::clamp(sy, -2.0f, cast<float>(rows) + 1);
  Halide::Expr x0 = cast<int>(Halide::floor(sxc)), y0 = cast<int>(Halide::floor(syc));
  Halide::Expr fx = sxc - cast<float>(x0), fy = syc - cast<float>(y0);
  const int dr[4] = {0, 0, 1, 1}, dc[4] = {0, 1, 0, 1};
  for (int k = 0; k < 4; ++k) {
    t.r[k] = y0 + dr[k];
    t.c[k] = x0 + dc[k];
    Halide::Expr wx = dc[k] ? fx : 1.0f - fx, wy = dr[k] ? fy : 1.0f - fy;
    Halide::Expr inside = t.r[k] >= 0 && t.r[k] < rows && t.c[k] >= 0 && t.c[k] < cols;
    t.w[k] = Halide::select(t.valid && inside, wx * wy, 0.0f);
  }
  return t;
}

inline std::vector<Halide::Expr> Graph::homography(const Val& h) {
  std::vector<Halide::Expr> e;
  for (int i = 0; i < 9; ++i) e.push_back(call(h, {i / 3, i % 3}));
  return e;
}

inline std::vector<Halide::Expr> Graph::homography(const Val& h, const Halide::Expr& k) {
  std::vector<Halide::Expr> e;
  for (int i = 0; i < 9; ++i) e.push_back(call(h, {i / 3, i % 3, k}));
  return e;
}

}  // namespace proxc::halide_ops
