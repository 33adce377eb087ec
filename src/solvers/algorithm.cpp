// Algorithm::create and what the ADMM-type algorithms share.
#include "solvers/algorithm.h"

#include <algorithm>
#include <cmath>

#include "support/error.h"

namespace proxc::internal {

std::unique_ptr<Algorithm> Algorithm::create(SolverKind kind) {
  switch (kind) {
    case SolverKind::PockChambolle:
      return make_pock_chambolle();
    case SolverKind::LinearizedADMM:
      return make_linearized_admm();
    case SolverKind::ADMM:
      return make_admm();
    case SolverKind::HQS:
      return make_hqs();
  }
  internal_error << "unknown solver kind " << static_cast<int>(kind);
  return nullptr;
}

std::unique_ptr<Algorithm> Algorithm::create(const std::string& name) {
  SolverKind kind{};
  user_assert(from_string(name, &kind))
      << "unknown solver '" << name << "' (one of: " << kind_list<SolverKind>() << ")";
  return create(kind);
}

void admm_tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                     IterationInfo* info) {
  info->eps_pri = std::sqrt(m) * o.eps_abs +
                  o.eps_rel * std::sqrt(std::max(out.scalars.at("kx2"), out.scalars.at("znorm2")));
  info->eps_dual = std::sqrt(n) * o.eps_abs + o.eps_rel * std::sqrt(out.scalars.at("ktu2"));
}

double penalty_factor(const IterationInfo& info, double changes) {
  constexpr double kMu = 10, kFactor = 2;
  if (changes >= kMaxPenaltyChanges) return 1;
  if (info.r > kMu * info.s) return kFactor;
  if (info.s > kMu * info.r) return 1 / kFactor;
  return 1;
}

void scale_duals(const Layout& l, double s, std::map<std::string, Array>* state) {
  for (size_t i = 0; i < l.psi.size(); ++i) {
    for (float& v : state->at(state_names::u(i)).data) v = static_cast<float>(v * s);
  }
}

void init_split_state(const Layout& l, std::map<std::string, Array>* state) {
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Shape& s = l.psi[i]->arg->shape;
    (*state)[state_names::z(i)] = Array(s);
    (*state)[state_names::u(i)] = Array(s);
  }
}

}  // namespace proxc::internal
