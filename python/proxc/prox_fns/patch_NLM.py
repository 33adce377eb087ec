"""ProxImaL's module proximal.prox_fns.patch_NLM: patch_NLM."""
from .._prox_fns import patch_NLM  # noqa: F401

__all__ = ["patch_NLM"]
