"""The convergence plot of a solve's history (matplotlib, an optional dependency)."""
import math

__all__ = ["plot_convergence"]


def plot_convergence(history, path=None, title=None):
    """Plots residuals and tolerances per check (log scale) and, when the
    history has it (solve(history=True)), the objective; writes the figure to
    `path` when given. Returns the matplotlib Figure."""
    try:
        import matplotlib
        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot_convergence needs matplotlib: python3 -m pip install matplotlib") from None
    if hasattr(history, "history"):  # a Problem
        history = history.history
    rows = list(history)
    if not rows:
        raise ValueError("plot_convergence: the history is empty (solve first)")
    its = [h["iteration"] for h in rows]
    objective = [h["objective"] for h in rows]
    has_objective = any(not math.isnan(v) for v in objective)
    fig, axes = plt.subplots(1, 2 if has_objective else 1, figsize=(10 if has_objective else 5, 3.6), squeeze=False)
    ax = axes[0][0]
    for key, label, style in (("r", "primal residual r", "-"), ("eps_pri", "eps_pri", "--"),
                              ("s", "dual residual s", "-"), ("eps_dual", "eps_dual", "--")):
        ax.semilogy(its, [max(h[key], 1e-300) for h in rows], style, label=label)
    ax.set_xlabel("iteration")
    ax.set_title("residuals and tolerances")
    ax.legend(fontsize=8)
    if has_objective:
        ax = axes[0][1]
        ax.plot(its, objective, "o-")
        ax.set_xlabel("iteration")
        ax.set_title("objective")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
