/// \file
/// The kinds a user chooses among (solver, backend, schedule, norm, printed
/// forms), as enums. Each has to_string (the name the command line, the
/// reports and JSON use) and from_string (false for an unknown name), and
/// all_kinds<Kind>() lists them in order; `proxc` takes exactly these names.
#pragma once

#include <string>
#include <vector>

namespace proxc {

/// The splitting algorithm of a solve.
enum class SolverKind {
  PockChambolle,   ///< "pc": Chambolle–Pock primal-dual (ProxImaL's pock_chambolle)
  LinearizedADMM,  ///< "ladmm": linearized ADMM
  ADMM,            ///< "admm": ADMM, x-update direct or by conjugate gradients
  HQS,             ///< "hqs": half-quadratic splitting with continuation
};

/// What runs the step programs.
enum class BackendKind {
  Halide,   ///< "halide": fused pipelines compiled by Halide
  Emulate,  ///< "emulate": the reference interpreter (double precision; the ground truth)
};

/// The schedule of compiled pipelines: proxc's own, or one of Halide's
/// autoschedulers (a failing autoscheduler falls back to the default with a
/// warning, and the summary says which was used).
enum class ScheduleKind {
  Default,        ///< "default"
  Mullapudi2016,  ///< "mullapudi2016"
  Adams2019,      ///< "adams2019"
  Li2018,         ///< "li2018"
  Anderson2021,   ///< "anderson2021" (GPU targets; on a CPU target the default schedule, with a warning)
};

/// How the scale pass gets the operator norm ||K||.
enum class NormKind {
  Bound,     ///< "bound": ProxImaL's upper bound from the operators
  Estimate,  ///< "power": estimated by Lanczos iteration
};

/// The printed forms of a problem.
enum class ProblemFormat {
  Text,   ///< "text": canonical .prox, parses back to an equal problem
  Json,   ///< "json": the IR dump, loads back and continues
  Dot,    ///< "dot": the operator DAG for Graphviz
  Latex,  ///< "latex": the objective as an equation
};

/// The printed forms of a compiled program (Module::emit).
enum class ProgramFormat {
  Step,    ///< "step": the step program
  Source,  ///< "source": a standalone C++ Halide generator program
  Stmt,    ///< "stmt": Halide's lowered statement
  C,       ///< "c": Halide's C output
  Html,    ///< "html": Halide's HTML view
};

/// Which program of a solver compile() builds.
enum class ProgramKind {
  Iteration,  ///< "iteration": one solver iteration (fused: options.fuse of them)
  CgInit,     ///< "cg_init": the CG x-update's setup (admm, hqs)
  CgApply,    ///< "cg_apply": its operator application
  CgUpdate,   ///< "cg_update": its update
};

/// The part of the objective a term joins in a split of the user's own
/// (PassOptions::roles; ProxImaL's psi_fns and omega_fns).
enum class SplitRole {
  Psi,    ///< "psi": split off through K and handled by its prox
  Omega,  ///< "omega": handled exactly in the x-update
};

const char* to_string(SolverKind kind);
const char* to_string(BackendKind kind);
const char* to_string(ScheduleKind kind);
const char* to_string(NormKind kind);
const char* to_string(ProblemFormat kind);
const char* to_string(ProgramFormat kind);
const char* to_string(ProgramKind kind);
const char* to_string(SplitRole kind);

bool from_string(const std::string& name, SolverKind* kind);
bool from_string(const std::string& name, BackendKind* kind);
bool from_string(const std::string& name, ScheduleKind* kind);
bool from_string(const std::string& name, NormKind* kind);
bool from_string(const std::string& name, ProblemFormat* kind);
bool from_string(const std::string& name, ProgramFormat* kind);
bool from_string(const std::string& name, ProgramKind* kind);
bool from_string(const std::string& name, SplitRole* kind);

/// Every value of the enum, in declaration order.
template <typename Kind>
const std::vector<Kind>& all_kinds();

/// The names of every value ("pc", "ladmm", ...), in declaration order.
template <typename Kind>
std::vector<std::string> kind_names() {
  std::vector<std::string> names;
  for (Kind k : all_kinds<Kind>()) names.push_back(to_string(k));
  return names;
}

/// "pc, ladmm, admm or hqs": the names for a message.
template <typename Kind>
std::string kind_list() {
  const std::vector<std::string> n = kind_names<Kind>();
  std::string s;
  for (size_t i = 0; i < n.size(); ++i) s += (i == 0 ? "" : i + 1 == n.size() ? " or " : ", ") + n[i];
  return s;
}

template <>
const std::vector<SolverKind>& all_kinds<SolverKind>();
template <>
const std::vector<BackendKind>& all_kinds<BackendKind>();
template <>
const std::vector<ScheduleKind>& all_kinds<ScheduleKind>();
template <>
const std::vector<NormKind>& all_kinds<NormKind>();
template <>
const std::vector<ProblemFormat>& all_kinds<ProblemFormat>();
template <>
const std::vector<ProgramFormat>& all_kinds<ProgramFormat>();
template <>
const std::vector<ProgramKind>& all_kinds<ProgramKind>();
template <>
const std::vector<SplitRole>& all_kinds<SplitRole>();

}  // namespace proxc
