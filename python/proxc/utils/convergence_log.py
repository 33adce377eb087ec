"""ProxImaL's proximal.utils.convergence_log: ConvergenceLog, the log a solve
fills when it is passed as ``convlog=`` (Problem.solve and the solver
modules' solve).

proxc fills it at every convergence check (``conv_check=1`` for every
iteration, as ProxImaL logs): ``objective_val`` the objective at the
iterate of each check, ``iter_time`` the milliseconds of iterating up to
each check (cumulative), ``total_time`` the last of them. Any object with
``record_objective(value)`` and ``record_timing(milliseconds)`` methods may
be passed instead."""
import time

__all__ = ["ConvergenceLog"]


class ConvergenceLog:
    """Objective values and cumulative iterating times (ms), one per entry."""

    def __init__(self):
        self.total_time = 0.0
        self.iter_time = []
        self.objective_val = []
        self.lastticstamp = None

    def record_timing(self, elapsed):
        """Adds `elapsed` milliseconds and records the running total."""
        self.total_time += elapsed
        self.iter_time.append(self.total_time)

    def record_objective(self, val):
        self.objective_val.append(val)

    def tic(self):
        """Starts a timing; toc() records the milliseconds since."""
        self.lastticstamp = time.perf_counter()
        return self.lastticstamp

    def toc(self):
        if self.lastticstamp is None:
            raise RuntimeError("ConvergenceLog.toc: tic() was not called first")
        elapsed = (time.perf_counter() - self.lastticstamp) * 1000.0
        self.record_timing(elapsed)
        self.lastticstamp = None
        return elapsed
