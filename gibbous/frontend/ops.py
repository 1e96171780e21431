"""Version-neutral stack operations: what every CPython version's opcodes are decoded into.

Each Python version has its own table (``py311``, ``py312``, ``py313``) mapping its opcodes to
these operations; everything after decoding (blocks, SSA) sees only these.  There is one stack
convention for all of them.  In the stack effects below the stack top is on the right;
``NULL`` is the marker CPython pushes beside a callable.

Calls.  The two slots below a call's arguments hold ``{callable, self-or-NULL}`` in either
order: if one slot is NULL the other is the callable (3.11 and 3.12 push NULL first, 3.13
second); otherwise the lower slot is a method and the upper one its ``self``, passed as the
first argument.  This covers every version's ``CALL`` without a per-version case, and also
``assert c, msg`` (whose ``AssertionError`` and message fill both slots).  Method loads decode
to ``LoadAttr`` + ``PushNull``: we call the bound method ``getattr`` returns.

Jumps carry their target as a bytecode offset; ``decode`` resolves it to an operation index.
"""

from __future__ import annotations

import typing as t

import attrs


class Op:
    """Base of the neutral operations."""

    __slots__ = ()


# --- constants, locals, globals, cells -------------------------------------------------------


@attrs.frozen
class LoadConst(Op):
    """``-- value``"""

    value: object


@attrs.frozen
class LoadFast(Op):
    """``-- local``.  Raises UnboundLocalError if the local is unbound.

    ``checked`` records that CPython itself checks here (LOAD_FAST_CHECK); the SSA builder
    decides independently where a check is needed, so it is informative only.
    """

    name: str
    checked: bool = False


@attrs.frozen
class LoadFastAndClear(Op):
    """``-- local-or-unbound``, and the local becomes unbound (3.12+ inlined comprehensions)."""

    name: str


@attrs.frozen
class StoreFast(Op):
    """``value --``.  Storing the unbound marker (pushed by LoadFastAndClear) unbinds."""

    name: str


@attrs.frozen
class DeleteFast(Op):
    """``--``.  Raises UnboundLocalError if the local is unbound."""

    name: str


@attrs.frozen
class LoadGlobal(Op):
    """``-- global``: a module global or builtin, read once when the IR is built."""

    name: str


@attrs.frozen
class ImportName(Op):
    """``level fromlist -- module``: ``import name`` (``from name import ...``): the module
    itself where it is imported already, else imported when the code runs."""

    name: str


@attrs.frozen
class ImportFrom(Op):
    """``module -- module module.name``: one name of ``from module import name``."""

    name: str


@attrs.frozen
class SuperAttr(Op):
    """``super cls obj -- super(cls, obj).name`` (3.12's LOAD_SUPER_ATTR; ``zero_args``:
    written ``super().name``, ``cls`` read from the ``__class__`` cell)."""

    name: str
    zero_args: bool


@attrs.frozen
class MakeCell(Op):
    """``--``: the local ``name`` becomes a cell holding its value (empty if unbound)."""

    name: str


@attrs.frozen
class CopyFreeVars(Op):
    """``--``: the function's ``n`` free variables become locals holding its closure cells."""

    n: int


@attrs.frozen
class LoadDeref(Op):
    """``-- contents of the cell in local name``"""

    name: str


@attrs.frozen
class StoreDeref(Op):
    """``value --``: into the cell held by local ``name``."""

    name: str


@attrs.frozen
class DeleteDeref(Op):
    """``--``: empty the cell held by local ``name``."""

    name: str


@attrs.frozen
class PushNull(Op):
    """``-- NULL``"""


# --- attributes, items, operators ------------------------------------------------------------


@attrs.frozen
class LoadAttr(Op):
    """``obj -- obj.name``"""

    name: str


@attrs.frozen
class StoreAttr(Op):
    """``value obj --``: ``obj.name = value``."""

    name: str


@attrs.frozen
class DeleteAttr(Op):
    """``obj --``"""

    name: str


@attrs.frozen
class GetItem(Op):
    """``container key -- container[key]``"""


@attrs.frozen
class SetItem(Op):
    """``value container key --``"""


@attrs.frozen
class DelItem(Op):
    """``container key --``"""


@attrs.frozen
class BuildSlice(Op):
    """``start stop [step] -- slice``; ``n`` is 2 or 3."""

    n: int


@attrs.frozen
class BinaryOp(Op):
    """``a b -- fn(a, b)``; ``fn`` is the ``operator`` callable, ``operator.iadd`` for ``+=``."""

    fn: t.Callable[..., object]


@attrs.frozen
class UnaryOp(Op):
    """``a -- fn(a)``: ``operator.neg``, ``pos``, ``invert`` or ``not_``."""

    fn: t.Callable[..., object]


@attrs.frozen
class Compare(Op):
    """``a b -- fn(a, b)``: ``operator.lt``, ``le``, ``eq``, ``ne``, ``gt`` or ``ge``."""

    fn: t.Callable[..., object]


@attrs.frozen
class IsOp(Op):
    """``a b -- a is b`` (``is not`` if ``invert``)."""

    invert: bool


@attrs.frozen
class ContainsOp(Op):
    """``a b -- a in b`` (``not in`` if ``invert``)."""

    invert: bool


# --- calls and functions ---------------------------------------------------------------------


@attrs.frozen
class Call(Op):
    """``slot0 slot1 arg1 .. argN [kwnames] -- result`` (see the module docstring for slots).

    ``argc`` counts every argument, keyword ones included.  With ``kw`` the top of the stack
    is the constant tuple of keyword names, naming the last ``len(kwnames)`` arguments.
    """

    argc: int
    kw: bool = False


@attrs.frozen
class CallEx(Op):
    """``slot0 slot1 args [kwargs] -- result``: ``f(*args, **kwargs)``."""

    has_kwargs: bool


@attrs.frozen
class MakeFunction(Op):
    """``code -- function``: a new function of the code, attributes set by the next ops."""


@attrs.frozen
class SetFunctionAttribute(Op):
    """``attr function -- function``.  ``flag`` is CPython's: 1 defaults, 2 keyword-only
    defaults, 4 annotations, 8 closure."""

    flag: int


# --- containers ------------------------------------------------------------------------------


@attrs.frozen
class BuildTuple(Op):
    """``x1 .. xn -- (x1, .., xn)``"""

    n: int


@attrs.frozen
class BuildList(Op):
    """``x1 .. xn -- [x1, .., xn]``"""

    n: int


@attrs.frozen
class BuildSet(Op):
    """``x1 .. xn -- {x1, .., xn}``"""

    n: int


@attrs.frozen
class BuildMap(Op):
    """``k1 v1 .. kn vn -- {k1: v1, ..}``"""

    n: int


@attrs.frozen
class BuildConstKeyMap(Op):
    """``v1 .. vn keys -- dict(zip(keys, values))``; ``keys`` a constant tuple."""

    n: int


@attrs.frozen
class ListAppend(Op):
    """``v --``: appends to the list at depth ``i`` (counted after popping ``v``)."""

    i: int


@attrs.frozen
class ListExtend(Op):
    """``iterable --``: extends the list at depth ``i``."""

    i: int


@attrs.frozen
class SetAdd(Op):
    """``v --``: adds to the set at depth ``i``."""

    i: int


@attrs.frozen
class SetUpdate(Op):
    """``iterable --``: updates the set at depth ``i``."""

    i: int


@attrs.frozen
class MapAdd(Op):
    """``key value --``: stores into the dict at depth ``i``."""

    i: int


@attrs.frozen
class DictUpdate(Op):
    """``mapping --``: ``dict.update`` of the dict at depth ``i``."""

    i: int


@attrs.frozen
class DictMerge(Op):
    """``mapping --``: like DictUpdate, but a repeated key is an error (``f(**a, **b)``)."""

    i: int


@attrs.frozen
class ListToTuple(Op):
    """``list -- tuple(list)``"""


@attrs.frozen
class UnpackSequence(Op):
    """``seq -- xn .. x1``: the first item ends on top."""

    n: int


@attrs.frozen
class UnpackEx(Op):
    """``seq -- x_last .. [middle] .. x1``: ``before`` items, a list, ``after`` items."""

    before: int
    after: int


# --- strings ---------------------------------------------------------------------------------


@attrs.frozen
class ConvertValue(Op):
    """``v -- conversion(v)``: the ``!s``, ``!r``, ``!a`` of an f-string (``str``, ``repr``,
    ``ascii``)."""

    conversion: t.Callable[[object], str]


@attrs.frozen
class FormatValue(Op):
    """``v [spec] -- format(v, spec)``"""

    has_spec: bool


@attrs.frozen
class BuildString(Op):
    """``s1 .. sn -- s1 + .. + sn``"""

    n: int


# --- control flow ----------------------------------------------------------------------------


@attrs.frozen
class GetIter(Op):
    """``x -- iter(x)``"""


@attrs.frozen
class ForIter(Op):
    """``it -- it next(it)``, or, when ``it`` is exhausted, ``it --`` and jump to ``exit``."""

    exit: int


@attrs.frozen
class Jump(Op):
    """``--`` and jump to ``target``."""

    target: int


@attrs.frozen
class PopJumpIf(Op):
    """``x --`` and jump to ``target`` if ``truth(x) == value``.

    With ``none_check`` the test is ``(x is None) == value`` instead.
    """

    value: bool
    target: int
    none_check: bool = False


@attrs.frozen
class JumpIfOrPop(Op):
    """``x -- x`` and jump to ``target`` if ``truth(x) == value``; else ``x --``."""

    value: bool
    target: int


@attrs.frozen
class Return(Op):
    """``v --`` and return ``v``."""


@attrs.frozen
class Raise(Op):
    """``[exc [cause]] --`` and raise; ``argc`` is 0 (re-raise), 1 or 2 (``from cause``)."""

    argc: int


# --- exceptions ------------------------------------------------------------------------------
# A handler is entered with the stack cut to its depth, then (maybe) ``lasti``, then the
# exception.  ``PushExcInfo`` keeps the exception being handled in a slot of its own (CPython
# keeps the previous one there and the current one in the thread state; a bare ``raise``
# re-raises the current one, so we keep that).


@attrs.frozen
class Reraise(Op):
    """``exc --`` and raise ``exc`` again (RERAISE; whatever else is on the stack is dropped,
    as unwinding drops it)."""


@attrs.frozen
class PushExcInfo(Op):
    """``exc -- handled exc``: the handler starts; ``handled`` is the exception itself."""


@attrs.frozen
class PopExcept(Op):
    """``handled --``: the handler ends."""


@attrs.frozen
class CheckExcMatch(Op):
    """``exc type -- exc matches``: whether ``exc`` is an instance of ``type`` (or of one in a
    tuple of types), as ``except type:`` tests it."""


@attrs.frozen
class BeforeWith(Op):
    """``manager -- exit entered``: ``exit`` is the manager's bound ``__exit__``, ``entered``
    what its ``__enter__()`` returned."""


@attrs.frozen
class WithExceptStart(Op):
    """``exit lasti handled exc -- exit lasti handled exc suppress``: the ``with`` block
    raised: ``suppress = exit(type(exc), exc, exc.__traceback__)``."""


# --- the stack itself ------------------------------------------------------------------------


@attrs.frozen
class Copy(Op):
    """``.. x_i .. x_1 -- .. x_i .. x_1 x_i``"""

    i: int


@attrs.frozen
class Swap(Op):
    """Exchange the top with the ``i``-th item (the top is the first)."""

    i: int


@attrs.frozen
class Pop(Op):
    """``x --``"""


@attrs.frozen
class Nop(Op):
    """``--``"""


# --- generators (only inside a generator expression) -----------------------------------------


@attrs.frozen
class ReturnGenerator(Op):
    """``-- None``: a generator starts (the ``None`` is the first value sent in)."""


@attrs.frozen
class Yield(Op):
    """``v -- sent``: yield ``v``; the value sent back (``None`` for iteration) is pushed."""


# --- everything else -------------------------------------------------------------------------


@attrs.frozen
class Unsupported(Op):
    """A construct gibbous cannot differentiate; an error if it is reachable."""

    construct: str
    hint: str


JUMPS = (ForIter, Jump, PopJumpIf, JumpIfOrPop)
# No fall-through.  Nothing follows an Unsupported op: it is an error wherever it is reached.
ENDS = (Jump, Return, Raise, Reraise, Unsupported)


def jump_target(op: Op) -> int | None:
    """The bytecode offset a jump may go to, else ``None``."""
    if isinstance(op, ForIter):
        return op.exit
    if isinstance(op, (Jump, PopJumpIf, JumpIfOrPop)):
        return op.target
    return None


def stack_effect(op: Op) -> tuple[int, int]:
    """``(pops, pushes)`` on the fall-through path, for the ops that only pop then push.

    Ops that rearrange the stack (Copy, Swap) or differ per edge (ForIter, JumpIfOrPop) are
    the caller's to handle; they raise ``KeyError`` here.
    """
    match op:
        case (
            LoadConst()
            | LoadFast()
            | LoadFastAndClear()
            | LoadGlobal()
            | LoadDeref()
            | PushNull()
            | ReturnGenerator()
        ):
            return 0, 1
        case StoreFast() | StoreDeref() | Pop() | Return() | DeleteAttr() | Reraise() | PopExcept():
            return 1, 0
        case PushExcInfo() | BeforeWith():
            return 1, 2
        case CheckExcMatch():
            return 1, 1
        case WithExceptStart():
            return 0, 1
        case (
            DeleteFast() | DeleteDeref() | MakeCell() | CopyFreeVars() | Nop() | Jump()
            | Unsupported()
        ):
            return 0, 0
        case (
            LoadAttr() | UnaryOp() | GetIter() | ListToTuple() | MakeFunction()
            | ConvertValue() | Yield()
        ):
            return 1, 1
        case StoreAttr() | DelItem():
            return 2, 0
        case SetItem():
            return 3, 0
        case (
            GetItem() | BinaryOp() | Compare() | IsOp() | ContainsOp() | SetFunctionAttribute()
            | ImportName()
        ):
            return 2, 1
        case ImportFrom():
            return 1, 2
        case SuperAttr():
            return 3, 1
        case BuildSlice(n=n) | BuildTuple(n=n) | BuildList(n=n) | BuildSet(n=n) | BuildString(n=n):
            return n, 1
        case BuildMap(n=n):
            return 2 * n, 1
        case BuildConstKeyMap(n=n):
            return n + 1, 1
        case ListAppend() | ListExtend() | SetAdd() | SetUpdate() | DictUpdate() | DictMerge():
            return 1, 0
        case MapAdd():
            return 2, 0
        case UnpackSequence(n=n):
            return 1, n
        case UnpackEx(before=before, after=after):
            return 1, before + 1 + after
        case Call(argc=argc, kw=kw):
            return 2 + argc + kw, 1
        case CallEx(has_kwargs=has_kwargs):
            return 3 + has_kwargs, 1
        case FormatValue(has_spec=has_spec):
            return 1 + has_spec, 1
        case PopJumpIf():
            return 1, 0
        case Raise(argc=argc):
            return argc, 0
    raise KeyError(f"{op!r} has no simple stack effect")
