"""The helpers the frontend's IR calls where Python has no callable of its own.

Every helper is an importable function, so it prints by path
(``gibbous.ir.runtime.make_tuple``) and type and AD rules can be attached to it.  Each
behaves exactly as the bytecode it stands for, errors included, unless its docstring says
otherwise.

The module also keeps the name registry: objects the IR holds as constants that have no import
path of their own (nested code objects, local functions, arbitrary global values) are given
one under ``gibbous.ir.runtime.registered``, so the text form can name them.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import keyword
import re
import sys
import threading
import types
import typing as t
import weakref
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from gibbous.ir import names


class UNBOUND:
    """The value of a local variable that is not bound (never assigned, or deleted).

    A class rather than an instance so that it prints by path in the IR.
    """


class STOP:
    """What ``next_or_stop`` returns once the iterator is exhausted."""


# --- containers ------------------------------------------------------------------------------


def make_tuple(*items: object) -> tuple[object, ...]:
    return items


def make_list(*items: object) -> list[object]:
    return list(items)


def float_array(*items: float) -> np.ndarray[t.Any, np.dtype[np.float64]]:
    """``np.array([a, b, ...])`` of floats (``float`` or ``np.float64``): a new 1-D float64
    array.  The ``array-items`` pass writes it for such literals, which AD writes out inline."""
    return np.array(items)


def make_set(*items: object) -> set[object]:
    return set(items)


def make_dict(*keys_and_values: object) -> dict[object, object]:
    """``make_dict(k1, v1, k2, v2, ...)``; a repeated key keeps its last value, like ``{}``."""
    d: dict[object, object] = {}
    for k in range(0, len(keys_and_values), 2):
        d[keys_and_values[k]] = keys_and_values[k + 1]
    return d


def make_locals(*names_and_values: object) -> dict[object, object]:
    """``locals()``: a dict of the local variables given, leaving out the unbound ones."""
    pairs = zip(names_and_values[0::2], names_and_values[1::2])
    return {name: value for name, value in pairs if value is not UNBOUND}


def bound_like(value: object, d: object) -> object:
    """``d``, or ``UNBOUND`` where ``value`` is: a local's tangent for ``make_locals``, which
    leaves out what is unbound (a Hessian-vector product's ``locals()``)."""
    return UNBOUND if value is UNBOUND else d


def _non_iterable(seq: object) -> TypeError:
    return TypeError(f"cannot unpack non-iterable {type(seq).__name__} object")


def unpack(seq: object, n: int) -> tuple[object, ...]:
    """``a, b = seq`` as a tuple of exactly ``n`` items; ValueError on another length."""
    if type(seq) in (tuple, list):
        items = tuple(t.cast(Iterable[object], seq))
        if len(items) == n:
            return items
        raise _unpack_error(n, len(items))
    try:
        it = iter(t.cast(Iterable[object], seq))
    except TypeError:
        raise _non_iterable(seq) from None
    out: list[object] = []
    for item in it:
        if len(out) == n:
            raise _unpack_error(n, n + 1)
        out.append(item)
    if len(out) < n:
        raise _unpack_error(n, len(out))
    return tuple(out)


def _unpack_error(n: int, got: int) -> ValueError:
    """What ``a, b = seq`` raises for a ``seq`` of ``got`` items (CPython's messages)."""
    if got < n:
        return ValueError(f"not enough values to unpack (expected {n}, got {got})")
    return ValueError(f"too many values to unpack (expected {n})")


def check_unpack(seq: t.Sized, n: int) -> None:
    """Raise what ``unpack(seq, n)`` raises where ``seq`` (a 1-D array, whose length is the
    number of items iterating yields) has another length than ``n``; nothing otherwise.  The
    ``array-items`` pass reads the items themselves as ``seq[k]``."""
    if len(seq) != n:
        raise _unpack_error(n, len(seq))


def unpack_ex(seq: object, before: int, after: int) -> tuple[object, ...]:
    """``a, *b, c = seq`` as ``(a, [b...], c)``: ``before`` items, a list, ``after`` items."""
    try:
        items = list(t.cast(Iterable[object], seq))
    except TypeError:
        if not hasattr(seq, "__iter__"):
            raise _non_iterable(seq) from None
        raise
    if len(items) < before + after:
        raise ValueError(
            f"not enough values to unpack (expected at least {before + after}, got {len(items)})"
        )
    middle = items[before : len(items) - after]
    return (*items[:before], middle, *items[len(items) - after :])


# --- calls and functions ---------------------------------------------------------------------


def call_ex(f: t.Callable[..., object], args: object, kwargs: object = None) -> object:
    """``f(*args, **kwargs)``."""
    if kwargs is None:
        return f(*t.cast(Iterable[object], args))
    return f(*t.cast(Iterable[object], args), **t.cast(Mapping[str, object], kwargs))


def dict_merge(d: dict[object, object], other: object) -> None:
    """``d.update(other)`` for ``f(**a, **b)``: a key already in ``d`` is an error.

    CPython's message also names the function called; ours cannot know it.
    """
    if not hasattr(other, "keys"):
        raise TypeError(f"argument after ** must be a mapping, not {type(other).__name__}")
    mapping = t.cast(Mapping[object, object], other)
    for key in mapping.keys():
        if key in d:
            raise TypeError(f"got multiple values for keyword argument '{key}'")
        d[key] = mapping[key]


def make_function(
    code: types.CodeType,
    owner: types.FunctionType,
    defaults: tuple[object, ...] | None = None,
    kwdefaults: dict[str, object] | None = None,
    closure: tuple[types.CellType, ...] | None = None,
    annotations: object = None,
) -> types.FunctionType:
    """A nested function or lambda, exactly as MAKE_FUNCTION makes it.

    ``owner`` is the function whose code creates it: the new function shares its globals.
    """
    fn = types.FunctionType(code, owner.__globals__, code.co_name, defaults, closure)
    fn.__qualname__ = code.co_qualname
    if kwdefaults is not None:
        fn.__kwdefaults__ = kwdefaults
    if annotations is not None:
        if isinstance(annotations, tuple):  # CPython 3.10+ passes (name, value, ...) pairs
            annotations = dict(zip(annotations[::2], annotations[1::2]))
        fn.__annotations__ = t.cast(dict[str, t.Any], annotations)
    return fn


class GenexprFunction:
    """A generator expression's function, run eagerly: calling it returns a list of the values.

    gibbous supports generator expressions as the argument of a consumer that exhausts them
    (``sum``, ``max``, ``tuple``, ...), where a list gives the same result; laziness is lost.
    ``gibbous.frontend.function_ir`` builds the IR of ``fn`` as a function returning that list.
    """

    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn

    def __call__(self, *args: object) -> list[object]:
        return list(t.cast(Iterator[object], self.fn(*args)))

    def __repr__(self) -> str:
        return f"<generator expression {self.fn.__qualname__} run eagerly>"


def make_genexpr(
    code: types.CodeType, owner: types.FunctionType, closure: tuple[types.CellType, ...] | None
) -> GenexprFunction:
    """The function of a generator expression, run eagerly (see ``GenexprFunction``)."""
    return GenexprFunction(make_function(code, owner, None, None, closure))


# --- generator functions, lowered ------------------------------------------------------------
# A generator is differentiated as a state machine: its frame (``GeneratorFrame``) holds where it
# stopped and the values live there; each ``next`` is one call of its *resume function*
# (``GeneratorResume``), whose IR (built by ``function_ir``) loads the frame, jumps to where the
# generator stopped, and at the next ``yield`` saves the frame and returns the value (``STOP``
# at the end).  Each step is an ordinary call on the tape.


class GeneratorResume:
    """The resume function of the generator function ``fn`` (see above).  ``function_ir``
    builds its IR, taking one argument: the ``GeneratorFrame``."""

    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType) -> None:
        self.fn = fn

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GeneratorResume) and other.fn is self.fn

    def __hash__(self) -> int:
        return hash(self.fn)

    def __repr__(self) -> str:
        return f"<resume function of the generator {self.fn.__qualname__}>"


class GeneratorFrame:
    """A generator being differentiated: its function, where it stopped (``label``: 0 not
    started, -1 finished or running) and the values live there (the arguments, at first).

    Only the differentiated code steps it (a ``for`` loop, ``next``); anything else that
    iterates it is refused, since it would run the generator without recording it."""

    __slots__ = ("fn", "label", "values")

    def __init__(self, fn: types.FunctionType, values: tuple[object, ...]) -> None:
        self.fn, self.label, self.values = fn, 0, values

    def __iter__(self) -> GeneratorFrame:
        return self

    def __next__(self) -> object:
        from gibbous.ir.exceptions import GibbousError

        code = self.fn.__code__
        raise GibbousError(
            f"the generator {self.fn.__qualname__}() ({code.co_filename}:{code.co_firstlineno})"
            " is differentiated step by step, and only a "
            "for loop or next() in the differentiated code can step it; a library function "
            "iterating it (list(), zip(), enumerate(), ...) cannot.  Iterate it with a for "
            "loop, or make the generator return a list"
        )

    def __repr__(self) -> str:
        return f"<generator {self.fn.__qualname__} differentiated, at {self.label}>"


def load_frame(frame: GeneratorFrame) -> tuple[int, tuple[object, ...]]:
    """Where the generator stopped and the values saved there; from now on it is running (an
    exception out of it finishes it, as in CPython)."""
    label, values = frame.label, frame.values
    frame.label, frame.values = -1, ()
    return label, values


def save_frame(frame: GeneratorFrame, label: int, *values: object) -> None:
    """The generator stops at ``label`` (-1: it finished) with ``values`` live."""
    frame.label, frame.values = label, values


# --- iteration -------------------------------------------------------------------------------


def next_or_stop(it: Iterator[object]) -> object:
    """``next(it)``, or ``STOP`` when the iterator is exhausted (FOR_ITER)."""
    try:
        return next(it)
    except StopIteration:
        return STOP


def is_stop(value: object) -> bool:
    return value is STOP


# --- locals and cells ------------------------------------------------------------------------


def check_bound(value: object, name: str) -> object:
    """``value``, or UnboundLocalError if the local ``name`` holds ``UNBOUND``."""
    if value is UNBOUND:
        raise UnboundLocalError(
            f"cannot access local variable '{name}' where it is not associated with a value"
        )
    return value


def name_error(name: str) -> t.NoReturn:
    """A global that did not exist when the IR was built, read at run time."""
    raise NameError(f"name '{name}' is not defined")


def imported(name: str, fromlist: object, level: int, package: str | None) -> types.ModuleType | None:
    """What ``import name`` (``from name import fromlist``) gives, if the module is imported
    already (in ``sys.modules``: importing it again runs nothing); else None."""
    try:
        absolute = importlib.util.resolve_name("." * level + name, package) if level else name
    except (ImportError, ValueError):
        return None
    if fromlist:
        return sys.modules.get(absolute)
    if absolute not in sys.modules:
        return None
    return sys.modules.get(absolute.partition(".")[0])  # (``import a.b`` binds ``a``)


def import_name(name: str, fromlist: object, level: int, package: str | None) -> object:
    """``import name`` of a module not imported when the IR was built: imported when the
    code gets here, as Python would."""
    scope = {"__package__": package, "__name__": package or "__main__"}
    return importlib.__import__(name, scope, None, t.cast(t.Any, fromlist), level)


def import_from(module: types.ModuleType, name: str) -> object:
    """One name of ``from module import name``: an attribute, or a submodule not imported
    yet."""
    try:
        return getattr(module, name)
    except AttributeError:
        return importlib.import_module(f"{module.__name__}.{name}")


def make_cell(value: object = UNBOUND) -> types.CellType:
    """A new cell for a local captured by a nested function (empty if ``UNBOUND``)."""
    return types.CellType() if value is UNBOUND else types.CellType(value)


def closure_cell(fn: types.FunctionType, index: int) -> types.CellType:
    """Cell ``index`` of ``fn``'s closure (its free variables, in ``co_freevars`` order)."""
    assert fn.__closure__ is not None
    return fn.__closure__[index]


def cell_get(cell: types.CellType, name: str, free: bool = False) -> object:
    """The contents of ``cell``; an empty cell raises what CPython raises for ``name``."""
    try:
        return cell.cell_contents
    except ValueError:
        pass
    if free:
        raise NameError(
            f"cannot access free variable '{name}' where it is not associated with a value"
            " in enclosing scope"
        )
    raise UnboundLocalError(
        f"cannot access local variable '{name}' where it is not associated with a value"
    )


def cell_set(cell: types.CellType, value: object) -> None:
    cell.cell_contents = value


def cell_delete(cell: types.CellType, name: str, free: bool = False) -> None:
    cell_get(cell, name, free)
    del cell.cell_contents


# --- exceptions and strings ------------------------------------------------------------------


def _exception(exc: object, what: str) -> BaseException:
    if isinstance(exc, type) and issubclass(exc, BaseException):
        made = exc()
        if not isinstance(made, BaseException):
            raise TypeError(
                f"calling {exc!r} should have returned an instance of BaseException,"
                f" not {type(made).__name__}"
            )
        return made
    if isinstance(exc, BaseException):
        return exc
    raise TypeError(f"{what} must derive from BaseException")


def exception_instance(exc: object) -> BaseException:
    """What ``raise exc`` raises: ``exc`` itself, or a new instance if it is a class."""
    return _exception(exc, "exceptions")


def exception_with_cause(exc: object, cause: object) -> BaseException:
    """What ``raise exc from cause`` raises."""
    value = _exception(exc, "exceptions")
    value.__cause__ = None if cause is None else _exception(cause, "exception causes")
    return value


def exception_matches(exc: BaseException, kind: object) -> bool:
    """``except kind:`` matching ``exc``: ``kind`` must be an exception class or a tuple of
    them (CPython's TypeError otherwise)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if not (isinstance(k, type) and issubclass(k, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException is not allowed")
    return isinstance(exc, t.cast(tuple[type, ...], kinds))


def build_string(*parts: str) -> str:
    """The pieces of an f-string, joined."""
    return "".join(parts)


# --- calling IR functions --------------------------------------------------------------------



class _EmptyDefault:
    """Stands for a default that is ``inspect.Parameter.empty`` itself (``inspect.Parameter``'s
    own ``default=_empty``), which a ``Signature`` would read as no default at all."""

    def __repr__(self) -> str:
        return "<the default inspect.Parameter.empty>"


EMPTY_DEFAULT = _EmptyDefault()


def code_signature(fn: t.Callable[..., object]) -> inspect.Signature:
    """The parameters of ``fn``'s own code, which its IR takes: not a ``__signature__`` it was
    given (a decorator's ``wrapper(*args, **kwargs)`` shows the wrapped function's, as
    SciPy's do) nor its ``__wrapped__``'s.  A default that is ``inspect.Parameter.empty`` is
    ``EMPTY_DEFAULT`` here (``given_default`` gives it back)."""
    if not isinstance(fn, types.FunctionType):
        return inspect.signature(fn, follow_wrapped=False)
    defaults, kwdefaults = fn.__defaults__ or (), fn.__kwdefaults__ or {}
    empty = inspect.Parameter.empty
    hidden = any(d is empty for d in (*defaults, *kwdefaults.values()))
    if "__signature__" not in fn.__dict__ and not hidden:
        return inspect.signature(fn, follow_wrapped=False)
    plain = types.FunctionType(
        fn.__code__,
        fn.__globals__,
        fn.__name__,
        tuple(EMPTY_DEFAULT if d is empty else d for d in defaults) or None,
        fn.__closure__,
    )
    plain.__kwdefaults__ = {k: EMPTY_DEFAULT if d is empty else d for k, d in kwdefaults.items()}
    return inspect.signature(plain, follow_wrapped=False)


def given_default(value: object) -> object:
    """A parameter's value from a ``code_signature``'s binding: ``EMPTY_DEFAULT`` is
    ``inspect.Parameter.empty``."""
    return inspect.Parameter.empty if value is EMPTY_DEFAULT else value

def bind_arguments(
    fn: t.Callable[..., object], args: t.Sequence[object], kwargs: Mapping[str, object]
) -> tuple[object, ...]:
    """The arguments of the IR of ``fn`` for the call ``fn(*args, **kwargs)``.

    The IR takes its code's arguments in ``co_varnames`` order (positional, keyword-only,
    then the ``*args`` tuple and the ``**kwargs`` dict), all explicit: defaults applied here.
    """
    target = fn.fn if isinstance(fn, GenexprFunction) else fn
    bound = code_signature(target).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(map(given_default, bound.arguments.values()))


# --- the name registry -----------------------------------------------------------------------


class _Registered(types.SimpleNamespace):
    """Registered objects as attributes, so that ``names.resolve`` finds them by path; those
    held weakly are looked up in ``_weak``."""

    def __getattr__(self, name: str) -> object:
        ref = _weak.get(name)
        obj = None if ref is None else ref()
        if obj is None:
            raise AttributeError(name)
        return obj


registered = _Registered()
_PREFIX = f"{__name__}.registered."
# id(obj) -> (path, a function giving obj back): ids are compared with the object they name
_paths: dict[int, tuple[str, t.Callable[[], object]]] = {}
_weak: dict[str, weakref.ref[object]] = {}  # name -> obj, for objects held weakly
_register_lock = threading.Lock()


def _identifier(hint: str) -> str:
    name = re.sub(r"[\W_]+", "_", hint).strip("_") or "obj"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    return name


def register_object(obj: object, name: str) -> str:
    """Give ``obj`` a printable path, ``gibbous.ir.runtime.registered.<name>``.

    ``name`` is a hint, made an identifier and unique; registering an object again returns its
    first path.  An object that supports weak references (functions, code objects, classes) is
    held weakly, so its path lasts as long as it does (the IR that names it holds it); a local
    function made anew on every call must not pile up here.  Others live as long as the process.
    """
    key = id(obj)
    with _register_lock:  # threads building at once must not take one name for two objects
        known = _paths.get(key)
        if known is not None and known[1]() is obj:
            return known[0]
        base = _identifier(name)
        candidate, n = base, 1
        while hasattr(registered, candidate):
            n += 1
            candidate = f"{base}_{n}"
        path = _PREFIX + candidate
        try:
            held: t.Callable[[], object] = weakref.ref(obj, _forgetter(key, candidate))
        except TypeError:  # no weak references to it
            setattr(registered, candidate, obj)
            held = _Strong(obj)
        else:
            _weak[candidate] = t.cast(weakref.ref[object], held)
        _paths[key] = (path, held)
        return path


def _forgetter(key: int, name: str) -> t.Callable[[object], None]:
    def forget(ref: object) -> None:
        if _weak.get(name) is ref:
            del _weak[name]
        known = _paths.get(key)
        if known is not None and known[1] is ref:  # not a later object with the same id
            del _paths[key]

    return forget


class _Strong:
    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __call__(self) -> object:
        return self.obj


def unregister_object(obj: object) -> None:
    """Forget ``obj``'s path (for tests: printed IR names it again by its own path)."""
    with _register_lock:
        known = _paths.get(id(obj))
        if known is None or known[1]() is not obj:
            return
        del _paths[id(obj)]
        name = known[0][len(_PREFIX) :]
        _weak.pop(name, None)
        registered.__dict__.pop(name, None)


def registered_path(obj: object) -> str | None:
    """The path ``register_object`` gave ``obj``, if any (the hook for ``gibbous.ir.names``)."""
    known = _paths.get(id(obj))
    return known[0] if known is not None and known[1]() is obj else None


names.add_path_provider(registered_path)
