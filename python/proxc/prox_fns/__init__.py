"""ProxImaL's proximal functions (proxc/_prox_fns.py), under ProxImaL's
module paths: `from proxc.prox_fns.prox_fn import ProxFn` works as
`from proximal.prox_fns.prox_fn import ProxFn` does."""
# The submodules first, then the functions (which rebind the names that
# loading a submodule bound to it: `diff_fn`, `patch_NLM`, ...).
from . import diff_fn, group_norm1, nonneg, norm1, patch_NLM, poisson_norm, prox_fn, sum_entries, sum_squares  # noqa: F401
from .._prox_fns import *  # noqa: F401,F403,E402
from .._prox_fns import __all__  # noqa: F401,E402
