"""ProxImaL's linear operators over proxc's expressions.

Each operator is a function (ProxImaL's classes are called the same way)
returning a LinOp, a handle of one node of proxc's operator DAG
(``proxc._proxc.Expr``). NumPy arrays and Python numbers are accepted wherever
ProxImaL takes a constant.
"""
import functools
import numbers
import operator

import numpy as np

from . import _proxc

__all__ = [
    "LinOp", "Variable", "Constant", "conv", "conv_nofft", "grad", "mul_elemwise", "scale", "subsample",
    "uneven_subsample", "sum", "copy", "vstack", "hstack", "reshape", "transpose", "mul_color", "warp", "crop",
    "gaussian", "black_box", "LinOpFactory", "pxwise_matrixmult", "CompGraph", "est_CompGraph_norm",
]


def _as_float32(value, what):
    """A C-ordered float32 copy of `value` only where it is not one already."""
    if np.iscomplexobj(value):
        raise ValueError(f"{what}: complex values; proxc's constants are real (split the real and imaginary parts)")
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

    # The operands (ProxImaL's input_nodes) and how the node is made of their
    # Exprs (_apply); a Variable and a Constant have none.
    _inputs = ()
    _make = None
    _own_constants = ()

    def __init__(self, expr, variables=(), constants=()):
        self._expr = expr
        self._variables = list(dict.fromkeys(variables))
        self._constants = list(dict.fromkeys(constants))

    @property
    def input_nodes(self):
        """The operands this node applies to, as ProxImaL's input_nodes."""
        return list(self._inputs)

    def forward(self, inputs, outputs):
        """ProxImaL's LinOp.forward: this node alone applied to one array
        per input node (a Constant operand, as `b` in `x - b`, is an input
        node too; a number added, as in `x + 1`, is left out), written into
        outputs[0]. In double precision by proxc's reference interpreter."""
        name = type(self).__name__
        node, fresh = self._over(inputs, "forward")
        vals = []
        for i, (v, a) in enumerate(zip(fresh, inputs)):
            if np.size(a) != v.size:
                raise ValueError(f"{name}.forward: input {i} has {np.size(a)} entries, its node {v.shape}")
            vals.append((v._expr, np.reshape(_as_float32(a, f"{name}.forward's input {i}"), v.shape)))
        _write(outputs[0], _proxc.forward(node._expr, vals), self.shape, "forward")

    def adjoint(self, inputs, outputs):
        """ProxImaL's LinOp.adjoint: the adjoint of this node applied to
        inputs[0] (of its shape), one array per input node written into
        outputs."""
        if len(inputs) != 1:
            raise ValueError(f"{type(self).__name__}.adjoint: expected one input (the node's output), "
                             f"got {len(inputs)}")
        node, fresh = self._over(outputs, "adjoint")
        y = np.reshape(_as_float32(inputs[0], f"{type(self).__name__}.adjoint's input"), self.shape)
        for i, part in enumerate(_proxc.adjoint(node._expr, y, [v._expr for v in fresh])):
            _write(outputs[i], part, fresh[i].shape, "adjoint", i)

    def _over(self, per_input, what):
        """This node over fresh variables in place of its input nodes, and
        those variables; `per_input` must hold one array per input node."""
        name = type(self).__name__
        if self._make is None:
            raise TypeError(f"{name}.{what}: a {name} is not an operator node")
        if len(per_input) != len(self._inputs):
            raise ValueError(f"{name}.{what}: expected {len(self._inputs)} arrays (one per input node), "
                             f"got {len(per_input)}")
        fresh = [Variable(p.shape, f"in{i}") for i, p in enumerate(self._inputs)]
        return _apply(self._make, fresh, self._own_constants), fresh

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

    def get_offset(self):
        """ProxImaL's get_offset: the constant offset, the expression with every variable 0."""
        zeros = [(v._expr, np.zeros(v.shape, np.float32)) for v in self._variables]
        return np.asarray(_proxc.evaluate(self._expr, zeros))

    @property
    def value(self):
        """The expression at its variables' values (after a solve), as ProxImaL's LinOp.value."""
        return _proxc.evaluate(self._expr, _values(self._variables, "value"))

    def __repr__(self):
        return f"{type(self).__name__}({self._expr.kind}, shape={self.shape})"

    # Arithmetic (ProxImaL's, and the reflected forms it lacks: 1 + x, b - x).
    def __add__(self, other):
        if isinstance(other, numbers.Real):
            return _apply(lambda e: e[0] + float(other), [self])
        # One sum node over every operand of a chain of +, as ProxImaL's.
        return _sum_node(_sum_operands(self) + _sum_operands(_lin(other, "+")))

    def __radd__(self, other):
        return self.__add__(other)

    def __sub__(self, other):
        if isinstance(other, numbers.Real):
            return _apply(lambda e: e[0] - float(other), [self])
        o = _lin(other, "-")
        return _apply(lambda e: e[0] - e[1], [self, o])

    def __rsub__(self, other):
        if isinstance(other, numbers.Real):
            return _apply(lambda e: float(other) - e[0], [self])
        o = _lin(other, "-")
        return _apply(lambda e: e[0] - e[1], [o, self])

    def __neg__(self):
        return _scaled(_apply(lambda e: -e[0], [self]), -1.0)

    def __mul__(self, other):
        if isinstance(other, numbers.Real):
            return _scaled(_apply(lambda e: float(other) * e[0], [self]), float(other))
        if isinstance(other, (np.ndarray, Constant)):
            # ProxImaL raises here; elementwise is what NumPy users mean.
            return mul_elemwise(other, self)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, numbers.Real):
            return _scaled(_apply(lambda e: e[0] / float(other), [self]), 1.0 / float(other))
        return NotImplemented


def _write(out, value, shape, what, i=0):
    """out[...] = value (of `shape`), the caller's array kept; `i`: which output, for the message."""
    if np.size(out) != np.size(value):
        raise ValueError(f"{what}: output {i} has {np.size(out)} entries, the result {tuple(shape)}")
    np.copyto(out, np.reshape(value, np.shape(out)), casting="unsafe")


def _values(variables, what):
    out = []
    for v in variables:
        if v.value is None:
            raise ValueError(f"{what}: variable '{v.name}' {v.shape} has no value yet (solve first)")
        out.append((v._expr, _as_float32(v.value, f"{what} of '{v.name}'")))
    return out


def _apply(make, inputs, constants=()):
    """The LinOp of make([each input's Expr]) over the operand LinOps `inputs`
    (ProxImaL's input_nodes); `constants` are the node's own data (a kernel, a
    weight). The node keeps `make`, so forward and adjoint rebuild it over new
    operands."""
    variables, consts = [], list(constants)
    for p in inputs:
        variables += p._variables
        consts += p._constants
    out = LinOp(make([p._expr for p in inputs]), variables, consts)
    out._inputs = list(inputs)
    out._make = make
    out._own_constants = list(constants)
    return out


def _scaled(node, s):
    """node (s times its operand) with s kept as ProxImaL's scale.scalar, for
    absorb_lin_op."""
    node.scalar = s
    return node


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

    def forward(self, inputs, outputs):
        """The identity, as in ProxImaL (the values given for the variable)."""
        _write(outputs[0], _as_float32(inputs[0], f"Variable '{self._name}'.forward's input"), self.shape, "forward")

    def adjoint(self, inputs, outputs):
        _write(outputs[0], _as_float32(inputs[0], f"Variable '{self._name}'.adjoint's input"), self.shape, "adjoint")


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

    def forward(self, inputs, outputs):
        """Writes the constant's value, as ProxImaL's Constant.forward."""
        _write(outputs[0], self._value, self.shape, "forward")

    def adjoint(self, inputs, outputs):
        """A constant has no input nodes: nothing to write."""

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
    d = -1 if dims is None else int(dims)
    return _apply(lambda e: _proxc.conv(k, e[0], "circular", d), [x], kc)


def conv_nofft(kernel, arg, implem=None):
    """Convolution with x's border repeated outside it (ProxImaL's conv_nofft)."""
    k, kc = _const_expr(kernel, "conv_nofft's kernel")
    x = _lin(arg, "conv_nofft")
    return _apply(lambda e: _proxc.conv(k, e[0], "replicate", -1), [x], kc)


def grad(arg, dims=None, implem=None):
    """Forward differences along the first dims axes: shape arg.shape + (dims,)."""
    x = _lin(arg, "grad")
    d = -1 if dims is None else int(dims)
    return _apply(lambda e: _proxc.grad(e[0], d), [x])


def mul_elemwise(weight, arg, implem=None):
    w, wc = _const_expr(weight, "mul_elemwise's weight")
    x = _lin(arg, "mul_elemwise")
    out = _apply(lambda e: _proxc.mul_elemwise(w, e[0]), [x], wc)
    # ProxImaL's mul_elemwise.weight (a Constant stays one: its value may change).
    out.weight = weight if isinstance(weight, LinOp) else _as_float32(weight, "mul_elemwise's weight")
    return out


def scale(scalar, arg, implem=None):
    x = _lin(arg, "scale")
    s = float(scalar)
    return _scaled(_apply(lambda e: _proxc.scale(s, e[0]), [x]), s)


def subsample(arg, steps, implem=None):
    x = _lin(arg, "subsample")
    a = _axes(steps, x.ndim, "subsample")
    return _apply(lambda e: _proxc.subsample(e[0], a), [x])


def uneven_subsample(arg, indices, implem=None):
    x = _lin(arg, "uneven_subsample")
    i, ic = _const_expr(np.asarray(indices), "uneven_subsample's indices")
    return _apply(lambda e: _proxc.uneven_subsample(e[0], i), [x], ic)


def sum(input_nodes, implem=None):  # noqa: A001 (ProxImaL's name)
    """The sum of the operands (ProxImaL's sum operator)."""
    if isinstance(input_nodes, LinOp):
        return input_nodes
    parts = [_lin(p, "sum") for p in input_nodes]
    if not parts:
        raise ValueError("sum: no operands")
    if len(parts) == 1:
        return parts[0]
    return _sum_node(parts)


def _sum_node(parts):
    out = _apply(lambda e: functools.reduce(operator.add, e), parts)
    out._is_sum = True
    return out


def _sum_operands(op):
    """What `op + ...` sums: a sum's operands, or op itself."""
    return list(op._inputs) if getattr(op, "_is_sum", False) else [op]


def copy(arg, implem=None):
    """The identity (ProxImaL's copy)."""
    return _lin(arg, "copy")


def vstack(input_nodes, implem=None):
    parts = [_lin(p, "vstack") for p in input_nodes]
    return _apply(_proxc.vstack, parts)


def hstack(input_nodes, implem=None):
    parts = [_lin(p, "hstack") for p in input_nodes]
    return _apply(_proxc.hstack, parts)


def reshape(arg, shape, implem=None):
    x = _lin(arg, "reshape")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    dims = [int(s) for s in shape]
    return _apply(lambda e: _proxc.reshape(e[0], dims), [x])


def transpose(arg, axes=None, implem=None):
    x = _lin(arg, "transpose")
    perm = [] if axes is None else [int(a) for a in axes]
    return _apply(lambda e: _proxc.transpose(e[0], perm), [x])


def crop(arg, begin, extent):
    x = _lin(arg, "crop")
    b, n = [int(v) for v in begin], [int(v) for v in extent]
    return _apply(lambda e: _proxc.crop(e[0], b, n), [x])


def mul_color(arg, mode, implem=None):
    """A 3x3 colour matrix per pixel: mode "opp", "yuv" or a (3, 3) array."""
    x = _lin(arg, "mul_color")
    if isinstance(mode, str):
        return _apply(lambda e: _proxc.mul_color(e[0], mode), [x])
    m, mc = _const_expr(mode, "mul_color's matrix")
    return _apply(lambda e: _proxc.mul_color(e[0], m), [x], mc)


def warp(arg, H, target_shape=None, implem=None):
    """Bilinear resampling through the homography H (3, 3) or (3, 3, K): output pixel
    (i, j) samples arg at the row and column H @ (i, j, 1), dehomogenised, as ProxImaL."""
    x = _lin(arg, "warp")
    h, hc = _const_expr(H, "warp's homography")
    t = [] if target_shape is None else [int(s) for s in target_shape]
    return _apply(lambda e: _proxc.warp(e[0], h, t), [x], hc)


def gaussian(size, sigma):
    """A normalised Gaussian kernel (a constant), printed as gaussian(...)."""
    return LinOp(_proxc.gaussian([int(s) for s in size], float(sigma)))


def black_box(name, arg):
    """The black-box operator registered under `name` (a C plugin: load_plugin)."""
    x = _lin(arg, "black_box")
    return _apply(lambda e: _proxc.black_box(name, e[0]), [x])


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
        return _apply(lambda e: _proxc.black_box(name, e[0]), [x])

    apply.name = name
    return apply


def pxwise_matrixmult(A, arg, normbound=None):
    """A matrix per pixel, as ProxImaL's: A of shape arg.shape[:-1] + (N, M) with
    M = arg.shape[-1] maps each pixel's vector arg[..., :] to A[..., :, :] @ arg[..., :];
    the result has shape arg.shape[:-1] + (N,).

    normbound (ProxImaL's declared bound of the operator's norm) is not needed:
    proxc bounds the operator by the largest singular value of its pixels'
    matrices, computed from A (docs/semantics.md); a value given is checked and
    not used."""
    if normbound is not None:
        number = isinstance(normbound, numbers.Real) or (
            isinstance(normbound, np.ndarray) and normbound.ndim == 0 and normbound.dtype.kind in "iuf")
        bound = float(normbound) if number and not isinstance(normbound, (bool, np.bool_)) else None
        if bound is None or not (0 < bound < float("inf")):
            raise ValueError(f"pxwise_matrixmult: normbound must be a positive number, got {normbound!r}")
    x = _lin(arg, "pxwise_matrixmult")
    m, mc = _const_expr(A, "pxwise_matrixmult's matrices")
    return _apply(lambda e: _proxc.pxwise_matrixmult(m, e[0]), [x], mc)


class CompGraph:
    """ProxImaL's CompGraph: the linear map K of an expression, from the flat
    vector of its variables (each in C order, in the order of
    ``end.variables()``: ``input_size`` entries) to its flat output
    (``output_size``). Constant offsets are left out, as ProxImaL's graph
    zeroes its constants. Applied by proxc's reference interpreter in double
    precision."""

    def __init__(self, end, implem=None):
        self.orig_end = self.end = _lin(end, "CompGraph")
        self.shape = self.end.shape
        self._vars = self.end.variables()
        self._offsets = np.cumsum([0] + [v.size for v in self._vars]).tolist()
        self.input_size = int(self._offsets[-1])
        self.output_size = int(self.end.size)

    def variables(self):
        return list(self._vars)

    def x_split(self, x):
        """The flat vector x as one array per variable (views of x)."""
        x = np.asarray(x)
        if x.size != self.input_size:
            raise ValueError(f"CompGraph: the input has {x.size} entries, the variables {self.input_size}")
        x = x.reshape(-1)
        return [x[a:b].reshape(v.shape) for v, a, b in zip(self._vars, self._offsets, self._offsets[1:])]

    def forward(self, x, y):
        """y = K x (flat vectors); returns y."""
        vals = [(v._expr, _as_float32(part, "CompGraph.forward's input"))
                for v, part in zip(self._vars, self.x_split(x))]
        _write(y, _proxc.forward(self.end._expr, vals), self.shape, "CompGraph.forward")
        return y

    def adjoint(self, u, v):
        """v = K^T u (flat vectors); returns v."""
        if np.size(u) != self.output_size:
            raise ValueError(f"CompGraph.adjoint: the input has {np.size(u)} entries, K's output {self.output_size}")
        y = np.reshape(_as_float32(u, "CompGraph.adjoint's input"), self.shape)
        parts = _proxc.adjoint(self.end._expr, y, [var._expr for var in self._vars])
        flat = np.concatenate([np.ravel(p) for p in parts]) if parts else np.zeros(0, np.float32)
        _write(v, flat, (self.input_size,), "CompGraph.adjoint")
        return v

    def norm_bound(self, final_output_mags):
        """ProxImaL's upper bound of ||K|| into final_output_mags[0]."""
        final_output_mags[0] = _proxc.operator_norm(self.end._expr, "bound")

    def update_vars(self, val):
        """Each variable's value from its part of the flat vector val."""
        for v, part in zip(self._vars, self.x_split(val)):
            v.value = part

    def x0(self):
        """The flat vector of the variables' initval (zeros where none)."""
        out = np.zeros(self.input_size, np.float32)
        for v, part in zip(self._vars, self.x_split(out)):
            if v.initval is not None:
                part[...] = np.reshape(v.initval, v.shape)
        return out

    def __str__(self):
        return "CompGraph"


def est_CompGraph_norm(K, tol=1e-3, try_fast_norm=True):  # noqa: N802 (ProxImaL's name)
    """ProxImaL's estimate of ||K|| for a CompGraph (or an expression): its
    upper bound with try_fast_norm, else Lanczos iteration on K^T K until the
    estimate changes by less than tol relative (at most 100 steps)."""
    end = K.end if isinstance(K, CompGraph) else _lin(K, "est_CompGraph_norm")
    if not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol <= 0:
        raise ValueError(f"est_CompGraph_norm: tol must be a number > 0, got {tol!r}")
    return float(_proxc.operator_norm(end._expr, "bound" if try_fast_norm else "power", float(tol)))
