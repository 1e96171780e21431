"""Import paths of Python objects: ``numpy.sin`` <-> the ufunc itself.

The text form names callables, classes and modules by the path that imports them.  A path is
accepted only if resolving it gives back the very same object (or, for bound builtin methods,
which Python re-creates on every access, an equal one).
"""

from __future__ import annotations

import builtins
import functools
import importlib
import sys
import types
import typing as t
import weakref

# Searched first, in this order, so that objects print by the name people write:
# ``operator.mul`` rather than ``_operator.mul``, ``numpy.sum`` rather than a private module.
_PREFERRED_MODULES = (
    "builtins",
    "operator",
    "math",
    "cmath",
    "numpy",
    "numpy.linalg",
    "numpy.fft",
    "numpy.random",
    "functools",
    "itertools",
    "types",
)


class UnresolvablePath(LookupError):
    pass


@functools.cache
def _preferred_names() -> dict[int, tuple[str, object]]:
    table: dict[int, tuple[str, object]] = {}
    for modname in reversed(_PREFERRED_MODULES):  # earlier modules win
        try:
            module = importlib.import_module(modname)
        except ImportError:  # pragma: no cover - all are stdlib or numpy
            continue
        table[id(module)] = (modname, module)
        seen: set[int] = set()
        for name, obj in vars(module).items():
            if name.startswith("_"):
                continue
            # Within a module an alias loses to the object's own name: numpy.float32, not single.
            if id(obj) in seen and getattr(obj, "__name__", None) != name:
                continue
            seen.add(id(obj))
            table[id(obj)] = (f"{modname}.{name}", obj)
    return table


def resolve(path: str) -> object:
    """The object that ``path`` imports: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        modname = ".".join(parts[:cut])
        try:
            obj: object = importlib.import_module(modname)
        except ImportError:
            continue
        except Exception as e:  # a module that fails on import is not a usable path
            raise UnresolvablePath(f"importing {modname!r} failed: {e}") from e
        for i, attr in enumerate(parts[cut:], start=cut):
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                owner = ".".join(parts[:i])
                raise UnresolvablePath(f"{owner!r} has no attribute {attr!r}") from None
        return obj
    if len(parts) == 1 and hasattr(builtins, path):
        return getattr(builtins, path)
    raise UnresolvablePath(f"no module named {parts[0]!r}")


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    if isinstance(a, types.BuiltinMethodType | types.MethodType) and type(a) is type(b):
        try:
            return bool(a == b)
        except Exception:  # pragma: no cover - defensive
            return False
    return False


_PATH_PROVIDERS: list[t.Callable[[object], str | None]] = []


def add_path_provider(provider: t.Callable[[object], str | None]) -> None:
    """Let another layer name objects that have no import path of their own.

    The frontend registers nested code objects and closures this way; ``provider(obj)`` returns
    a path that ``resolve`` maps back to ``obj``, or ``None``.  Providers are asked first.
    """
    if provider not in _PATH_PROVIDERS:
        _PATH_PROVIDERS.append(provider)


# Objects a transform puts into the IR that have no import path (a rule's placeholders, a
# forward rule's tangent function) print under a name given here.  The text does not parse
# back: it is for reading.  Held weakly: a rule built and dropped takes them with it.
_PRINTED: dict[int, tuple[weakref.ref[object], str]] = {}
_O = t.TypeVar("_O")


def _printed_path(obj: object) -> str | None:
    hit = _PRINTED.get(id(obj))
    return hit[1] if hit is not None and hit[0]() is obj else None


def printable(obj: _O, path: str) -> _O:
    """``obj``, which the IR's text now names ``path`` while it lives (for reading only)."""
    key = id(obj)

    def forget(ref: weakref.ref[object]) -> None:
        if _PRINTED.get(key, (None,))[0] is ref:  # not a later object with the same id
            del _PRINTED[key]

    try:
        _PRINTED[key] = (weakref.ref(obj, forget), path)
    except TypeError:  # (no weak reference to it: it stays unprintable)
        pass
    return obj


def import_path(obj: object) -> str | None:
    """A dotted path that ``resolve`` maps back to ``obj``, or ``None`` if there is none."""
    for provider in _PATH_PROVIDERS:
        path = provider(obj)
        if path is not None:
            return path
    path = _printed_path(obj)
    if path is not None:
        return path
    hit = _preferred_names().get(id(obj))
    if hit is not None and hit[1] is obj:
        return hit[0]
    candidates: list[str] = []
    if isinstance(obj, types.ModuleType):
        candidates.append(obj.__name__)
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        candidates.append(f"{module}.{qualname}")
    if not isinstance(obj, type):
        # On a class, __objclass__ and __self__ are descriptors of the class's own instances;
        # following them would lead back to a class (types.MethodType loops forever).
        candidates.extend(_owner_paths(obj))
    for path in candidates:
        try:
            if _same(obj, resolve(path)):
                return path
        except UnresolvablePath:
            continue
    return None


def _owner_paths(obj: object) -> list[str]:
    """Paths through the object that owns ``obj``: a method descriptor's class, a bound
    method's self (``numpy.ndarray.sum``, ``numpy.add.reduce``)."""
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return []
    paths = []
    objclass = getattr(obj, "__objclass__", None)
    if isinstance(objclass, type):
        owner = import_path(objclass)
        if owner is not None:
            paths.append(f"{owner}.{name}")
    self_obj = getattr(obj, "__self__", None)
    if self_obj is not None and not isinstance(self_obj, types.ModuleType):
        owner = import_path(self_obj)
        if owner is not None:
            paths.append(f"{owner}.{name}")
    return paths


# --------------------------------------------------------------------------------------------
# Public names: where users import an object from (for messages, and as the hint a registered
# object is named by), looked for only in modules already imported: naming never imports.

_PUBLIC_MODULES = (
    "numpy", "numpy.linalg", "numpy.fft", "numpy.random",
    "scipy.special", "scipy.linalg", "scipy.stats", "scipy.optimize", "scipy.integrate",
    "scipy.interpolate", "scipy.signal", "scipy.fft", "scipy.ndimage", "scipy.sparse",
    "scipy.sparse.linalg", "scipy.spatial", "scipy.cluster",
)  # fmt: skip

# module name -> id(obj) -> (public name, obj); the object kept so that an id is not reused
_tables: dict[str, dict[int, tuple[str, object]]] = {}


def _table(modname: str) -> dict[int, tuple[str, object]]:
    module = sys.modules.get(modname)
    if module is None:
        return {}
    table = _tables.get(modname)
    if table is None:
        table = {}
        for name, obj in list(vars(module).items()):
            if name.startswith("_"):
                continue
            # An alias loses to the object's own name (scipy.special.digamma, not psi).
            known = table.get(id(obj))
            if known is None or getattr(obj, "__name__", None) == name:
                table[id(obj)] = (f"{modname}.{name}", obj)
        _tables[modname] = table
    return table


def public_name(obj: object) -> str | None:
    """A public name of ``obj`` in an imported module of ``_PUBLIC_MODULES``, or of the class
    or instance a method belongs to; None if there is none."""
    for modname in _PUBLIC_MODULES:
        hit = _table(modname).get(id(obj))
        if hit is not None and hit[1] is obj:
            return hit[0]
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    receiver = getattr(obj, "__self__", None)
    bound = isinstance(obj, (types.MethodType, types.BuiltinMethodType))
    if bound and receiver is not None and not isinstance(receiver, (types.ModuleType, type)):
        # A method of a public instance (scipy.stats.norm.cdf), else of its public class.
        owner = public_name(receiver) or public_name(type(receiver))
        return f"{owner}.{name}" if owner is not None else None
    objclass = getattr(obj, "__objclass__", None)  # a method of a builtin class
    if isinstance(objclass, type):
        owner = public_name(objclass)
        return f"{owner}.{name}" if owner is not None else None
    qualname, module = getattr(obj, "__qualname__", ""), getattr(obj, "__module__", None)
    head, _, last = qualname.rpartition(".")
    if head and "." not in head and "<" not in head and last == name and module in sys.modules:
        cls = getattr(sys.modules[module], head, None)
        owner = public_name(cls) if isinstance(cls, type) else None
        if owner is not None and vars(cls).get(name) is obj:
            return f"{owner}.{name}"
    return None


def callable_key(fn: object) -> tuple[object, ...]:
    """The key the tables of facts about callables (rules, type rules, purity) use: identity,
    except that bound methods of an object (``numpy.add.reduce``, re-created on each attribute
    access) are keyed by their owner and name."""
    # The type first: a user object's __getattr__ is not to run on every lookup.
    if isinstance(fn, (types.BuiltinMethodType, types.MethodType)):
        owner = fn.__self__
        if owner is not None and not isinstance(owner, types.ModuleType):
            return ("method", id(owner), fn.__name__)
    return ("object", id(fn))


K = t.TypeVar("K")
V = t.TypeVar("V")
D = t.TypeVar("D")


class CallableTable(t.Generic[K, V]):
    """A table of facts about callables, looked up by ``callable_key``: never by ``==`` or
    ``hash``, which a callee defines for itself (an object equal to everything must not borrow
    ``operator.mul``'s facts, an unhashable one must not crash the lookup).  Each entry keeps
    its callable, so that the ids in its key stay its own."""

    def __init__(self, items: t.Iterable[tuple[K, V]] = ()) -> None:
        self._entries: dict[tuple[object, ...], tuple[K, V]] = {}
        for fn, value in items:
            self[fn] = value

    def __setitem__(self, fn: K, value: V) -> None:
        self._entries[callable_key(fn)] = (fn, value)

    def __getitem__(self, fn: object) -> V:
        return self._entries[callable_key(fn)][1]

    def __contains__(self, fn: object) -> bool:
        return callable_key(fn) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> t.Iterator[K]:
        return (fn for fn, _ in self._entries.values())

    @t.overload
    def get(self, fn: object) -> V | None: ...
    @t.overload
    def get(self, fn: object, default: D) -> V | D: ...
    def get(self, fn: object, default: object = None) -> object:
        entry = self._entries.get(callable_key(fn))
        return default if entry is None else entry[1]

    def pop(self, fn: object) -> V | None:
        entry = self._entries.pop(callable_key(fn), None)
        return None if entry is None else entry[1]

    def items(self) -> t.Iterator[tuple[K, V]]:
        return iter(list(self._entries.values()))

    def values(self) -> t.Iterator[V]:
        return (value for _, value in self._entries.values())


class CallableSet(CallableTable[K, None]):
    """A set of callables by ``callable_key`` (see ``CallableTable``)."""

    def __init__(self, fns: t.Iterable[K] = ()) -> None:
        super().__init__((fn, None) for fn in fns)

    def add(self, fn: K) -> None:
        self[fn] = None
