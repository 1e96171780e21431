"""Type rules for NumPy: ufuncs, reductions, constructors, shapes, indexing, array attributes.

Most NumPy functions have a result type that depends only on the dtypes and ranks of their
arguments and on constant parameters (``axis=0``, ``keepdims=True``, ``dtype=np.float32``), not
on shapes or values: those are typed by abstract sampling on ``(1,)*ndim`` arrays (see
``base``).  The lists below name them.  Functions whose result depends on a size
argument (``np.zeros(n)``), on a shape (``np.squeeze``) or on values (``np.linalg.eig`` is real
or complex depending on the eigenvalues) have rules of their own.
"""

from __future__ import annotations

import builtins
import typing as t

import attrs
import numpy as np

from gibbous.ir import types as T
from gibbous.infer.typerules.base import (
    EXACT_INT,
    ExactInt,
    RuleList,
    dtype_name,
    exact_int_dtype,
    join,
    positional,
    scalar_type,
    widen,
)
from gibbous.infer.typerules.sampling import evaluate_on_samples
from gibbous.infer.typerules.numbers import elementwise

RULES = RuleList()

Rule = t.Callable[[tuple[T.Type, ...], dict[str, T.Type]], T.Type]

# --------------------------------------------------------------------------------------------
# Ufuncs


def _ufunc_rule(uf: np.ufunc) -> Rule:
    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        kwargs = dict(kwargs)
        out = kwargs.pop("out", None)
        if out is not None:
            return _out_type(out, uf.nout)
        if len(args) != uf.nin:
            return T.ANY
        return elementwise(uf, args, kwargs)

    return rule


def _out_type(out: T.Type, nout: int) -> T.Type:
    """A ufunc called with ``out=`` returns the very arrays it was given."""
    match out:
        case T.Array() if nout == 1:
            return out
        case T.Tuple(items=items) if len(items) == nout:
            return items[0] if nout == 1 else T.Tuple(items)
    return T.ANY


def _ufuncs() -> list[np.ufunc]:
    return [obj for obj in vars(np).values() if isinstance(obj, np.ufunc)]


# --------------------------------------------------------------------------------------------
# Functions typed by sampling: result type set by dtypes, ranks and constant parameters
#
# Sampling stands for every value of an argument by one, which is right for data (arrays,
# numbers, lists: their dtypes and ranks decide the result type) and wrong for parameters: a
# flag (unique's return_index, linspace's retstep), a size (tile's reps), an order (norm's
# ord) or an exponent (matrix_power's n) changes the result type by its value.  So each
# function names its data arguments, and every other argument must be a constant.


@attrs.frozen
class DataArgs:
    """Which arguments are data: positions ``first`` to ``first + count`` (``None``: all the
    rest), and the keywords in ``keywords``."""

    count: int | None = 1
    first: int = 0
    keywords: frozenset[str] = frozenset()

    def parameters(self, args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> list[T.Type]:
        last = len(args) if self.count is None else self.first + self.count
        found = [a for i, a in enumerate(args) if not self.first <= i < last]
        return found + [v for k, v in kwargs.items() if k not in self.keywords]


def _constant_parameters(
    data: DataArgs, args: tuple[T.Type, ...], kwargs: dict[str, T.Type]
) -> bool:
    return all(isinstance(p, (T.Const, T.NoneType)) for p in data.parameters(args, kwargs))


def sampled_numpy(fn: t.Callable[..., object], data: DataArgs = DataArgs()) -> Rule:
    """The sampling rule for ``fn``, whose arguments other than ``data`` must be constants."""

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if not _constant_parameters(data, args, kwargs):
            return T.ANY
        found = evaluate_on_samples(fn, args, kwargs)
        return T.ANY if found is None else found

    return rule


def _reduction(fn: t.Callable[..., object]) -> Rule:
    """Sampling, and when the rank is unknown: a full reduction still gives a scalar."""
    data = DataArgs(1)

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if not _constant_parameters(data, args, kwargs):
            return T.ANY
        found = evaluate_on_samples(fn, args, kwargs)
        if found is not None:
            return found
        if len(args) != 1 or not isinstance(args[0], T.Array) or args[0].dtype is None:
            return T.ANY
        axis = kwargs.get("axis", T.NONE)
        if set(kwargs) - {"axis", "dtype"} or axis not in (T.NONE, T.Const(None)):
            return T.ANY  # some axes kept: an array, or a scalar if there were none to keep
        scalar = evaluate_on_samples(fn, (T.Array(args[0].dtype, 1),), kwargs)
        return T.ANY if scalar is None else scalar

    return rule


for _uf in _ufuncs():
    RULES.add([_uf], _ufunc_rule(_uf), fold=True)
    if _uf.nin == 2 and _uf.nout == 1:
        # Bound builtin methods are made afresh on each access; the table keys them by owner
        # and name.
        RULES.add([_uf.reduce], sampled_numpy(_uf.reduce))
        RULES.add([_uf.accumulate], sampled_numpy(_uf.accumulate))
        RULES.add([_uf.outer], sampled_numpy(_uf.outer, DataArgs(2)))


def _dtype_of(ty: T.Type | None) -> str | None:
    match ty:
        case T.Array(dtype=dtype):
            return dtype
        case T.Bool():
            return "bool"
        case T.Int(dtype=d) | ExactInt(dtype=d) | T.Float(dtype=d) | T.Complex(dtype=d):
            return d
    return None


_REDUCTIONS = """
    sum prod mean std var max min amax amin any all argmax argmin nansum nanprod nanmean
    nanstd nanvar nanmax nanmin nanargmax nanargmin median nanmedian ptp count_nonzero
    cumsum cumprod nancumsum nancumprod
""".split()

# Left out because their result depends on shapes or values even for constant parameters:
# cov and corrcoef (0-d for one variable), gradient (a tuple for several axes; a rule below),
# partition, insert and delete (samples of one element are too short; rules below), polyval (the
# coefficients' leading length), nanpercentile (a scalar for empty input), eig and eigvals
# (real or complex by the eigenvalues; they have rules below).
_SAMPLED: dict[str, DataArgs] = {
    **dict.fromkeys(
        """transpose swapaxes moveaxis rollaxis expand_dims ravel copy concatenate stack vstack
        hstack dstack column_stack flip fliplr flipud roll rot90 diag diagflat diagonal tril triu diff sort
        argsort unique nonzero argwhere flatnonzero round around real imag angle sinc isreal
        iscomplex isscalar zeros_like ones_like empty_like array asarray asanyarray ascontiguousarray
        asfortranarray tile repeat histogram nan_to_num ndim size shape trace""".split(),
        DataArgs(1),
    ),
    **dict.fromkeys(
        """dot vdot inner outer tensordot kron cross append convolve correlate
        searchsorted isclose allclose array_equal array_equiv full_like take take_along_axis
        percentile quantile polyfit""".split(),
        DataArgs(2),
    ),
    **dict.fromkeys("where clip interp".split(), DataArgs(3)),
    **dict.fromkeys("meshgrid atleast_1d atleast_2d atleast_3d".split(), DataArgs(None)),
    "einsum": DataArgs(None, first=1),  # the subscripts string, then the operands
    "average": DataArgs(1, keywords=frozenset({"weights"})),
    "bincount": DataArgs(2, keywords=frozenset({"weights"})),
}

_LINALG_SAMPLED: dict[str, DataArgs] = {
    **dict.fromkeys(
        """norm inv det slogdet cholesky eigh eigvalsh svd qr pinv matrix_rank matrix_power
        multi_dot tensorinv cond""".split(),
        DataArgs(1),
    ),
    **dict.fromkeys("solve lstsq tensorsolve".split(), DataArgs(2)),
}

for _name in _REDUCTIONS:
    if hasattr(np, _name):
        RULES.add([getattr(np, _name)], _reduction(getattr(np, _name)))
for _module, _table in ((np, _SAMPLED), (np.linalg, _LINALG_SAMPLED)):
    for _name, _data in _table.items():
        if hasattr(_module, _name):
            RULES.add([getattr(_module, _name)], sampled_numpy(getattr(_module, _name), _data))



def _permuted_axes(fn: t.Callable[..., object]) -> Rule:
    """``np.moveaxis``, ``np.swapaxes``, ``np.rollaxis`` (and ``ndarray.swapaxes``) of an
    array: an array of its dtype and rank, whatever the axes (sampling the axes would type a
    run-time axis by samples invalid for a low rank, as ``any``)."""
    sampled = sampled_numpy(fn, DataArgs(1))

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        if args and isinstance(args[0], T.Array) and args[0].ndim is not None:
            return T.Array(args[0].dtype, args[0].ndim)
        return sampled(args, kwargs)

    return rule


def _converted(fn: t.Callable[..., object]) -> Rule:
    """``np.asarray(a, dtype=bool)`` (``array``, ``asanyarray``) of an ``a`` the build could
    not tell: an array of that dtype (a bool or an integer one), of a rank unknown (a mask of
    unknown type is no float array, whose tangent forward mode would follow into an index)."""
    sampled = sampled_numpy(fn, DataArgs(1))

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        given = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        if args and isinstance(args[0], T.Any) and isinstance(given, T.Const) and given.value is not None:
            try:
                dtype = np.dtype(t.cast(t.Any, given.value))
            except TypeError:
                dtype = None
            if dtype is not None and dtype.kind in "biu":  # (a float or complex array of
                # unknown rank stays ``any``: NumPy's Python branches on such conversions)
                return T.Array(dtype.name, None)
        return sampled(args, kwargs)

    return rule


for _conversion in (np.array, np.asarray, np.asanyarray):
    RULES.add([_conversion], _converted(_conversion))


# ndarray methods: keyed by the method descriptors, called with the array first.
_METHOD_REDUCTIONS = "sum prod mean std var max min any all argmax argmin cumsum cumprod".split()
_METHODS: dict[str, DataArgs] = {
    **dict.fromkeys(
        """transpose swapaxes copy astype ravel flatten item tolist round conj conjugate
        argsort sort nonzero trace diagonal repeat view""".split(),
        DataArgs(1),
    ),
    **dict.fromkeys("dot fill take searchsorted".split(), DataArgs(2)),
    "clip": DataArgs(3),
}

for _name in _METHOD_REDUCTIONS:
    _m = getattr(np.ndarray, _name)
    RULES.add([_m], _reduction(_m))
for _name, _data in _METHODS.items():
    _m = getattr(np.ndarray, _name)
    RULES.add([_m], sampled_numpy(_m, _data))
for _fn in (np.moveaxis, np.swapaxes, np.rollaxis, np.ndarray.swapaxes):  # (after those)
    RULES.add([_fn], _permuted_axes(_fn))

# Scalar classes are callables too: np.float32(x) is a scalar, np.float64(an array) an array.
for _cls in {c for c in np.sctypeDict.values() if np.dtype(c).kind in "biufc"}:
    RULES.add([_cls], sampled_numpy(_cls), fold=True)


# --------------------------------------------------------------------------------------------
# Shapes and sizes given as arguments


def shape_rank(shape: T.Type) -> int | None:
    """How many dimensions a shape argument makes: ``5`` or ``n`` one, ``(2, 3)`` two."""
    match shape:
        case T.Const(value=value):
            if isinstance(value, tuple):
                return len(value)
            if isinstance(value, (builtins.int, np.integer)):
                return 1
        case ExactInt() | T.Int() | T.Bool():
            return 1
        case T.Tuple(items=items):
            return len(items)
    return None


def _dtype_argument(dtype: T.Type | None, default: str | None) -> str | None | T.Any:
    """The dtype a ``dtype=`` argument names; ``ANY`` when it is not a known constant."""
    if dtype is None or isinstance(dtype, T.NoneType):
        return default
    if isinstance(dtype, T.Const):
        try:
            return dtype_name(np.dtype(t.cast(t.Any, dtype.value)))
        except TypeError:
            return T.ANY
    return T.ANY


def _filled(default_dtype: str | None, params: tuple[str, ...]) -> Rule:
    """``np.zeros(shape, dtype=float)`` and friends: the rank of the shape, the named dtype."""

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        bound = positional(args, kwargs, params)
        if bound is None or "shape" not in bound:
            return T.ANY
        rank = shape_rank(bound["shape"])
        dtype = _dtype_argument(bound.get("dtype"), default_dtype)
        if isinstance(dtype, T.Any):
            return T.Array(None, rank)
        if default_dtype is None and "dtype" not in bound:
            dtype = _dtype_of(evaluate_on_samples(_full_of, [bound["fill_value"]], {}))
        return T.Array(dtype, rank)

    return rule


def _full_of(value: object) -> object:
    return np.full((1,), value)


RULES.add([np.zeros, np.ones, np.empty], _filled("float64", ("shape", "dtype", "order", "like")))
RULES.add([np.full], _filled(None, ("shape", "fill_value", "dtype", "order", "like")))


@RULES(np.eye, np.identity)
def _eye(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    dtype = _dtype_argument(kwargs.get("dtype"), "float64")
    return T.Array(None if isinstance(dtype, T.Any) else dtype, 2)


def _small_counts(
    fn: t.Callable[..., object],
    params: tuple[str, ...],
    counts: tuple[str, ...],
    data: tuple[str, ...] = ("start", "stop"),
) -> Rule:
    """Sample ``fn`` with its count parameters (``num`` of ``linspace``) made small constants.

    The result's rank and dtype do not depend on the count; its memory does.
    """

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        bound = positional(args, kwargs, params)
        if bound is None:
            return T.ANY
        for name in counts:
            if name in bound and _integer_like(bound[name]):
                bound[name] = T.Const(3)
        if not all(isinstance(v, (T.Const, T.NoneType)) for k, v in bound.items() if k not in data):
            return T.ANY  # a flag such as retstep decides the result's type by its value
        found = evaluate_on_samples(fn, (), bound)
        return T.ANY if found is None else found

    return rule


def _integer_like(ty: T.Type) -> bool:
    return exact_int_dtype(ty) is not None or isinstance(ty, (T.Int, T.Bool))


_SPACE_PARAMS = ("start", "stop", "num", "endpoint", "retstep", "dtype", "axis")
RULES.add([np.linspace], _small_counts(np.linspace, _SPACE_PARAMS, ("num",)))
RULES.add(
    [np.logspace],
    _small_counts(np.logspace, ("start", "stop", "num", "endpoint", "base", "dtype", "axis"), ("num",)),
)
RULES.add(
    [np.geomspace],
    _small_counts(np.geomspace, ("start", "stop", "num", "endpoint", "dtype", "axis"), ("num",)),
)


@RULES(np.arange)
def _arange(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # The dtype follows the argument types; sampling the widened types keeps the range tiny.
    small = tuple(widen(a) for a in args)
    found = evaluate_on_samples(np.arange, small, {k: v for k, v in kwargs.items() if k == "dtype"})
    return T.Array(_dtype_of(found), 1) if isinstance(found, T.Array) else T.ANY


def _asarray(ty: T.Type) -> T.Type:
    if isinstance(ty, T.Array):
        return ty
    found = evaluate_on_samples(np.asarray, (ty,), {})
    return found if isinstance(found, T.Array) else T.Array(None, None)


@RULES(np.reshape)
def _reshape(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    bound = positional(args, kwargs, ("a", "shape", "order"))
    if bound is None or "a" not in bound:
        return T.ANY
    shape = bound.get("shape", kwargs.get("newshape"))
    if shape is None:
        return T.ANY
    return T.Array(_dtype_of(_asarray(bound["a"])), shape_rank(shape))


@RULES(np.ndarray.reshape)
def _reshape_method(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    if not args or not isinstance(args[0], T.Array):
        return T.ANY
    shape = args[1:]
    kw = {k: v for k, v in kwargs.items() if k != "order"}
    if "shape" in kw:
        shape = (kw.pop("shape"),)
    if kw or not shape:
        return T.ANY
    rank = shape_rank(shape[0]) if len(shape) == 1 else len(shape)
    return T.Array(args[0].dtype, rank)


def _squeezed(x: T.Type, axis: T.Type | None) -> T.Type:
    x = _asarray(x)
    assert isinstance(x, T.Array)
    if axis is None or isinstance(axis, T.NoneType) or x.ndim is None:
        return T.Array(x.dtype, None)  # how many axes have length one is a runtime matter
    removed = shape_rank(axis)
    return T.Array(x.dtype, None if removed is None else x.ndim - removed)


@RULES(np.squeeze, np.ndarray.squeeze)
def _squeeze(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    bound = positional(args, kwargs, ("a", "axis"))
    if bound is None or "a" not in bound:
        return T.ANY
    return _squeezed(bound["a"], bound.get("axis"))


@RULES(np.broadcast_to)
def _broadcast_to(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    bound = positional(args, kwargs, ("array", "shape", "subok"))
    if bound is None or "array" not in bound or "shape" not in bound:
        return T.ANY
    return T.Array(_dtype_of(_asarray(bound["array"])), shape_rank(bound["shape"]))


def _rank_of_axis(x: T.Array, axis: T.Type | None) -> int | None:
    """The rank of a result that is x flattened for ``axis=None`` and x's shape otherwise."""
    if axis is None or isinstance(axis, T.NoneType) or axis == T.Const(None):
        return 1
    return x.ndim if isinstance(axis, T.Const) else None


def _same_dtype(params: tuple[str, ...], dtype: str | None = "same") -> Rule:
    """``np.partition``, ``np.delete``, ``np.insert``: x's dtype (or ``dtype``), x's rank, or one
    axis for ``axis=None`` (the default of delete and insert, not of partition)."""

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        bound = positional(args, kwargs, params)
        if bound is None or params[0] not in bound:
            return T.ANY
        x = _asarray(bound[params[0]])
        assert isinstance(x, T.Array)
        axis = bound.get("axis", T.Const(-1) if "kth" in params else None)
        return T.Array(x.dtype if dtype == "same" else dtype, _rank_of_axis(x, axis))

    return rule


_PARTITION = ("a", "kth", "axis", "kind", "order")
RULES.add([np.partition], _same_dtype(_PARTITION))
RULES.add([np.argpartition], _same_dtype(_PARTITION, "int64"))
RULES.add([np.delete], _same_dtype(("arr", "obj", "axis")))
RULES.add([np.insert], _same_dtype(("arr", "obj", "values", "axis")))


@RULES(np.lib.stride_tricks.as_strided)
def _as_strided(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    bound = positional(args, kwargs, ("x", "shape", "strides", "subok", "writeable"))
    if bound is None or "x" not in bound:
        return T.ANY
    x = _asarray(bound["x"])
    assert isinstance(x, T.Array)
    shape = bound.get("shape", T.NONE)
    return T.Array(x.dtype, x.ndim if isinstance(shape, T.NoneType) else shape_rank(shape))


@RULES(np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # One more axis per window axis, whether axis= names them or not.
    bound = positional(args, kwargs, ("x", "window_shape", "axis", "subok", "writeable"))
    if bound is None or "x" not in bound or "window_shape" not in bound:
        return T.ANY
    x = _asarray(bound["x"])
    assert isinstance(x, T.Array)
    added = shape_rank(bound["window_shape"])
    return T.Array(x.dtype, None if x.ndim is None or added is None else x.ndim + added)


@RULES(np.gradient)
def _gradient(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """An array per axis differentiated, of f's float dtype (float64 for other dtypes); one
    array alone, several in a tuple."""
    if not args or set(kwargs) - {"axis", "edge_order"}:
        return T.ANY
    f = _asarray(args[0])
    assert isinstance(f, T.Array)
    if f.ndim is None or f.dtype is None:
        return T.ANY
    dtype = f.dtype if np.dtype(f.dtype).kind in "fc" else "float64"
    axis = kwargs.get("axis", T.NONE)
    if isinstance(axis, T.NoneType) or axis == T.Const(None):
        count = f.ndim
    elif isinstance(axis, T.Const) and isinstance(axis.value, (tuple, list)):
        count = len(axis.value)
    else:
        count = 1 if exact_int_dtype(axis) is not None else 0
    if count == 0:
        return T.ANY
    one = T.Array(dtype, f.ndim)
    return one if count == 1 else T.Tuple((one,) * count)


#: The classes of ``np.r_`` and ``np.c_`` (their module moved between NumPy versions), and the
#: instance to sample each with: NumPy makes one of each, and their settings are fixed.
CONCATENATORS: dict[type, object] = {type(np.r_): np.r_, type(np.c_): np.c_}


def concatenator_getitem(cls: type, index: T.Type) -> T.Type:
    """The type of ``np.r_[index]`` / ``np.c_[index]`` (``cls`` the receiver's class)."""
    instance = CONCATENATORS.get(cls)
    as_string = isinstance(index, T.Const) and isinstance(index.value, str)
    if instance is None or isinstance(index, T.Str) or as_string:
        return T.ANY  # a string key is a matrix expression, evaluated in the caller's frame
    # The bound method, not getitem with the instance: samples are of data, not of objects.
    found = evaluate_on_samples(getattr(instance, "__getitem__"), (index,), {})
    return T.ANY if found is None else found


@RULES(np.linalg.eigvals)
def _eigvals(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # Real or complex depending on the eigenvalues: sampling a matrix of ones would say real.
    if len(args) == 1 and isinstance(args[0], T.Array) and args[0].ndim is not None:
        return T.Array(None, args[0].ndim - 1)
    return T.ANY


# NumPy 2 returns a NamedTuple (``EigResult``); NumPy 1 a plain tuple.
_EIG_RESULT: type = type(np.linalg.eig(np.eye(1)))


@RULES(np.linalg.eig)
def _eig(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    # The eigenvalues and eigenvectors, real or complex as for eigvals.
    values = _eigvals(args, kwargs)
    if not isinstance(values, T.Array) or values.ndim is None:
        return T.ANY
    return T.Tuple((values, T.Array(None, values.ndim + 1)), cls=_EIG_RESULT)


# --------------------------------------------------------------------------------------------
# Indexing


def _index_parts(index: T.Type) -> tuple[T.Type, ...]:
    match index:
        case T.Tuple(items=items, cls=cls) if cls is tuple:
            return items
        case T.Const(value=value) if type(value) is tuple:
            return tuple(T.Const(v) for v in value)
    return (index,)


class _Index(t.NamedTuple):
    consumed: int  # dimensions of the array the part indexes
    added: int  # dimensions it adds by basic indexing (slices, None, a scalar bool)
    advanced: int | None  # rank of an advanced (array) index; None if none
    view: bool  # the result is an array even if it has no dimensions (x[...], x[None])


def _index_part(part: T.Type) -> _Index | None:
    """What one index part does; ``None`` if unknown.  Scalar ``Int`` is split by the caller."""
    match part:
        case T.Const(value=value) if isinstance(value, (builtins.bool, np.bool_)):
            return _Index(0, 1, None, True)  # a scalar mask: adds a length-0-or-1 axis
        case T.Bool():
            return _Index(0, 1, None, True)
        case _ if exact_int_dtype(part) is not None:
            return _Index(1, 0, None, False)
        case T.Const(value=value) if isinstance(value, slice):
            return _Index(1, 1, None, True)
        case T.Object(cls=cls) if cls is slice:
            return _Index(1, 1, None, True)
        case T.NoneType():
            return _Index(0, 1, None, True)
        case T.Const(value=value) if value is Ellipsis:
            return _Index(0, 0, None, True)
        case T.Array(dtype=dtype, ndim=ndim) if dtype is not None and ndim is not None:
            kind = np.dtype(dtype).kind
            if kind == "b":
                return _Index(ndim, 0, 1, True)  # a k-d mask stands for k 1-d int arrays
            if kind in "iu":
                # A 0-d integer array indexes like an integer.
                return _Index(1, 0, None, False) if ndim == 0 else _Index(1, 0, ndim, True)
        case T.List(item=item):
            if isinstance(item, T.Bottom) or exact_int_dtype(item) is not None:
                return _Index(1, 0, 1, True)  # NumPy reads [] as an empty integer index
            if isinstance(item, T.Bool):
                return _Index(1, 0, 1, True)
    return None


def array_getitem(x: T.Array, index: T.Type) -> T.Type:
    """The type of ``x[index]`` for an array ``x``."""
    parts = _index_parts(index)
    # A scalar typed Int may be a bool, which NumPy reads as a mask: type both readings.
    for i, part in enumerate(parts):
        if isinstance(part, T.Int) or (isinstance(part, T.List) and isinstance(part.item, T.Int)):
            as_int: T.Type = ExactInt(part.dtype) if isinstance(part, T.Int) else T.List(EXACT_INT)
            as_bool: T.Type = T.BOOL if isinstance(part, T.Int) else T.List(T.BOOL)
            results = [
                array_getitem(x, T.Tuple(parts[:i] + (alt,) + parts[i + 1 :]))
                for alt in (as_int, as_bool)
            ]
            return join(results[0], results[1])
    kinds = [_index_part(p) for p in parts]
    is_array = any(k is None or k.view for k in kinds)
    if any(k is None for k in kinds) or x.ndim is None:
        return T.Array(x.dtype, None) if is_array and all(k is not None for k in kinds) else T.ANY
    known = t.cast(list[_Index], kinds)
    consumed = sum(k.consumed for k in known)
    if consumed > x.ndim:
        return T.ANY  # IndexError
    advanced = [k.advanced for k in known if k.advanced is not None]
    rank = x.ndim - consumed + sum(k.added for k in known) + (max(advanced) if advanced else 0)
    if rank == 0 and not is_array:
        return scalar_type(x.dtype)
    return T.Array(x.dtype, rank)


# --------------------------------------------------------------------------------------------
# Array attributes


def _same(x: T.Array) -> T.Type:
    return x


def _shape(x: T.Array) -> T.Type:
    return T.Object(tuple) if x.ndim is None else T.Tuple((EXACT_INT,) * x.ndim)


def _ndim(x: T.Array) -> T.Type:
    return EXACT_INT if x.ndim is None else T.Const(x.ndim)


def _count(x: T.Array) -> T.Type:
    return EXACT_INT


def _dtype_attr(x: T.Array) -> T.Type:
    return T.Object(np.dtype)


def _real_part(x: T.Array) -> T.Type:
    if x.dtype is None:
        return T.Array(None, x.ndim)
    return T.Array(dtype_name(np.empty(0, x.dtype).real.dtype), x.ndim)


def _flat(x: T.Array) -> T.Type:
    return T.Object(np.flatiter)


ARRAY_ATTRIBUTES: dict[str, t.Callable[[T.Array], T.Type]] = {
    "T": _same,
    "mT": _same,
    "shape": _shape,
    "strides": _shape,
    "ndim": _ndim,
    "size": _count,
    "itemsize": _count,
    "nbytes": _count,
    "dtype": _dtype_attr,
    "real": _real_part,
    "imag": _real_part,
    "flat": _flat,
}


@RULES(np.broadcast_shapes)
def _broadcast_shapes(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """A tuple of as many ints as the longest shape has (``np.broadcast_arrays``' twin)."""
    ranks = [shape_rank(a) for a in args]
    if kwargs or any(r is None for r in ranks):
        return T.ANY
    return T.Tuple((T.INT,) * max((t.cast(int, r) for r in ranks), default=0))


def is_none_type(ty: T.Type) -> bool:
    return isinstance(ty, T.NoneType) or isinstance(ty, T.Const) and ty.value is None


@RULES(np.cov, np.corrcoef)
def _covariance(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
    """An array of unknown rank (one variable's is 0-d, several variables' a matrix), float64
    or complex128 as the data (``dtype=`` left to sampling: any)."""
    data = [a for a in args[:2] if not isinstance(a, T.NoneType)] + [
        kwargs[k] for k in ("y",) if k in kwargs and not isinstance(kwargs[k], T.NoneType)
    ]
    dtype = kwargs.get("dtype", T.NONE)
    if not is_none_type(dtype) or not data or not all(isinstance(a, T.Array) for a in data):
        return T.ANY
    kinds = [np.dtype(t.cast(T.Array, a).dtype or "float64").kind for a in data]
    return T.Array("complex128" if "c" in kinds else "float64", None)
