"""ProxImaL's linear operators (proxc/_lin_ops.py), under ProxImaL's module
paths: `from proxc.lin_ops.black_box import LinOpFactory` works as
`from proximal.lin_ops.black_box import LinOpFactory` does."""
# The submodules first: loading one binds its name here to the module (`conv`,
# `sum`, ...); the import of the operators after them binds those names back
# to the operators, as ProxImaL's package does.
from . import (black_box, comp_graph, constant, conv, conv_nofft, grad, hstack, lin_op, mul_color,  # noqa: F401
               mul_elemwise, pxwise_matrixmult, reshape, scale, subsample, sum, transpose, variable, vstack, warp)
from .._lin_ops import *  # noqa: F401,F403,E402
from .._lin_ops import __all__  # noqa: F401,E402
from .lin_op import cast_to_const  # noqa: F401,E402
