"""ProxImaL's module proximal.lin_ops.lin_op: LinOp, cast_to_const."""
from .._lin_ops import Constant, LinOp

__all__ = ["LinOp", "cast_to_const"]


def cast_to_const(expr):
    """`expr` itself when it is a LinOp, else a Constant of it (a number or an array)."""
    return expr if isinstance(expr, LinOp) else Constant(expr)
