/// \file
/// Proximal operators and values of function terms, in double precision, as
/// docs/semantics.md defines them.
#pragma once

#include "emulate/linop.h"
#include "ir/function.h"

namespace proxc::internal::emulate {

/// prox_F(rho, v) = argmin_x F(x) + (rho/2)||x − v||² for the term F (its
/// operand replaced by x). rho > 0.
Tensor prox(const FunctionTerm& t, const Tensor& v, double rho, const ConstantLookup& data = own_constant_data);

/// F(v) = alpha·f(beta·v − b) + <c, v> + gamma·||v||² + d. Indicators (nonneg,
/// box, the domain of poisson_norm) follow ProxImaL: feasible within 1e-3,
/// else +inf.
double value(const FunctionTerm& t, const Tensor& v, const ConstantLookup& data = own_constant_data);


}  // namespace proxc::internal::emulate
