// The names of the public enums (proxc/kinds.h): one table per enum, from
// which to_string, from_string and all_kinds are made.
#include "proxc/kinds.h"

#include <utility>

namespace proxc {

namespace {

template <typename Kind>
struct Names;

template <>
struct Names<SolverKind> {
  static constexpr std::pair<SolverKind, const char*> table[] = {{SolverKind::PockChambolle, "pc"},
                                                                 {SolverKind::LinearizedADMM, "ladmm"},
                                                                 {SolverKind::ADMM, "admm"},
                                                                 {SolverKind::HQS, "hqs"}};
};
template <>
struct Names<BackendKind> {
  static constexpr std::pair<BackendKind, const char*> table[] = {{BackendKind::Halide, "halide"},
                                                                  {BackendKind::Emulate, "emulate"}};
};
template <>
struct Names<ScheduleKind> {
  static constexpr std::pair<ScheduleKind, const char*> table[] = {
      {ScheduleKind::Default, "default"},
      {ScheduleKind::Mullapudi2016, "mullapudi2016"},
      {ScheduleKind::Adams2019, "adams2019"},
      {ScheduleKind::Li2018, "li2018"},
      {ScheduleKind::Anderson2021, "anderson2021"}};
};
template <>
struct Names<NormKind> {
  static constexpr std::pair<NormKind, const char*> table[] = {{NormKind::Bound, "bound"},
                                                               {NormKind::Estimate, "power"}};
};
template <>
struct Names<ProblemFormat> {
  static constexpr std::pair<ProblemFormat, const char*> table[] = {{ProblemFormat::Text, "text"},
                                                                    {ProblemFormat::Json, "json"},
                                                                    {ProblemFormat::Dot, "dot"},
                                                                    {ProblemFormat::Latex, "latex"}};
};
template <>
struct Names<ProgramFormat> {
  static constexpr std::pair<ProgramFormat, const char*> table[] = {{ProgramFormat::Step, "step"},
                                                                    {ProgramFormat::Source, "source"},
                                                                    {ProgramFormat::Stmt, "stmt"},
                                                                    {ProgramFormat::C, "c"},
                                                                    {ProgramFormat::Html, "html"}};
};
template <>
struct Names<ProgramKind> {
  static constexpr std::pair<ProgramKind, const char*> table[] = {{ProgramKind::Iteration, "iteration"},
                                                                  {ProgramKind::CgInit, "cg_init"},
                                                                  {ProgramKind::CgApply, "cg_apply"},
                                                                  {ProgramKind::CgUpdate, "cg_update"}};
};
template <>
struct Names<SplitRole> {
  static constexpr std::pair<SplitRole, const char*> table[] = {{SplitRole::Psi, "psi"},
                                                                {SplitRole::Omega, "omega"}};
};

template <typename Kind>
const char* name_of(Kind k) {
  for (const auto& [kind, name] : Names<Kind>::table) {
    if (kind == k) return name;
  }
  return "?";
}

template <typename Kind>
bool kind_of(const std::string& s, Kind* out) {
  for (const auto& [kind, name] : Names<Kind>::table) {
    if (s == name) {
      *out = kind;
      return true;
    }
  }
  return false;
}

template <typename Kind>
const std::vector<Kind>& every() {
  static const std::vector<Kind> all = [] {
    std::vector<Kind> v;
    for (const auto& entry : Names<Kind>::table) v.push_back(entry.first);
    return v;
  }();
  return all;
}

}  // namespace

#define PROXC_KIND_FUNCTIONS(Kind)                                                      \
  const char* to_string(Kind kind) { return name_of(kind); }                            \
  bool from_string(const std::string& name, Kind* kind) { return kind_of(name, kind); } \
  template <>                                                                           \
  const std::vector<Kind>& all_kinds<Kind>() {                                          \
    return every<Kind>();                                                               \
  }

PROXC_KIND_FUNCTIONS(SolverKind)
PROXC_KIND_FUNCTIONS(BackendKind)
PROXC_KIND_FUNCTIONS(ScheduleKind)
PROXC_KIND_FUNCTIONS(NormKind)
PROXC_KIND_FUNCTIONS(ProblemFormat)
PROXC_KIND_FUNCTIONS(ProgramFormat)
PROXC_KIND_FUNCTIONS(ProgramKind)
PROXC_KIND_FUNCTIONS(SplitRole)

#undef PROXC_KIND_FUNCTIONS

}  // namespace proxc
