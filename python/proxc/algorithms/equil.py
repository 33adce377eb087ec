"""ProxImaL's proximal.algorithms.equil: diagonal scalings D, E that make
D K E approximately equilibrated (its rows of one norm, its columns of
another), for an operator known only by its forward and adjoint.

``equil`` is the stochastic matrix-free method of Diamond and Boyd
("Stochastic matrix-free equilibration", J. Optim. Theory Appl. 172, 2017):
projected stochastic gradient descent on

    f(u, v) = 1/2 sum_ij exp(2 u_i) K_ij^2 exp(2 v_j) - alpha^2 sum u - beta^2 sum v
              + gamma/2 (||u||^2 + ||v||^2),   |u|, |v| <= M,

with alpha = (n/m)^(1/4), beta = (m/n)^(1/4) for K of m rows and n columns,
each gradient estimated from K and K^T applied to one random sign vector
(E[(K diag(e^v) s)_i^2] = sum_j K_ij^2 e^(2 v_j)), steps 2/(gamma (t + 1))
and the iterates averaged with weights 2/(t + 2). D = exp(u), E = exp(v).
The signs come from NumPy's global generator (np.random.seed makes a run
repeatable), drawn as ProxImaL's are. ``newton_equil`` minimises the same
f for an explicit matrix (K_ij^2 known) by Newton steps on its diagonal
Hessian with a backtracking line search: the reference ``equil`` is
compared with.
"""
import math

import numpy as np

__all__ = ["equil", "newton_equil"]


def _targets(m, n):
    return (n / m) ** 0.25, (m / n) ** 0.25


def _operator(K):
    """K as an object with forward, adjoint, input_size and output_size: a
    CompGraph as given, an expression wrapped in one."""
    if all(hasattr(K, a) for a in ("forward", "adjoint", "input_size", "output_size")):
        return K
    from .._lin_ops import CompGraph, LinOp
    if isinstance(K, LinOp):
        return CompGraph(K)
    raise TypeError(f"equil: expected a CompGraph or an expression, got {type(K).__name__}")


def equil(K, iters=50, gamma=1e-1, M=math.log(1e4)):
    """(d, e): the row scaling D = diag(d) and column scaling E = diag(e) of
    K (a CompGraph, or an expression) after `iters` stochastic steps."""
    K = _operator(K)
    if not (isinstance(iters, (int, np.integer)) and iters >= 0):
        raise ValueError(f"equil: iters must be an integer >= 0, got {iters!r}")
    if not (gamma > 0 and M > 0):
        raise ValueError(f"equil: gamma and M must be > 0, got gamma={gamma!r}, M={M!r}")
    m, n = int(K.output_size), int(K.input_size)
    row_target, col_target = _targets(m, n)
    u, v = np.zeros(m), np.zeros(n)
    u_avg, v_avg = np.zeros(m), np.zeros(n)
    Ks, Kts = np.zeros(m), np.zeros(n)
    for t in range(1, iters + 1):
        step = 2.0 / (gamma * (t + 1))
        signs_n = np.random.choice([-1, 1], size=n)
        K.forward(np.exp(v) * signs_n, Ks)
        grad_u = np.exp(2 * u) * Ks * Ks - row_target**2 + gamma * u
        signs_m = np.random.choice([-1, 1], size=m)
        K.adjoint(np.exp(u) * signs_m, Kts)
        grad_v = np.exp(2 * v) * Kts * Kts - col_target**2 + gamma * v
        u = np.clip(u - step * grad_u, -M, M)
        v = np.clip(v - step * grad_v, -M, M)
        u_avg += (2.0 / (t + 2)) * (u - u_avg)
        v_avg += (2.0 / (t + 2)) * (v - v_avg)
    return np.exp(u_avg), np.exp(v_avg)


def _objective(A2, u, v, gamma, row_target, col_target):
    return (0.5 * np.exp(2 * u) @ A2 @ np.exp(2 * v) - row_target**2 * u.sum() - col_target**2 * v.sum()
            + 0.5 * gamma * (u @ u + v @ v))


def newton_equil(A, gamma, max_iters):
    """(d, e) for an explicit matrix A by at most max_iters Newton steps."""
    A2 = np.square(np.asarray(A, dtype=np.float64))
    if A2.ndim != 2:
        raise ValueError(f"newton_equil: A must be a matrix, got shape {A2.shape}")
    if not gamma > 0:
        raise ValueError(f"newton_equil: gamma must be > 0, got {gamma!r}")
    m, n = A2.shape
    row_target, col_target = _targets(m, n)
    u, v = np.zeros(m), np.zeros(n)
    f = _objective(A2, u, v, gamma, row_target, col_target)
    for _ in range(int(max_iters)):
        rows = np.exp(2 * u) * (A2 @ np.exp(2 * v))   # d f / d u_i before the targets
        cols = np.exp(2 * v) * (A2.T @ np.exp(2 * u))
        grad_u = rows - row_target**2 + gamma * u
        grad_v = cols - col_target**2 + gamma * v
        du, dv = -grad_u / (2 * rows + gamma), -grad_v / (2 * cols + gamma)
        slope = grad_u @ du + grad_v @ dv
        if slope > -1e-15 * max(1.0, abs(f)):
            break
        t = 1.0
        f_new = _objective(A2, u + du, v + dv, gamma, row_target, col_target)
        while f_new > f + 0.25 * t * slope and t >= 1e-12:
            t *= 0.5
            f_new = _objective(A2, u + t * du, v + t * dv, gamma, row_target, col_target)
        if t < 1e-12:  # no decrease along the step: as near the minimum as rounding allows
            break
        u, v, f = u + t * du, v + t * dv, f_new
    return np.exp(u), np.exp(v)
