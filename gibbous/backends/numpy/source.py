"""The pieces of generated Python that know nothing about the IR's control flow.

* ``Scope`` hands out Python identifiers that collide with nothing: keywords, builtins, names
  of an enclosing scope or names an enclosed scope already uses.
* ``SourceWriter`` collects indented lines, each with an optional ``# file:line`` comment.
* ``literal`` writes a constant as Python source where that gives back an equal object;
  ``ClosurePool`` binds every other constant to a closure variable of the factory.
* ``define`` compiles a factory's source once and keeps its lines in ``linecache`` while any
  code compiled from it lives; the caller calls the factory with the closure values.

The code generator (``codegen``) builds on these, and so do the AD pass's forward and reverse
programs (``adcodegen``), which share a factory and its closure variables.
"""

from __future__ import annotations

import builtins
import contextlib
import heapq
import keyword
import linecache
import math
import struct
import threading
import types as pytypes
import typing as t
import unicodedata
import weakref

import attrs

from gibbous.ir.core import Location
from gibbous.ir.names import import_path

# Generated code calls no builtin, but a reader would still be misled by a local named ``len``
# or ``sum``; ``__debug__`` cannot even be assigned.  So no generated name is a builtin's,
# except a closure variable that holds that very builtin (``len`` bound to ``len``).
RESERVED: frozenset[str] = frozenset(keyword.kwlist) | frozenset(dir(builtins))


def identifier(hint: str) -> str:
    """A valid Python identifier that reads like ``hint``: ``x.1`` -> ``x_1``, ``2d`` -> ``_2d``."""
    # The parser NFKC-normalises identifiers, so two hints that differ before normalisation
    # could silently become one variable; normalising here lets the scope see the clash.
    text = unicodedata.normalize("NFKC", hint)
    name = "".join(c if ("_" + c).isidentifier() else "_" for c in text) or "_"
    if not name.isidentifier():
        name = "_" + name
    if unicodedata.normalize("NFKC", name) != name:
        name = "".join(c if c.isascii() else "_" for c in name)
    return name


class Scope:
    """The identifiers of one generated scope.

    A name is free if no enclosing scope holds it (it would be shadowed or shadow) and no
    enclosed scope holds it (an enclosing scope must not take a name its children use).
    Sibling scopes may reuse each other's names.
    """

    def __init__(self, parent: Scope | None = None, reserved: t.Iterable[str] = ()) -> None:
        self.parent = parent
        self._own: set[str] = set(reserved)
        self._below: set[str] = set()  # names held by enclosed scopes
        self._next_suffix: dict[str, int] = {}

    def holds(self, name: str) -> bool:
        """True if this scope, an enclosing or an enclosed one has ``name``."""
        if name in self._own or name in self._below:
            return True
        scope = self.parent
        while scope is not None:
            if name in scope._own:
                return True
            scope = scope.parent
        return False

    def is_free(self, name: str) -> bool:
        return name not in RESERVED and not self.holds(name)

    def take(self, name: str, *, builtin: bool = False) -> str:
        """Claim ``name`` exactly: it must be free, or with ``builtin`` a builtin's name
        (for a closure variable holding that very builtin, which shadows nothing)."""
        shadows_nothing = builtin and not keyword.iskeyword(name) and not self.holds(name)
        if not (self.is_free(name) or shadows_nothing):
            raise ValueError(f"{name!r} is already taken")
        self._own.add(name)
        scope = self.parent
        while scope is not None:
            scope._below.add(name)
            scope = scope.parent
        return name

    def fresh(self, hint: str) -> str:
        """``hint`` made an identifier, or with the first free ``_N`` suffix."""
        base = identifier(hint)
        if self.is_free(base):
            return self.take(base)
        return self.numbered(base + "_", start=1)

    def numbered(self, prefix: str, start: int = 0) -> str:
        """The first free ``prefixN``; counting resumes where it stopped, so it stays linear."""
        n = self._next_suffix.get(prefix, start)
        while not self.is_free(f"{prefix}{n}"):
            n += 1
        self._next_suffix[prefix] = n + 1
        return self.take(f"{prefix}{n}")


# --------------------------------------------------------------------------------------------
# Lines


@attrs.frozen
class Line:
    depth: int
    text: str
    comment: str | None = None


def _comment_text(text: str) -> str:
    # A file name holding a newline would end the comment and inject code.
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class SourceWriter:
    """Indented lines of Python, built top to bottom; ``embed`` splices in another writer's."""

    INDENT = "    "

    def __init__(self) -> None:
        self.lines: list[Line] = []
        self.depth = 0

    def line(self, text: str, loc: Location | str | None = None) -> None:
        self.lines.append(Line(self.depth, text, None if loc is None else str(loc)))

    def comment(self, text: str) -> None:
        self.lines.append(Line(self.depth, "", text))

    @contextlib.contextmanager
    def indented(self) -> t.Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def embed(self, suite: SourceWriter) -> None:
        """Append ``suite``'s lines, indented relative to the current depth."""
        self.lines.extend(attrs.evolve(ln, depth=ln.depth + self.depth) for ln in suite.lines)

    def render(self) -> str:
        out = []
        for ln in _fill_empty_suites(self.lines):
            text = self.INDENT * ln.depth + ln.text
            if ln.comment is not None:
                text += ("  # " if ln.text else "# ") + _comment_text(ln.comment)
            out.append(text)
        return "\n".join(out) + "\n"


def _fill_empty_suites(lines: t.Sequence[Line]) -> list[Line]:
    """``pass`` under every ``if``/``else``/``while`` whose body holds no statement.

    The emitter cannot always know whether an arm will write anything (a jump to the block that
    is written next writes nothing), so empty suites are found here, once, on the finished text.
    """
    out: list[Line] = []
    for i, ln in enumerate(lines):
        out.append(ln)
        if not ln.text.endswith(":"):
            continue
        body = next((lines[j] for j in range(i + 1, len(lines)) if lines[j].text), None)
        if body is None or body.depth <= ln.depth:
            out.append(Line(ln.depth + 1, "pass", None))
    return out


# --------------------------------------------------------------------------------------------
# Constants


def literal(value: object) -> str | None:
    """Python source that evaluates to an object equal to ``value``, of the same type, or None.

    Only for types whose literal is exact: ``int``, finite ``float`` (``repr`` round-trips),
    ``str``, ``bytes``, ``bool``, ``None``, ``...`` and tuples of those.  Not for subclasses
    (an ``IntEnum`` or ``np.float64`` must keep its type), nor for ``inf`` and ``nan``, which
    have no literal.  The object is equal, not identical: ``is`` on constants needs the closure.
    """
    if value is None or value is True or value is False:
        return repr(value)
    if value is Ellipsis:
        return "..."
    kind = type(value)
    if kind is int:
        # Beyond ~4300 digits int <-> str conversion is refused; far before that it is unreadable.
        return repr(value) if t.cast(int, value).bit_length() <= 256 else None
    if kind is float:
        return repr(value) if math.isfinite(t.cast(float, value)) else None
    if kind is str or kind is bytes:
        return repr(value)
    if kind is tuple:
        items = [literal(v) for v in t.cast(tuple[object, ...], value)]
        if any(s is None for s in items):
            return None
        if len(items) == 1:
            return f"({items[0]},)"
        return "(" + ", ".join(t.cast(list[str], items)) + ")"
    return None


def _closure_hint(value: object) -> tuple[str, ...]:
    """Candidate names for a closure variable holding ``value``, most readable first."""
    if type(value) is float:
        x = value
        return ("nan",) if math.isnan(x) else ("inf",) if x > 0 else ("neg_inf",)
    try:
        path = import_path(value) if callable(value) else None
    except Exception:  # a name is a nicety: an odd object must not stop compilation
        path = None
    if path is not None:
        parts = path.split(".")
        module = {"numpy": "np", "builtins": "builtin"}.get(parts[0], parts[0])
        return (parts[-1], "_".join([module, *parts[1:]]))
    name = getattr(value, "__name__", None)
    return (name,) if isinstance(name, str) and name.isidentifier() else ()


class ClosurePool:
    """The values a factory binds as closure variables, each once, with readable names."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.names: list[str] = []
        self.values: list[object] = []
        self._by_key: dict[object, str] = {}

    @staticmethod
    def _key(value: object) -> object:
        # By identity: binding an object must give the generated code that very object.
        # Non-finite floats (the only floats bound here) by bits, so every nan is one variable.
        if type(value) is float:
            return ("float", struct.pack("<d", value))
        return id(value)

    def bind(self, value: object, hint: str | None = None) -> str:
        """The closure variable holding ``value``, made on first use."""
        key = self._key(value)
        name = self._by_key.get(key)
        if name is not None:
            return name
        candidates = (hint,) if hint is not None else _closure_hint(value)
        for candidate in map(identifier, candidates):
            if self.scope.is_free(candidate):
                name = self.scope.take(candidate)
                break
            if getattr(builtins, candidate, None) is value and not self.scope.holds(candidate):
                name = self.scope.take(candidate, builtin=True)
                break
        else:
            name = self.scope.fresh(hint) if hint is not None else self.scope.numbered("c")
        self._by_key[key] = name
        self.names.append(name)
        self.values.append(value)
        return name

    def ref(self, value: object) -> str:
        """``value`` as a literal where exact, else its closure variable."""
        text = literal(value)
        return text if text is not None else self.bind(value)


# --------------------------------------------------------------------------------------------
# Compiling


_filename_lock = threading.Lock()
# name -> (the next number never used, numbers given back); filename -> (name, number).
_filename_numbers: dict[str, tuple[int, list[int]]] = {}
_filenames: dict[str, tuple[str, int]] = {}


def unique_filename(name: str) -> str:
    """``<gibbous:name>``, then ``<gibbous:name#2>``, ...: one per live compiled factory.

    A number comes back for reuse once nothing compiled under it lives (see ``define``):
    ``compile`` interns file names, so fresh ones would be kept for the life of the process."""
    name = _comment_text(name).replace(">", "_")
    with _filename_lock:
        unused, returned = _filename_numbers.get(name, (1, []))
        if returned:
            n = heapq.heappop(returned)
        else:
            n, unused = unused, unused + 1
        _filename_numbers[name] = (unused, returned)
        filename = f"<gibbous:{name}>" if n == 1 else f"<gibbous:{name}#{n}>"
        _filenames[filename] = (name, n)
    return filename


def _give_back(filename: str) -> None:
    with _filename_lock:
        taken = _filenames.pop(filename, None)
        if taken is not None:
            heapq.heappush(_filename_numbers[taken[0]][1], taken[1])


def define(source: str, filename: str, factory: str) -> t.Callable[..., object]:
    """Compile ``source`` and return its ``factory`` function, not yet called.

    The source goes into ``linecache`` under ``filename`` so that tracebacks and debuggers show
    generated lines, for as long as any code object compiled from it lives: the factory, the
    functions it makes, or a frame of a traceback that passed through them.  (It used to stay
    for the life of the process: about 5 KiB for every rule built and dropped.)  The factory may
    be called any number of times, each call binding a fresh set of closure values (the AD pass
    makes one set per rule instance from one compilation).
    """
    code = compile(source, filename, "exec")
    lines = source.splitlines(True)
    # mtime None marks the entry as not backed by a file, so linecache.checkcache keeps it.
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace: dict[str, object] = {"__builtins__": builtins, "__name__": "gibbous.generated"}
    exec(code, namespace)
    made = t.cast(t.Callable[..., object], namespace[factory])
    _forget_with(made.__code__, filename, lines)
    return made


def _forget_with(code: pytypes.CodeType, filename: str, lines: list[str]) -> None:
    """Drop ``filename``'s ``linecache`` entry once ``code`` and every code object nested in it
    are gone (a frame keeps its code alive, so a traceback keeps its lines)."""
    alive: set[int] = set()

    def gone(key: int) -> None:
        alive.discard(key)
        if alive:
            return
        entry: tuple[t.Any, ...] = linecache.cache.get(filename, ())
        if len(entry) == 4 and entry[2] is lines:  # not an entry someone else made
            del linecache.cache[filename]
        _give_back(filename)

    stack = [code]
    while stack:
        c = stack.pop()
        alive.add(id(c))
        weakref.finalize(c, gone, id(c))
        stack.extend(k for k in c.co_consts if isinstance(k, pytypes.CodeType))


def negated(cond: str) -> str:
    """``not cond``, parenthesised where ``cond`` is not a name."""
    return f"not {cond}" if cond.isidentifier() else f"not ({cond})"


def keyword_argument(name: str, value: str) -> str:
    """``name=value`` in a call, or ``**{'name': value}`` where ``name`` is not an identifier."""
    ok = name.isidentifier() and not keyword.iskeyword(name)
    if ok and unicodedata.normalize("NFKC", name) == name:
        return f"{name}={value}"
    return f"**{{{name!r}: {value}}}"


def index_literal(value: object) -> str | None:
    """Subscript syntax for a constant index: ``1:n:2``, ``..., 0``, ``i,``; or None."""
    if type(value) is tuple:
        items = [index_item(v) for v in t.cast(tuple[object, ...], value)]
        if any(s is None for s in items):
            return None
        parts = t.cast(list[str], items)
        return "()" if not parts else parts[0] + "," if len(parts) == 1 else ", ".join(parts)
    return index_item(value)


def index_item(value: object) -> str | None:
    if type(value) is slice:
        parts = [value.start, value.stop, value.step]
        texts = ["" if p is None else literal(p) for p in parts]
        if any(s is None for s in texts):
            return None
        start, stop, step = t.cast(list[str], texts)
        return f"{start}:{stop}" if value.step is None else f"{start}:{stop}:{step}"
    return literal(value)
