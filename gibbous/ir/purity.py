"""The purity table: which calls passes may delete, evaluate early, or merge.

A call ``fn(*args, **kwargs)`` is **pure** when

1. it has no observable side effect: it writes no memory reachable from outside the call (no
   argument, global, attribute, file or stream), and
2. it is deterministic: called again with arguments in the same state it returns an equal
   result (or raises the same way);

it may allocate a fresh result, and its result may alias an argument (``np.reshape`` returns a
view, ``np.asarray`` the array itself): purity says nothing about the identity of the result.
A pure call may raise.  Its result may depend on the *contents* of mutable arguments, so two
pure calls with the same arguments can still differ if the arguments are mutated in between.

What each pass may do with a pure call, and why that is safe:

* dead-code elimination deletes a pure call whose result is unused, **even if the call might
  raise** (``x[10]`` on a short list).  A program that only raised through a dead computation
  then runs on.  This is the trade-off numba and JAX make; keeping every possibly-raising call
  alive would make almost nothing removable.
* constant folding evaluates a pure call on immutable constants at compile time; when that
  raises, the call stays and raises at run time.
* common-subexpression elimination merges pure calls on immutable values only (see
  ``is_immutable_type``): that rules out both reading mutated contents and aliasing results.

Purity is **registered, never guessed**: a callable is pure only if it is in this table, and
only when its predicate (if any) accepts the argument types at the call.  The predicate exists
because purity often depends on the arguments: ``operator.add`` on two floats is pure, on an
``Any`` it may run a user class's ``__add__``, which may print.  The built-in entries below
accept only *plain* arguments (``is_plain_type``): numbers, strings, ``None``, arrays of a known
non-object dtype, and containers of those.  NumPy entries are pure only without ``out=`` (by
keyword or by position; ``out=None`` is fine) and, for ufuncs, without ``where=`` (which leaves
unselected elements uninitialised).

Rules extend the table with ``register_pure`` (or the ``pure`` decorator).  Registering a bound
method of a mutable object is an error: its result depends on state that is not an argument.
"""

from __future__ import annotations

import builtins
import cmath
import inspect
import math
import operator
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir.names import CallableSet, CallableTable
from gibbous.ir.core import Call, Constant, Value
from gibbous.ir.types import (
    Any,
    Array,
    Bool,
    Complex,
    Const,
    Dict,
    Float,
    Int,
    List,
    NoneType,
    Object,
    Set,
    Str,
    Tuple,
    Type,
    is_immutable_value,
)

#: ``when(arg_types, kwarg_types)``: is a call with arguments of these types pure?
PurityCondition = t.Callable[[tuple[Type, ...], t.Mapping[str, Type]], bool]

_F = t.TypeVar("_F")

_TABLE: CallableTable[object, PurityCondition | None] = CallableTable()

# Run before each lookup.  The rules layer adds the loader that registers an optional library's
# entries once the program has imported the library (``gibbous.optional``): this layer
# cannot import it, and the library's entries must not cost users who never call it.
_BEFORE_LOOKUP: list[t.Callable[[], None]] = []


def add_lookup_hook(hook: t.Callable[[], None]) -> None:
    """Call ``hook`` before every purity lookup (once per hook, however often it is added)."""
    if hook not in _BEFORE_LOOKUP:
        _BEFORE_LOOKUP.append(hook)




def register_pure(fn: _F, when: PurityCondition | None = None) -> _F:
    """Declare calls of ``fn`` pure (when ``when(arg_types, kwarg_types)`` holds, if given).

    Registering ``fn`` again replaces its entry.  Returns ``fn``, so it works as a decorator.
    """
    _TABLE[fn] = when
    return fn


@t.overload
def pure(fn: _F, /) -> _F: ...


@t.overload
def pure(*, when: PurityCondition | None = None) -> t.Callable[[_F], _F]: ...


def pure(fn: object = None, /, *, when: PurityCondition | None = None) -> object:
    """Decorator form: ``@pure`` or ``@pure(when=...)``."""
    if fn is not None:
        return register_pure(fn, when)

    def decorate(f: _F) -> _F:
        return register_pure(f, when)

    return decorate


def unregister_pure(fn: object) -> None:
    """Forget ``fn``'s entry (for tests and for rules that replace a built-in entry)."""
    _TABLE.pop(fn)


def is_registered_pure(fn: object) -> bool:
    """Whether ``fn`` has an entry at all, whatever its condition."""
    return fn in _TABLE


def purity_entry(fn: object) -> tuple[bool, PurityCondition | None]:
    """Whether ``fn`` has an entry, and its condition (None: pure unconditionally)."""
    for hook in _BEFORE_LOOKUP:
        hook()
    return (fn in _TABLE), _TABLE.get(fn)


def is_pure(
    callee: object,
    arg_types: t.Sequence[Type] = (),
    kwarg_types: t.Mapping[str, Type] | None = None,
) -> bool:
    """Whether calling ``callee`` with arguments of these types is pure.

    ``callee`` is an IR value or the callable itself.  A non-constant IR value is never pure:
    which callable it holds is unknown until run time.
    """
    if isinstance(callee, Value):
        if not isinstance(callee, Constant):
            return False
        callee = callee.value
    registered, when = purity_entry(callee)
    if not registered:
        return False
    return when is None or when(tuple(arg_types), dict(kwarg_types or {}))


def is_pure_call(call: Call) -> bool:
    """Whether ``call`` is pure, judged by its callee and the types of its operands."""
    kwarg_types = {name: v.type for name, v in call.kwargs.items()}
    return is_pure(call.callee, [a.type for a in call.args], kwarg_types)


# --------------------------------------------------------------------------------------------
# Argument types whose operations run no user code


def is_plain_type(ty: Type) -> bool:
    """Values of ``ty`` run no user code when Python or NumPy operates on them.

    Numbers, strings, ``None``, arrays of a known dtype other than ``object``, tuples (plain or
    untouched NamedTuples), lists, sets and dicts of plain items, and plain constants.  ``Any``
    and ``Object`` are never plain: their ``__add__`` or ``__eq__`` may be anyone's code.
    """
    match ty:
        case Bool() | Int() | Float() | Complex() | Str() | NoneType():
            return True
        case Array(dtype=dtype):
            # An unknown dtype may be ``object``, whose elements run their own methods.
            return dtype is not None and dtype != "object"
        case Tuple(items=items, cls=cls):
            return _is_plain_tuple_class(cls) and all(map(is_plain_type, items))
        case List(item=item) | Set(item=item):
            return is_plain_type(item)
        case Dict(key=key, value=value):
            return is_plain_type(key) and is_plain_type(value)
        case Const(value=value):
            return is_plain_value(value)
    return False


_PLAIN_SCALARS = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), range)
_PLAIN_CLASS_MODULES = ("builtins", "numpy")


def is_plain_value(value: object) -> bool:
    """A constant that runs no user code when operated on (exact classes, not subclasses)."""
    cls = type(value)
    if cls in _PLAIN_SCALARS:
        return True
    if cls is tuple:
        return all(map(is_plain_value, t.cast(tuple[object, ...], value)))
    if cls is slice:
        s = t.cast(slice, value)
        return all(map(is_plain_value, (s.start, s.stop, s.step)))
    if isinstance(value, np.generic):
        return cls.__module__ == "numpy" and value.dtype.kind != "O"
    if isinstance(value, np.dtype):
        return value.kind != "O"
    if isinstance(value, type):
        # Classes passed as arguments (``dtype=np.float32``, ``isinstance(x, int)``).  Only
        # builtin and NumPy classes: a user class may have a metaclass or __class_getitem__.
        return cls is type and value.__module__ in _PLAIN_CLASS_MODULES
    return False


# Dunders that namedtuple and typing.NamedTuple define themselves; any other override of a
# tuple or object dunder could change what a tuple operation does.
_NAMEDTUPLE_OWN = frozenset({"__new__", "__repr__", "__getnewargs__", "__replace__", "__doc__"})
_TUPLE_DUNDERS = frozenset(k for k in (*vars(tuple), *vars(object)) if k.startswith("__"))


def _is_plain_tuple_class(cls: type) -> bool:
    if cls is tuple:
        return True
    if not issubclass(cls, tuple) or not hasattr(cls, "_fields"):
        return False
    for klass in cls.__mro__[: cls.__mro__.index(tuple)]:
        if (set(vars(klass)) & _TUPLE_DUNDERS) - _NAMEDTUPLE_OWN:
            return False
    return True


def is_immutable_type(ty: Type) -> bool:
    """Every value of ``ty`` is immutable all the way down, so sharing one cannot be observed.

    Scalars, strings, ``None``, constants holding immutable values, and tuples of those.  Arrays
    and containers are not; nor are ``Any`` and ``Object``.
    """
    match ty:
        case Bool() | Int() | Float() | Complex() | Str() | NoneType():
            return True
        case Const(value=value):
            return is_immutable_value(value)
        case Tuple(items=items):
            return all(map(is_immutable_type, items))
    return False


# --------------------------------------------------------------------------------------------
# Conditions used by the built-in entries


def all_plain(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    """The condition for most built-in entries: every argument is plain."""
    return all(map(is_plain_type, arg_types)) and all(map(is_plain_type, kwarg_types.values()))


def _one_argument(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    return len(arg_types) == 1 and not kwarg_types


def _any_arguments(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    return True


def _two_arguments(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    return len(arg_types) == 2 and not kwarg_types


def _getattr_is_pure(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    # getattr(obj, name[, default]): the default is only returned, so its type does not matter.
    if kwarg_types or not 2 <= len(arg_types) <= 3:
        return False
    obj, name = arg_types[:2]
    if not (isinstance(name, Const) and type(name.value) is str):
        return False
    if isinstance(obj, Object) and obj.cls is super:  # (a method of a class: a dict lookup)
        return True
    if isinstance(obj, Const) and type(obj.value) is pytypes.ModuleType:
        # A name in the module's dict is a plain dict lookup; anything else would go to the
        # module's __getattr__ hook, which is arbitrary code.
        return name.value in vars(obj.value)
    if isinstance(obj, Array) and name.value in _ARRAY_FIELDS:
        return True  # (C getters of ndarray itself, whatever the dtype: no element's code runs)
    return is_plain_type(obj)


_ARRAY_FIELDS = frozenset({"shape", "ndim", "size", "dtype", "strides", "itemsize", "nbytes", "base", "flags"})


_MUTATING_KEYWORDS = frozenset({"out", "overwrite_input", "overwrite_a", "overwrite_b"})


# Where ``out`` goes by position in NumPy C functions that older versions give no signature
# (None: the function takes no ``out``).  Scalar types such as ``np.float32`` take none either.
_C_FUNCTION_OUT_POSITIONS: dict[str, int | None] = {
    "dot": 2, "vdot": None, "inner": None, "concatenate": 2, "where": None, "asarray": None,
    "array": None, "zeros": None, "arange": None, "float64": None, "float32": None,
    "int64": None, "int32": None, "complex128": None, "complex64": None, "bool_": None,
    "bool": None,
}  # fmt: skip


def _is_none(ty: Type) -> bool:
    return isinstance(ty, NoneType) or (isinstance(ty, Const) and ty.value is None)


def _numpy_condition(fn: object) -> PurityCondition | None:
    """The condition for a NumPy callable, or None if it is not a ufunc and has no signature.

    ``out`` may also be passed by position (``np.add(a, b, c)`` writes ``c``), so an argument in
    ``out``'s position must be ``None``, as must an ``out=`` keyword (``None`` is the default).
    """
    params: list[inspect.Parameter] = []
    outputs: list[int] = []
    if not isinstance(fn, np.ufunc):  # a ufunc's outputs follow its inputs: no signature needed
        try:
            signature = inspect.signature(t.cast(t.Callable[..., object], fn))
            params = list(signature.parameters.values())
        except (TypeError, ValueError):
            # Some C functions of older NumPy have no signature; a few are known by heart.
            name = getattr(fn, "__name__", None)
            if name not in _C_FUNCTION_OUT_POSITIONS:
                return None
            position = _C_FUNCTION_OUT_POSITIONS[name]
            outputs = [] if position is None else [position]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    outputs += [
        i for i, p in enumerate(params) if p.name in _MUTATING_KEYWORDS and p.kind in positional
    ]
    # A ufunc takes its inputs, then as many outputs as it has, by position.
    first_output = fn.nin if isinstance(fn, np.ufunc) else None
    # ``where=`` is safe where the function names it (np.sum masks a reduction), but not for a
    # ufunc or when forwarded through **kwargs to one: unselected outputs are left uninitialised.
    where_ok = not isinstance(fn, np.ufunc) and any(p.name == "where" for p in params)

    def condition(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
        positional_out = [ty for i, ty in enumerate(arg_types) if i in outputs]
        if first_output is not None:
            positional_out += arg_types[first_output:]
        if not all(map(_is_none, positional_out)):
            return False
        if not all(_is_none(ty) for k, ty in kwarg_types.items() if k in _MUTATING_KEYWORDS):
            return False
        where = kwarg_types.get("where")
        if where is not None and not where_ok and where != Const(True):
            return False
        return all_plain(arg_types, kwarg_types)

    return condition


def register_pure_array_function(fn: object) -> None:
    """Declare a NumPy-style callable pure (a ufunc, or a function with a signature, such as
    SciPy's) on plain arguments without ``out`` or ``overwrite_*``; one without a signature is
    left out, since where its ``out`` goes cannot be told."""
    condition = _numpy_condition(fn)
    if condition is not None:
        register_pure(fn, condition)


# --------------------------------------------------------------------------------------------
# The built-in entries

_OPERATOR = (
    # arithmetic and bitwise (not the in-place i* forms: they mutate their first argument)
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
    "lshift", "rshift", "and_", "or_", "xor", "concat",
    # unary
    "neg", "pos", "abs", "invert", "inv", "not_", "truth", "index",
    # comparison and membership
    "eq", "ne", "lt", "le", "gt", "ge", "contains",
    # item access (not setitem or delitem)
    "getitem",
)  # fmt: skip

# Not str() or repr(): NumPy's print options are global state that changes what they return.
_BUILTINS = (
    "len", "abs", "min", "max", "float", "int", "complex", "bool", "isinstance", "tuple",
    "range", "slice", "round", "divmod", "pow", "hash", "sum", "any", "all", "list",
)  # fmt: skip

_NUMPY_UFUNCS = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg",
    "degrees", "radians", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "logaddexp", "logaddexp2", "sqrt", "cbrt", "square", "reciprocal", "absolute", "abs",
    "fabs", "sign", "negative", "positive", "add", "subtract", "multiply", "divide",
    "true_divide", "floor_divide", "power", "float_power", "mod", "remainder", "fmod",
    "divmod", "maximum", "minimum", "fmax", "fmin", "floor", "ceil", "trunc", "rint",
    "conjugate", "conj", "matmul", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "isnan",
    "isinf", "isfinite", "signbit", "copysign", "heaviside", "bitwise_and", "bitwise_or",
    "bitwise_xor", "invert",
)  # fmt: skip

_NUMPY_FUNCTIONS = (
    "sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin", "argmax", "argmin",
    "cumsum", "cumprod", "all", "any", "dot", "vdot", "inner", "outer", "tensordot", "einsum",
    "trace", "cross", "kron", "reshape", "transpose", "swapaxes", "moveaxis", "squeeze",
    "expand_dims", "ravel", "broadcast_to", "concatenate", "stack", "hstack", "vstack",
    "tile", "repeat", "flip", "roll", "diag", "diagonal", "tril", "triu", "take", "where",
    "clip", "diff", "sort", "argsort", "real", "imag", "shape", "ndim", "size", "copy",
    "asarray", "array", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    "eye", "identity", "arange", "linspace", "isclose", "allclose", "array_equal", "round",
    "around", "sinc", "angle", "interp", "float64", "float32", "int64", "int32", "complex128",
    "complex64", "bool_",
    # reductions and diagonals with rules in gibbous.library.reductions.reductions and linalg
    "average", "ptp", "nansum", "nanmean", "diagflat",
    # rearrangements and index queries with rules in gibbous.library.arrays.shapes
    "split", "array_split", "pad", "fliplr", "flipud", "rot90", "atleast_1d", "atleast_2d",
    "atleast_3d", "take_along_axis", "nonzero", "flatnonzero", "argwhere", "searchsorted",
    "count_nonzero", "fix", "unravel_index", "ravel_multi_index",
    # and in gibbous.library.elementwise.ufuncs and gibbous.library.arrays (gradient, setops, shapes, views_copies)
    "gradient", "partition", "argpartition", "rollaxis", "append", "insert",
    "delete", "unique",
    # and in gibbous.library.transforms
    "convolve", "correlate",
    # dtype queries (SciPy's matrix functions ask them)
    "isrealobj", "iscomplexobj", "isreal", "iscomplex",
)  # fmt: skip

# Views with strides of their own (gibbous.library.arrays.strided): they write nothing.
_NUMPY_STRIDE_TRICKS = ("as_strided", "sliding_window_view")

_NUMPY_LINALG = (
    "norm", "det", "inv", "solve", "slogdet", "pinv", "cholesky", "eigh", "svd", "qr", "eig",
    "eigvals", "eigvalsh",
)  # fmt: skip

# The transforms of gibbous.library.transforms.fft (pure without out=).
_NUMPY_FFT = (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
    "fft2", "ifft2", "rfft2", "irfft2", "fftshift", "ifftshift", "fftfreq", "rfftfreq",
)  # fmt: skip


def _in_text(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    if arg_types and not kwarg_types:
        first = arg_types[0]
        text = isinstance(first, Str) or isinstance(first, Const) and type(first.value) in (str, bytes)
        if text:
            return True
    return all_plain(arg_types, kwarg_types)


def _register_builtins() -> None:
    for name in _OPERATOR:
        register_pure(getattr(operator, name), all_plain)
    # ``x in "abc"`` (NumPy's ``c.dtype.char in '?bB...'``): a string's ``__contains__`` takes
    # only strings, running nothing of x's (it raises otherwise).
    register_pure(operator.contains, _in_text)
    # Identity tests and type() read no attribute of their arguments.
    register_pure(operator.is_, _any_arguments)
    register_pure(operator.is_not, _any_arguments)
    register_pure(builtins.type, _one_argument)
    # ``super(C, obj)`` (the frontend's ``super()``) only keeps its two arguments.
    register_pure(builtins.super, _two_arguments)
    register_pure(t.cast, _any_arguments)  # the identity: type inference narrows with it
    for name in _BUILTINS:
        register_pure(getattr(builtins, name), all_plain)
    register_pure(builtins.getattr, _getattr_is_pure)
    # (queries of a sequence: ``xs.index(v)``, ``xs.count(v)``, by the items' equality)
    for query in (list.index, list.count, tuple.index, tuple.count):
        register_pure(query, all_plain)
    for module in (math, cmath):
        for name, fn in vars(module).items():
            # Every function of math and cmath is a pure numeric function.
            if not name.startswith("_") and isinstance(fn, pytypes.BuiltinFunctionType):
                register_pure(fn, all_plain)
    # Missing names are tolerated: the set of NumPy names differs between versions.
    numpy_callables = [getattr(np, n, None) for n in (*_NUMPY_UFUNCS, *_NUMPY_FUNCTIONS)]
    numpy_callables += [getattr(np.linalg, n, None) for n in _NUMPY_LINALG]
    numpy_callables += [getattr(np.fft, n, None) for n in _NUMPY_FFT]
    numpy_callables += [getattr(np.lib.stride_tricks, n, None) for n in _NUMPY_STRIDE_TRICKS]
    for fn in numpy_callables:
        if fn is None:
            continue
        condition = _numpy_condition(fn)
        if condition is not None:  # without a signature we cannot find ``out``: not pure
            register_pure(fn, condition)
    register_pure(np.nan_to_num, _nan_to_num_is_pure)
    register_pure(runtime.float_array, all_plain)  # ``np.array`` of floats (array-items)


def _nan_to_num_is_pure(arg_types: tuple[Type, ...], kwarg_types: t.Mapping[str, Type]) -> bool:
    # copy=False overwrites x in place.
    copy = kwarg_types.get("copy", arg_types[1] if len(arg_types) > 1 else Const(True))
    return copy == Const(True) and all_plain(arg_types, kwarg_types)


_register_builtins()


# --------------------------------------------------------------------------------------------
# Fresh results
#
# Activity analysis must give one fdata to every alias of an array: an operand of an active
# call whose result may alias it (``x.T``, ``np.reshape(x, ...)``, ``np.asarray(x)``) has to
# carry fdata even if it is a constant.  These callables, called purely on arrays and numbers,
# return a *new* array or scalar that shares no memory with any operand, so their operands
# need nothing of the kind: ``X @ W`` with a constant ``X`` computes no gradient for ``X``.

_FRESH_OPERATOR = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                   "neg", "pos", "abs")  # fmt: skip
_FRESH_NUMPY = ("dot", "vdot", "inner", "outer", "sum", "prod", "mean", "std", "var",
                "cumsum", "cumprod", "trace", "where", "clip")  # fmt: skip
_FRESH: CallableSet[object] = CallableSet(
    [
        *(getattr(operator, n) for n in _FRESH_OPERATOR),
        builtins.abs,
        *(getattr(np, n) for n in _FRESH_NUMPY),
    ]
)

_FRESH_OF_ANY: CallableSet[object] = CallableSet(getattr(np, n) for n in _FRESH_NUMPY)


def _numeric(ty: Type) -> bool:
    match ty:
        case Bool() | Int() | Float() | Complex():
            return True
        case Array(dtype=dtype):  # not ``object``: its elements are references, shared
            return dtype is not None and dtype != "object"
        case Const(value=value):
            if isinstance(value, np.ndarray):
                return bool(value.dtype != object)
            return isinstance(value, (bool, int, float, complex, np.generic))
    return False


def returns_fresh(call: Call) -> bool:
    """Whether ``call`` is a pure call, on arrays and numbers only, of a NumPy ufunc or another
    callable known to return a new array or number: its result aliases no operand."""
    callee = call.callee
    if not isinstance(callee, Constant):
        return False
    fn = callee.value
    if fn is np.array or fn is np.copy:  # (a copy, unless told otherwise: NumPy's own ``a =
        # np.array(a, subok=True, copy=True)`` before a write)
        copy = call.kwargs.get("copy")
        if copy is not None and not (isinstance(copy.type, Const) and copy.type.value is True):
            return False
        return bool(call.args) and _numeric(call.args[0].type) and is_pure_call(call)
    if not (isinstance(fn, np.ufunc) or fn in _FRESH):
        return False
    out = call.kwargs.get("out")
    if out is not None and not _no_memory(out.type):
        return False
    operands = [*call.args, *call.kwargs.values()]
    # (an axis, ``out=None``, ``dtype=None``: no memory the result could share; NumPy's
    # reductions and products make a new array of any operands, numeric ones at run time)
    if all(_numeric(v.type) or _no_memory(v.type) for v in operands):
        return is_pure_call(call)
    # (operands of unknown type: what the call runs is unknown, but NumPy's reductions and
    # products make a new array, except of an object array, whose items they may return)
    return fn in _FRESH_OF_ANY and all(
        _numeric_or_unknown(v.type) or _no_memory(v.type) for v in operands
    )


def _numeric_or_unknown(ty: Type) -> bool:
    return _numeric(ty) or isinstance(ty, Any) or isinstance(ty, Array) and ty.dtype is None


def _no_memory(ty: Type) -> bool:
    """None, a string, or a constant int or tuple of them: no array a result could share."""
    if isinstance(ty, NoneType | Str):
        return True
    if isinstance(ty, Const):
        v = ty.value
        return v is None or isinstance(v, (str, int)) or (
            isinstance(v, tuple) and all(isinstance(i, int) for i in v)
        )
    return False

__all__ = [
    "PurityCondition",
    "all_plain",
    "is_immutable_type",
    "is_plain_type",
    "is_plain_value",
    "is_pure",
    "is_pure_call",
    "is_registered_pure",
    "pure",
    "register_pure",
    "register_pure_array_function",
    "returns_fresh",
    "unregister_pure",
]
