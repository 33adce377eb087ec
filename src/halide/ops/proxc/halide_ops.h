/// \file
/// proxc's Halide-op library: the functions that build every operator, its
/// adjoint, every prox function, value and step-program node as Halide Funcs.
///
/// This header is the whole of it (its parts are in proxc/halide_ops/: graph,
/// recording, pointwise, linear operators, prox, reductions, the default
/// schedule in schedule, strips and temporal, and float_kernels, the lowering pass of
/// GPU kernels without doubles), and it needs nothing but Halide.h (and
/// the C header proxc/black_box.h). proxc's
/// JIT lowering (src/halide/lower.cpp) builds its pipelines only through a
/// `Graph`, and while it does so the Graph writes each call it receives as a
/// line of C++. That text, wrapped in `main()`, is `Module::source()`: a
/// standalone program that makes the same calls on the same functions and so
/// builds the same pipeline, which is why the two cannot drift.
///
///     Graph g;
///     Val x = g.input("x", {0, 1});
///     Val d = g.grad(x, 2, {2, 3, 4});
///     g.output("dx", d);
///     return g.generate(argc, argv);   // writes NAME.a and NAME.h
///
/// Conventions. Arrays use numpy axis order (the last axis varies fastest);
/// Funcs take their arguments reversed (Halide's first dimension is the
/// innermost). Every size is a run-time `Param<int>` "extent slot" named
/// e<i>; every scalar of the problem is a `Param<float>` "scalar slot" s<i>;
/// data arrays are ImageParams data<i>; so one compiled pipeline serves any
/// image size, data or scalar values. An `Ext` lists extent slots.
#pragma once

#include "proxc/halide_ops/graph.h"
#include "proxc/halide_ops/recording.h"
#include "proxc/halide_ops/pointwise.h"
#include "proxc/halide_ops/linear.h"
#include "proxc/halide_ops/prox.h"
#include "proxc/halide_ops/reductions.h"
#include "proxc/halide_ops/float_kernels.h"
#include "proxc/halide_ops/schedule.h"
#include "proxc/halide_ops/strips.h"
#include "proxc/halide_ops/temporal.h"
