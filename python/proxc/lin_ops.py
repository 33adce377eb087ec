"""ProxImaL's linear operators over proxc's expressions.

Each operator is a function (ProxImaL's classes are called the same way)
returning a LinOp, a handle of one node of proxc's operator DAG
(``proxc._proxc.Expr``). NumPy arrays and Python numbers are accepted wherever
ProxImaL takes a constant.
"""
import numbers

import numpy as np

from . import _proxc

__all__ = [
    "LinOp", "Variable", "Constant", "conv", "conv_nofft", "grad", "mul_elemwise", "scale", "subsample",
    "uneven_subsample", "sum", "copy", "vstack", "hstack", "reshape", "transpose", "mul_color", "warp", "crop",
    "gaussian", "black_box", "LinOpFactory", "pxwise_matrixmult",
]


def _as_float32(value, what):
    """A C-ordered float32 copy of `value` only where it is not one already."""
    try:
        a = np.ascontiguousarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what}: expected a number or an array of numbers ({e})") from None
    if a.size and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{what}: the entry at {tuple(int(i) for i in bad)} is {a[tuple(bad)]} (NaN or Inf)")
    return a


class LinOp:
    """A linear (affine) expression in the variables: a node of proxc's DAG."""

    # NumPy hands `array - x`, `array + x`, `array * x` to LinOp's reflected
    # operators instead of looping over the array's elements.
    __array_ufunc__ = None

    def __init__(self, expr, variables=(), constants=()):
        self._expr = expr
        self._variables = list(dict.fromkeys(variables))
        self._constants = list(dict.fromkeys(constants))

    @property
    def shape(self):
        return tuple(self._expr.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self):
        return len(self.shape)

    def variables(self):
        """The variables this expression reads, in order of first use."""
        return list(self._variables)

    def constants(self):
        return list(self._constants)

    def is_constant(self):
        return not self._variables

    @property
    def value(self):
        """The expression at its variables' values (after a solve), as ProxImaL's LinOp.value."""
        return _proxc.evaluate(self._expr, _values(self._variables, "value"))

    def __repr__(self):
        return f"{type(self).__name__}({self._expr.kind}, shape={self.shape})"

    # Arithmetic (ProxImaL's, and the reflected forms it lacks: 1 + x, b - x).
    def __add__(self, other):
        if isinstance(other, numbers.Real):
            return _wrap(self._expr + float(other), [self])
        o = _lin(other, "+")
        return _wrap(self._expr + o._expr, [self, o])

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        if isinstance(other, numbers.Real):
            return _wrap(self._expr - float(other), [self])
        o = _lin(other, "-")
        return _wrap(self._expr - o._expr, [self, o])

    def __rsub__(self, other):
        if isinstance(other, numbers.Real):
            return _wrap(float(other) - self._expr, [self])
        o = _lin(other, "-")
        return _wrap(o._expr - self._expr, [o, self])

    def __neg__(self):
        return _wrap(-self._expr, [self])

    def __mul__(self, other):
        if isinstance(other, numbers.Real):
            return _wrap(float(other) * self._expr, [self])
        if isinstance(other, (np.ndarray, Constant)):
            # ProxImaL raises here; elementwise is what NumPy users mean.
            return mul_elemwise(other, self)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, numbers.Real):
            return _wrap(self._expr / float(other), [self])
        return NotImplemented


def _values(variables, what):
    out = []
    for v in variables:
        if v.value is None:
            raise ValueError(f"{what}: variable '{v.name}' {v.shape} has no value yet (solve first)")
        out.append((v._expr, _as_float32(v.value, f"{what} of '{v.name}'")))
    return out


def _wrap(expr, parts):
    variables, constants = [], []
    for p in parts:
        variables += p._variables
        constants += p._constants
    return LinOp(expr, variables, constants)


def _lin(value, what):
    """A LinOp of `value`: itself, or a Constant of an array or number."""
    if isinstance(value, LinOp):
        return value
    if isinstance(value, (numbers.Real, np.ndarray, list, tuple)):
        return Constant(value)
    raise TypeError(f"{what}: expected an expression, an array or a number, got {type(value).__name__}")


def _is_int(v):
    """Whether v is an integer (Python's or numpy's), not a bool."""
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, bool)


class Variable(LinOp):
    """An unknown of 1 to 4 dimensions: ``Variable((H, W))``. ``value`` is
    None until a solve sets it (a float32 array of the shape); ``initval``,
    when set, is where solves start."""

    def __init__(self, shape, name=None):
        if _is_int(shape):
            shape = (int(shape),)
        try:
            dims = list(shape)
        except TypeError:
            dims = None
        if dims is None or isinstance(shape, (str, bytes)) or not all(_is_int(s) for s in dims):
            raise TypeError(f"Variable: the shape must be an int or a tuple of ints, got {shape!r}")
        shape = tuple(int(s) for s in dims)
        self._name = name or "x"
        super().__init__(_proxc.variable(list(shape), self._name))
        self._variables = [self]
        self._value = None
        self.initval = None

    @property
    def name(self):
        return self._name

    @property
    def value(self):
        """None before a solve; the solution (float32, the variable's shape) after."""
        return self._value

    @value.setter
    def value(self, v):
        if v is not None:
            v = _as_float32(v, f"Variable '{self._name}'.value")
            if v.shape != self.shape:
                raise ValueError(f"Variable '{self._name}'.value: shape {v.shape}, the variable {self.shape}")
        self._value = v

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


class Constant(LinOp):
    """A constant array (or number). Assigning ``value`` later (an array of
    the same shape) gives the next solve of a problem using it the new data
    without compiling again (the frames of a video)."""

    def __init__(self, value, name=None):
        a = _as_float32(value, "Constant")
        self._value = a
        self._version = 0
        super().__init__(_proxc.constant(a, name or ""))
        self._constants = [self]

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, new):
        a = _as_float32(new, "Constant.value")
        if a.shape != self._value.shape:
            raise ValueError(f"Constant.value: the new data has shape {a.shape}, the constant {self._value.shape}")
        self._value = a
        self._version += 1

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def _const_expr(value, what):
    """(Expr, constants) of a constant argument: an array, a number or a Constant."""
    if isinstance(value, Constant):
        return value._expr, [value]
    if isinstance(value, LinOp):
        if not value.is_constant():
            raise ValueError(f"{what}: expected a constant, got an expression of the variables")
        return value._expr, value._constants
    c = Constant(value)
    return c._expr, [c]


def _axes(steps, n, what):
    if isinstance(steps, numbers.Integral):
        return [int(steps)] * n
    return [int(s) for s in steps]


def conv(kernel, arg, dims=None, implem=None):
    """Circular convolution of arg with kernel (origin at its centre, kh//2).

    A kernel with fewer axes than arg convolves along arg's first kernel.ndim
    axes, each slice along the others on its own: a 1-D kernel on an (H, W)
    image filters each column, a 2-D kernel on (H, W, C) each channel.
    ProxImaL asks for a kernel of arg's rank. With dims=d < kernel.ndim the
    kernel holds one kernel per slice along its axes past d (docs/semantics.md).
    """
    k, kc = _const_expr(kernel, "conv's kernel")
    x = _lin(arg, "conv")
    e = _proxc.conv(k, x._expr, "circular", -1 if dims is None else int(dims))
    return LinOp(e, x._variables, kc + x._constants)


def conv_nofft(kernel, arg, implem=None):
    """Convolution with x's border repeated outside it (ProxImaL's conv_nofft)."""
    k, kc = _const_expr(kernel, "conv_nofft's kernel")
    x = _lin(arg, "conv_nofft")
    return LinOp(_proxc.conv(k, x._expr, "replicate", -1), x._variables, kc + x._constants)


def grad(arg, dims=None, implem=None):
    """Forward differences along the first dims axes: shape arg.shape + (dims,)."""
    x = _lin(arg, "grad")
    return _wrap(_proxc.grad(x._expr, -1 if dims is None else int(dims)), [x])


def mul_elemwise(weight, arg, implem=None):
    w, wc = _const_expr(weight, "mul_elemwise's weight")
    x = _lin(arg, "mul_elemwise")
    return LinOp(_proxc.mul_elemwise(w, x._expr), x._variables, wc + x._constants)


def scale(scalar, arg, implem=None):
    x = _lin(arg, "scale")
    return _wrap(_proxc.scale(float(scalar), x._expr), [x])


def subsample(arg, steps, implem=None):
    x = _lin(arg, "subsample")
    return _wrap(_proxc.subsample(x._expr, _axes(steps, x.ndim, "subsample")), [x])


def uneven_subsample(arg, indices, implem=None):
    x = _lin(arg, "uneven_subsample")
    i, ic = _const_expr(np.asarray(indices), "uneven_subsample's indices")
    return LinOp(_proxc.uneven_subsample(x._expr, i), x._variables, ic + x._constants)


def sum(input_nodes, implem=None):  # noqa: A001 (ProxImaL's name)
    """The sum of the operands (ProxImaL's sum operator)."""
    if isinstance(input_nodes, LinOp):
        return input_nodes
    parts = [_lin(p, "sum") for p in input_nodes]
    if not parts:
        raise ValueError("sum: no operands")
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def copy(arg, implem=None):
    """The identity (ProxImaL's copy)."""
    return _lin(arg, "copy")


def vstack(input_nodes, implem=None):
    parts = [_lin(p, "vstack") for p in input_nodes]
    return _wrap(_proxc.vstack([p._expr for p in parts]), parts)


def hstack(input_nodes, implem=None):
    parts = [_lin(p, "hstack") for p in input_nodes]
    return _wrap(_proxc.hstack([p._expr for p in parts]), parts)


def reshape(arg, shape, implem=None):
    x = _lin(arg, "reshape")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return _wrap(_proxc.reshape(x._expr, [int(s) for s in shape]), [x])


def transpose(arg, axes=None, implem=None):
    x = _lin(arg, "transpose")
    return _wrap(_proxc.transpose(x._expr, [] if axes is None else [int(a) for a in axes]), [x])


def crop(arg, begin, extent):
    x = _lin(arg, "crop")
    return _wrap(_proxc.crop(x._expr, [int(b) for b in begin], [int(e) for e in extent]), [x])


def mul_color(arg, mode, implem=None):
    """A 3x3 colour matrix per pixel: mode "opp", "yuv" or a (3, 3) array."""
    x = _lin(arg, "mul_color")
    if isinstance(mode, str):
        return _wrap(_proxc.mul_color(x._expr, mode), [x])
    m, mc = _const_expr(mode, "mul_color's matrix")
    return LinOp(_proxc.mul_color(x._expr, m), x._variables, mc + x._constants)


def warp(arg, H, target_shape=None, implem=None):
    """Bilinear resampling through the homography H (3, 3) or (3, 3, K): output pixel
    (i, j) samples arg at the row and column H @ (i, j, 1), dehomogenised, as ProxImaL."""
    x = _lin(arg, "warp")
    h, hc = _const_expr(H, "warp's homography")
    t = [] if target_shape is None else [int(s) for s in target_shape]
    return LinOp(_proxc.warp(x._expr, h, t), x._variables, hc + x._constants)


def gaussian(size, sigma):
    """A normalised Gaussian kernel (a constant), printed as gaussian(...)."""
    return LinOp(_proxc.gaussian([int(s) for s in size], float(sigma)))


def black_box(name, arg):
    """The black-box operator registered under `name` (a C plugin: load_plugin)."""
    x = _lin(arg, "black_box")
    return _wrap(_proxc.black_box(name, x._expr), [x])


_factory_count = [0]


def LinOpFactory(input_shape, output_shape, forward, adjoint, norm_bound=None, name=None):  # noqa: N802
    """ProxImaL's operator written in Python: forward(x, out) writes K x into
    out, adjoint(y, out) writes K^T y (float32 NumPy arrays of the shapes
    given, copies of proxc's buffers). Returns a function applying it to an expression of
    input_shape. It runs as a black box (include/proxc/black_box.h): the
    interpreter runs inside every iteration, so it costs what its Python costs;
    norm_bound (an upper bound of ||K||) spares the Lanczos estimate."""
    input_shape = tuple(int(s) for s in np.atleast_1d(input_shape))
    output_shape = tuple(int(s) for s in np.atleast_1d(output_shape))
    if name is None:
        _factory_count[0] += 1
        name = f"linop_factory_{_factory_count[0]}"
    _proxc.register_python_black_box(name, list(input_shape), list(output_shape), forward, adjoint,
                                     0.0 if norm_bound is None else float(norm_bound))

    def apply(arg):
        x = _lin(arg, "LinOpFactory")
        if x.shape != input_shape:
            raise ValueError(f"LinOpFactory '{name}': the operand has shape {x.shape}, the operator takes {input_shape}")
        return _wrap(_proxc.black_box(name, x._expr), [x])

    apply.name = name
    return apply


def pxwise_matrixmult(A, arg, normbound=None):
    raise NotImplementedError("pxwise_matrixmult (a matrix per pixel) is not in proxc yet")
