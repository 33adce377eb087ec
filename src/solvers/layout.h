/// \file
/// What every solver's programs are built from: the split problem as the
/// lowering sees it (Layout: the variables, the psi terms, the omega term),
/// and Builder, which makes the step nodes of K, Kᵀ, omega's prox and the
/// residual norms. The names of the state arrays and scalar parameters that
/// the programs and the host loop share are here too.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/problem.h"
#include "step/step.h"

namespace proxc::internal {

/// The names the step programs and the host loop share.
namespace state_names {
/// The variable v (scaled units).
inline std::string x(size_t v) { return "x" + std::to_string(v); }
/// Pock–Chambolle's extrapolated variable and dual variable of psi term i.
inline std::string xbar(size_t v) { return "xbar" + std::to_string(v); }
inline std::string y(size_t i) { return "y" + std::to_string(i); }
/// The ADMM-type solvers' split variable and scaled dual of psi term i.
inline std::string z(size_t i) { return "z" + std::to_string(i); }
inline std::string u(size_t i) { return "u" + std::to_string(i); }
/// Pock–Chambolle's check state under ProxImaL's stopping rule
/// (SolverOptions::proximal_stopping): the variable, its last change and the
/// dual variable at ProxImaL's previous refresh of its u and z.
inline std::string pc_xc(size_t v) { return "pc_xc" + std::to_string(v); }
inline std::string pc_dxc(size_t v) { return "pc_dxc" + std::to_string(v); }
inline std::string pc_yc(size_t i) { return "pc_yc" + std::to_string(i); }
/// The penalty parameter of admm and hqs (a program parameter).
constexpr const char* kRho = "rho";
/// The residual outputs of a checking run: squared primal and dual residuals.
constexpr const char* kR2 = "r2";
constexpr const char* kS2 = "s2";
/// A checking run's ‖a‖² of the array output `name` (see add_finiteness_norms).
inline std::string finite(const std::string& name) { return "finite_" + name; }
}  // namespace state_names

/// The split problem as the lowering sees it.
struct Layout {
  std::vector<Expr> vars;
  std::vector<const FunctionTerm*> psi;
  /// pc and ladmm: one function of x itself, or least squares that one direct
  /// solve takes together (prox_omega); admm and hqs: least squares, all
  /// solved in the x-update.
  std::vector<const FunctionTerm*> omega;
  std::string name(size_t i) const { return state_names::x(i); }
  /// The omega terms of variable v (each omega term is of one variable).
  std::vector<const FunctionTerm*> omega_of(size_t v) const;
};

Layout layout_of(const Problem& p);

/// Σ of the elements of the expressions' shapes.
int64_t total_size(const std::vector<Expr>& es);
/// The psi terms' operands.
std::vector<Expr> psi_args(const Layout& l);

/// a + b, or b when a is null.
Step sum_steps(Step a, const Step& b);
/// A scalar constant step.
Step scalar(double v);
/// s · v, or v itself when s is 1 (so that default step sizes add no node).
Step times(double s, const Step& v);

/// Builds the step nodes of one solver iteration.
class Builder {
 public:
  explicit Builder(const Layout& l) : l_(l) {}

  /// K_i x for psi term i, from the variables' current steps.
  Step K(size_t i, const std::vector<Step>& x) const;
  /// Kᵀ y for variable v: the sum over the psi terms that use it.
  Step KT(size_t v, const std::vector<Step>& y) const;
  /// The prox of variable `var`'s omega terms' sum: one direct solve of their
  /// least squares, or the one omega function's own prox; the identity when
  /// there is none.
  Step prox_omega(size_t var, const Step& v, const Step& rho) const;
  /// ‖a‖² summed over a list, computed by checking runs only (kCheckParam).
  static Step norm2(const std::vector<Step>& a);
  /// a − b, elementwise over two lists.
  static std::vector<Step> diff(const std::vector<Step>& a, const std::vector<Step>& b);

  const Layout& layout() const { return l_; }

 private:
  const Layout& l_;
};

/// The residual outputs "r2", "s2" (squared norms) and the tolerances' scale
/// terms, shared by the ADMM-type solvers: r = ‖Kx − z‖, s = ρ‖Kᵀ(z − z_prev)‖,
/// eps_pri = √m·eps_abs + eps_rel·max(‖Kx‖, ‖z‖), eps_dual = √n·eps_abs +
/// eps_rel·ρ‖Kᵀu‖.
void admm_residuals(const Builder& b, const std::vector<Step>& kx, const std::vector<Step>& z,
                    const std::vector<Step>& z_prev, const std::vector<Step>& u, const Step& rho,
                    StepProgram* p);

/// An omega term α‖βQx − b‖² + <c, Qx> + γ‖Qx‖² + d: its Hessian is
/// omega_hessian(t)·QᵀQ and its gradient at 0 is −omega_linear(t), with
/// omega_linear(t) = Qᵀ(2αβb − c) (null when b and c are 0).
double omega_hessian(const FunctionTerm& t);
Step omega_linear(const FunctionTerm& t);

/// ADMM's x-update solves (ρ·KᵀK + H) x = ρ·Kᵀ(z − u) + g, with H and g the
/// omega terms' Hessian and linear part. When every psi and omega operand is a
/// scaling of x, mul_elemwise(w, x) or conv(k, x) (one kernel), the matrix is
/// diagonal or circulant and the solve is direct: elementwise, or one FFT
/// solve. Each part is Σ identity·I + Σ c·diag(w²) + conv_scale·CᵀC.
struct DirectGram {
  struct Part {
    double identity = 0;                           ///< Σ s² (psi) or Σ h·s² (omega) over identity blocks
    std::vector<std::pair<double, Expr>> weights;  ///< (coefficient, w) per mul_elemwise block
    double conv_scale = 0;                         ///< over conv blocks (one kernel)
  };
  Part psi;    ///< KᵀK
  Part omega;  ///< H
  Expr kernel;
};

/// True (and *g filled) when the x-update of admm on `l` is direct.
bool direct_gram(const Layout& l, DirectGram* g);
/// Adds coefficient·QᵀQ of the operand Q to `part`; false when Q is no scaling
/// of x, mul_elemwise(w, x) or circular conv(k, x) with g's one kernel.
bool add_gram_block(const Expr& q, double coefficient, DirectGram* g, DirectGram::Part* part);
/// x = (ρ·P + H)⁻¹ rhs, P and H g's psi and omega parts; with `rho` null,
/// (P + H)⁻¹ rhs (admm without omega terms, where ρ cancels).
Step direct_solve(const DirectGram& g, const Step& rhs, const Step& rho);

}  // namespace proxc::internal
