/// \file
/// Lowering of a step program to ONE Halide pipeline with all its outputs.
/// The only code besides the backend that includes Halide.h.
///
/// Every shape is symbolic: extents come from the input and data buffers, so
/// a pipeline compiled once runs for any image size. Data arrays (b, kernels,
/// masks) are ImageParams and every scalar from the problem (scales, alpha,
/// beta, gamma, d, scalar b and c, bounds) is a Param, so changing them never
/// recompiles. `key` is a structural hash input: two programs with equal keys
/// share a compiled pipeline.
#pragma once

#include <Halide.h>

#include <map>
#include <string>
#include <vector>

#include "step/step.h"

namespace proxc::hl {

struct LoweredOutput {
  std::string name;
  Halide::Func func;
  int rank = 0;  ///< 0: a scalar (double); else a float array
  Shape shape;   ///< this program's shape
};

struct Lowered {
  std::string key;
  Halide::Pipeline pipeline;
  std::vector<LoweredOutput> outputs;
  std::map<std::string, Halide::ImageParam> inputs;
  std::map<std::string, Halide::Param<double>> params;
  /// Data slots, in lowering order, and this program's constants for them.
  std::vector<Halide::ImageParam> data;
  std::vector<const ExprNode*> data_nodes;
  /// Circulant-solve spectra |otf|², computed on the host from the kernels.
  std::vector<Halide::ImageParam> spectra;
  std::vector<std::pair<const ExprNode*, Shape>> spectra_sources;  ///< kernel, spatial dims
  /// Scalar slots and this program's values for them.
  std::vector<Halide::Param<float>> scalars;
  std::vector<double> scalar_values;
  /// Extent slots (array sizes) and this program's values for them.
  std::vector<Halide::Param<int>> extents;
  std::vector<int64_t> extent_values;
};

/// Lowers `p` with the default schedule for the host CPU.
Lowered lower(const StepProgram& p);

}  // namespace proxc::hl
