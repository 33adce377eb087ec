// proxc_bench_cg: the time of each CG program of an admm/hqs x-update, run
// alone into the same outputs (as the solver's loop runs them), best of N:
// where a CG step's time goes. Release build; figures for notes.
//
//   proxc_bench_cg FILE.prox [--solver admm|hqs] [--repeats N] [--cache-dir DIR]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "halide/halide_backend.h"
#include "pipeline/pipeline.h"
#include "solvers/solver.h"

using Clock = std::chrono::steady_clock;
using namespace proxc::internal;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.prox [--solver admm|hqs] [--repeats N] [--cache-dir DIR]\n", argv[0]);
    return 2;
  }
  std::string file = argv[1], solver = "admm";
  int repeats = 200;
  HalideOptions ho;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: option %s needs a value\n", argv[0], argv[i]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--solver")) solver = argv[i + 1];
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cache-dir")) ho.cache_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (repeats < 1) {
    std::fprintf(stderr, "%s: --repeats must be at least 1\n", argv[0]);
    return 2;
  }
  try {
    Problem p = load_problem(file);
    PassManagerOptions po;
    po.pass.solver = solver;
    const Problem split = run_passes(p, po);
    SolverOptions so;
    so.solver = solver;
    const std::vector<StepProgram> cg = cg_step_programs(split, so);
    if (cg.empty()) {
      std::fprintf(stderr, "%s: the %s x-update is not solved by CG\n", file.c_str(), solver.c_str());
      return 2;
    }
    auto backend = make_halide_backend(ho);
    for (const StepProgram& prog0 : cg) {
      const HoistSplit hs = hoist_invariants(prog0);
      const StepProgram& prog = hs.rest;
      auto step = backend->compile(prog);
      StepOutputs invariants;
      if (!hs.setup.outputs.empty()) invariants = backend->compile(hs.setup)->run(StepInputs{});
      StepInputs in;
      std::vector<Array> arrays;
      arrays.reserve(prog.inputs().size());
      for (const auto& [name, a] : invariants.arrays) in.buffers[name] = &a;
      for (const auto& [name, v] : invariants.scalars) in.params[name] = v;
      for (const Step& input : prog.inputs()) {
        if (in.buffers.count(input->name)) continue;
        Array a(input->shape);
        for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = 0.25f + 0.5f * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
        arrays.push_back(std::move(a));
        in.buffers[input->name] = &arrays.back();
      }
      for (const char* param : {"rho", "beta", "alpha"}) in.params[param] = 0.5;
      StepOutputs outs;
      step->run_into(in, &outs);
      double best = 1e30, total = 0;
      for (int r = 0; r < repeats; ++r) {
        auto t0 = Clock::now();
        step->run_into(in, &outs);
        const double t = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::min(best, t);
        total += t;
      }
      std::printf("%-10s best %.3f ms, mean %.3f ms (%d runs)\n", prog.name.c_str(), best * 1e3, total / repeats * 1e3,
                  repeats);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
