"""Values, operations, blocks and functions of the SSA IR.

Everything is a call: an operation is a ``Call`` of a Python callable (``operator.mul``,
``getattr``, ``numpy.sin``) or one of the five terminators ``Jump``, ``Branch``, ``Guard``,
``Return`` and ``Raise``.  Blocks take arguments instead of phi nodes.  A function's arguments are its entry
block's arguments, as in MLIR.

Values compare by identity and keep a list of their uses, so replacing all uses of a value,
erasing an operation or moving it is cheap and cannot leave a dangling reference.  The classes
are frozen attrs classes: their fields cannot be re-bound from outside.  The links that a rewrite
must change together (operands and uses, an operation's block, a block's function) are changed
only by the methods of this module, which keep both ends consistent; ``_set`` is the one place
that writes them.
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.types import ANY, Const, Type, typeof


class _Text:
    """How operations and functions print.  The printer (``gibbous.ir.printer``, which the
    package loads first) fills it in, so that the data structures import no printer: the IR
    is below its text form, as its types are below theirs (``gibbous.ir.types.format_type``)."""

    def operation(self, op: Operation) -> str:
        return f"<{type(op).__name__}>"  # (until the printer is loaded)

    def function(self, f: Function) -> str:
        return f"<function {f.name}>"


TEXT = _Text()

_set = object.__setattr__


class IRError(Exception):
    """A misuse of the IR API (erasing a value that is still used, ...)."""


@attrs.frozen
class Location:
    """A source position: file and line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# --------------------------------------------------------------------------------------------
# Values


@attrs.frozen(eq=False)
class Use:
    """Operand ``index`` of operation ``user``."""

    user: Operation
    index: int

    def __hash__(self) -> int:
        return hash((id(self.user), self.index))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Use) and other.user is self.user and other.index == self.index


@attrs.frozen(eq=False)
class Value:
    """An SSA value. ``name`` is a hint for the printer (usually the source variable)."""

    type: Type
    name: str | None = attrs.field(default=None, kw_only=True)
    _uses: dict[Use, None] = attrs.field(factory=dict, init=False, repr=False)

    @property
    def uses(self) -> tuple[Use, ...]:
        return tuple(self._uses)

    @property
    def users(self) -> tuple[Operation, ...]:
        """The operations using this value, each once, in no particular order."""
        return tuple(dict.fromkeys(u.user for u in self._uses))

    def has_uses(self) -> bool:
        return bool(self._uses)

    def replace_all_uses_with(self, new: Value) -> None:
        if new is self:
            return
        for use in tuple(self._uses):
            use.user.set_operand(use.index, new)


@attrs.frozen(eq=False, init=False)
class Constant(Value):
    """A Python object known when the IR is built. Printed inline where it is used."""

    value: object

    def __init__(self, value: object) -> None:
        # The type is always the value's own, so the text form can print constants bare.
        self.__attrs_init__(typeof(value, const=True), value)


@attrs.frozen(eq=False)
class BlockArgument(Value):
    block: Block = attrs.field(kw_only=True, repr=False)
    index: int = attrs.field(kw_only=True)


@attrs.frozen(eq=False)
class Result(Value):
    """The value a ``Call`` produces."""

    op: Call = attrs.field(kw_only=True, repr=False)


# --------------------------------------------------------------------------------------------
# Operations


@attrs.frozen(eq=False)
class Operation:
    """Base of calls and terminators: operands with use tracking, a location, a parent block."""

    _operands: list[Value] = attrs.field(alias="operands")
    loc: Location | None = attrs.field(default=None, kw_only=True)
    _parent: Block | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        for i, v in enumerate(self._operands):
            v._uses[Use(self, i)] = None

    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    @property
    def parent(self) -> Block | None:
        return self._parent

    @property
    def successors(self) -> tuple[Block, ...]:
        return ()

    def set_operand(self, index: int, new: Value) -> None:
        old = self._operands[index]
        del old._uses[Use(self, index)]
        self._operands[index] = new
        new._uses[Use(self, index)] = None

    def drop_operands(self) -> None:
        """Forget this operation's uses (it is being deleted)."""
        for i, v in enumerate(self._operands):
            v._uses.pop(Use(self, i), None)
        self._operands.clear()

    def detach(self) -> None:
        """Take the operation out of its block, keeping its operands."""
        if self._parent is not None:
            self._parent._ops.remove(self)
            _set(self, "_parent", None)

    def erase(self) -> None:
        """Delete the operation. Its result, if any, must have no uses left."""
        if isinstance(self, Call) and self.result.has_uses():
            raise IRError(f"cannot erase {self.describe()}: its result is still used")
        self.detach()
        self.drop_operands()

    def describe(self) -> str:
        """One line naming the operation and its source location, for error messages."""
        where = f" at {self.loc}" if self.loc is not None else ""
        return f"'{TEXT.operation(self)}'{where}"


@attrs.frozen(eq=False, init=False)
class Call(Operation):
    """``callee(*args, **kwargs)``; operands are ``[callee, *args, *kwarg values]``."""

    kwnames: tuple[str, ...]
    result: Result = attrs.field(repr=False)

    def __init__(
        self,
        callee: Value,
        args: t.Sequence[Value] = (),
        kwargs: t.Mapping[str, Value] | None = None,
        *,
        type: Type = ANY,
        name: str | None = None,
        loc: Location | None = None,
    ) -> None:
        kwargs = dict(kwargs or {})
        result = Result(type, name=name, op=t.cast(Call, None))
        self.__attrs_init__([callee, *args, *kwargs.values()], tuple(kwargs), result, loc=loc)
        _set(result, "op", self)

    @property
    def callee(self) -> Value:
        return self._operands[0]

    @property
    def args(self) -> tuple[Value, ...]:
        return tuple(self._operands[1 : len(self._operands) - len(self.kwnames)])

    @property
    def kwargs(self) -> dict[str, Value]:
        n = len(self.kwnames)
        return dict(zip(self.kwnames, self._operands[len(self._operands) - n :])) if n else {}

    @property
    def type(self) -> Type:
        return self.result.type


class Terminator(Operation):
    """Ends a block. Every block has exactly one, as its last operation."""

    __slots__ = ()


@attrs.frozen(eq=False, init=False)
class Jump(Terminator):
    target: Block = attrs.field(repr=False)

    def __init__(
        self, target: Block, args: t.Sequence[Value] = (), *, loc: Location | None = None
    ) -> None:
        self.__attrs_init__(list(args), target, loc=loc)

    @property
    def args(self) -> tuple[Value, ...]:
        return self.operands

    @property
    def successors(self) -> tuple[Block, ...]:
        return (self.target,)


@attrs.frozen(eq=False, init=False)
class Branch(Terminator):
    """``if cond: jump if_true(true_args) else: jump if_false(false_args)``."""

    if_true: Block = attrs.field(repr=False)
    if_false: Block = attrs.field(repr=False)
    n_true: int

    def __init__(
        self,
        cond: Value,
        if_true: Block,
        true_args: t.Sequence[Value],
        if_false: Block,
        false_args: t.Sequence[Value],
        *,
        loc: Location | None = None,
    ) -> None:
        ops = [cond, *true_args, *false_args]
        self.__attrs_init__(ops, if_true, if_false, len(true_args), loc=loc)

    @property
    def cond(self) -> Value:
        return self._operands[0]

    @property
    def true_args(self) -> tuple[Value, ...]:
        return tuple(self._operands[1 : 1 + self.n_true])

    @property
    def false_args(self) -> tuple[Value, ...]:
        return tuple(self._operands[1 + self.n_true :])

    @property
    def successors(self) -> tuple[Block, ...]:
        return (self.if_true, self.if_false)

    def args_for(self, index: int) -> tuple[Value, ...]:
        """Arguments passed along successor edge ``index`` (0 true, 1 false)."""
        return self.true_args if index == 0 else self.false_args


@attrs.frozen(eq=False, init=False)
class Return(Terminator):
    def __init__(self, value: Value, *, loc: Location | None = None) -> None:
        self.__attrs_init__([value], loc=loc)

    @property
    def value(self) -> Value:
        return self._operands[0]


@attrs.frozen(eq=False, init=False)
class Raise(Terminator):
    def __init__(self, exc: Value, *, loc: Location | None = None) -> None:
        self.__attrs_init__([exc], loc=loc)

    @property
    def exc(self) -> Value:
        return self._operands[0]


@attrs.frozen(eq=False, init=False)
class Guard(Terminator):
    """``guard %r, ^normal(...), except ^handler(...)``: the exception edge of a call.

    ``%r`` is the result of the call just before the guard.  If that call raised, control goes
    to ``handler`` (where ``runtime.caught()`` gives the exception), else to ``normal``.  The
    call did not complete on the handler edge, so its result is not available there: the
    handler's arguments cannot use it, and other uses must be on the normal side.
    """

    normal: Block = attrs.field(repr=False)
    handler: Block = attrs.field(repr=False)
    n_normal: int

    def __init__(
        self,
        result: Value,
        normal: Block,
        normal_args: t.Sequence[Value],
        handler: Block,
        handler_args: t.Sequence[Value],
        *,
        loc: Location | None = None,
    ) -> None:
        ops = [result, *normal_args, *handler_args]
        self.__attrs_init__(ops, normal, handler, len(normal_args), loc=loc)

    @property
    def guarded(self) -> Value:
        return self._operands[0]

    @property
    def normal_args(self) -> tuple[Value, ...]:
        return tuple(self._operands[1 : 1 + self.n_normal])

    @property
    def handler_args(self) -> tuple[Value, ...]:
        return tuple(self._operands[1 + self.n_normal :])

    @property
    def successors(self) -> tuple[Block, ...]:
        return (self.normal, self.handler)

    def args_for(self, index: int) -> tuple[Value, ...]:
        """Arguments passed along successor edge ``index`` (0 normal, 1 handler)."""
        return self.normal_args if index == 0 else self.handler_args


def guard_of(call: Call) -> Guard | None:
    """The guard naming ``call`` (the terminator right after it), if it has one."""
    block = call.parent
    term = block.terminator if block is not None else None
    return term if isinstance(term, Guard) and term.guarded is call.result else None


#: Terminators that jump: they pass arguments to their successors.
JUMPING = (Jump, Branch, Guard)


def edge_args(term: Terminator, successor_index: int) -> tuple[Value, ...]:
    """The values a terminator passes to its ``successor_index``-th successor."""
    if isinstance(term, Jump):
        return term.args
    if isinstance(term, (Branch, Guard)):
        return term.args_for(successor_index)
    raise IRError(f"{type(term).__name__} has no successors")


def with_edge_args(
    term: Terminator, args_for: t.Callable[[int, tuple[Value, ...]], t.Sequence[Value]]
) -> Terminator:
    """A new terminator like ``term`` (not in any block), passing ``args_for(index, args)``
    along each successor edge instead of ``args``."""
    if isinstance(term, Jump):
        return Jump(term.target, args_for(0, term.args), loc=term.loc)
    if isinstance(term, Branch):
        true_args, false_args = args_for(0, term.true_args), args_for(1, term.false_args)
        return Branch(term.cond, term.if_true, true_args, term.if_false, false_args, loc=term.loc)
    if isinstance(term, Guard):
        normal, handler = args_for(0, term.normal_args), args_for(1, term.handler_args)
        return Guard(term.guarded, term.normal, normal, term.handler, handler, loc=term.loc)
    raise IRError(f"{type(term).__name__} has no successors")


def replace_terminator(old: Terminator, new: Terminator) -> None:
    """Put ``new`` in ``old``'s place and delete ``old``."""
    block = old.parent
    if block is None:
        raise IRError(f"{old.describe()} is in no block")
    old.erase()
    block.append(new)


# --------------------------------------------------------------------------------------------
# Blocks and functions


@attrs.frozen(eq=False)
class Block:
    name: str | None = None
    _args: list[BlockArgument] = attrs.field(factory=list, init=False, repr=False)
    _ops: list[Operation] = attrs.field(factory=list, init=False, repr=False)
    _parent: Function | None = attrs.field(default=None, init=False, repr=False)

    @property
    def args(self) -> tuple[BlockArgument, ...]:
        return tuple(self._args)

    @property
    def ops(self) -> tuple[Operation, ...]:
        return tuple(self._ops)

    @property
    def parent(self) -> Function | None:
        return self._parent

    @property
    def terminator(self) -> Terminator | None:
        last = self._ops[-1] if self._ops else None
        return last if isinstance(last, Terminator) else None

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(op for op in self._ops if isinstance(op, Call))

    @property
    def successors(self) -> tuple[Block, ...]:
        term = self.terminator
        return term.successors if term is not None else ()

    def add_arg(self, type: Type, name: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, name=name, block=self, index=len(self._args))
        self._args.append(arg)
        return arg

    def erase_arg(self, index: int) -> None:
        """Remove an unused argument. Callers fix the jumps into this block."""
        arg = self._args[index]
        if arg.has_uses():
            raise IRError(f"cannot erase block argument {index} of a block: it is still used")
        del self._args[index]
        for i in range(index, len(self._args)):
            _set(self._args[i], "index", i)

    def insert(self, index: int, op: Operation) -> Operation:
        if op.parent is not None:
            raise IRError(f"{op.describe()} is already in a block; detach it first")
        self._ops.insert(index, op)
        _set(op, "_parent", self)
        return op

    def append(self, op: Operation) -> Operation:
        return self.insert(len(self._ops), op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self._ops.index(anchor), op)

    def index(self, op: Operation) -> int:
        return self._ops.index(op)


@attrs.frozen(eq=False, init=False)
class Function:
    """A function: named blocks; the first is the entry and its arguments are the function's."""

    name: str
    loc: Location | None
    _blocks: list[Block] = attrs.field(repr=False)

    def __init__(
        self,
        name: str,
        args: t.Sequence[tuple[str | None, Type]] = (),
        *,
        loc: Location | None = None,
        entry_name: str | None = "entry",
    ) -> None:
        self.__attrs_init__(name, loc, [])
        entry = self.add_block(entry_name)
        for arg_name, ty in args:
            entry.add_arg(ty, arg_name)

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self._blocks)

    @property
    def entry(self) -> Block:
        return self._blocks[0]

    @property
    def args(self) -> tuple[BlockArgument, ...]:
        return self.entry.args

    def add_block(self, name: str | None = None, *, after: Block | None = None) -> Block:
        block = Block(name)
        index = len(self._blocks) if after is None else self._blocks.index(after) + 1
        self._blocks.insert(index, block)
        _set(block, "_parent", self)
        return block

    def erase_block(self, block: Block) -> None:
        """Delete a block and its operations. Nothing outside it may use its values."""
        for value in [*block.args, *(op.result for op in block.calls)]:
            outside = [u for u in value.uses if u.user.parent is not block]
            if outside:
                raise IRError(
                    f"cannot erase block: {outside[0].user.describe()} uses one of its values"
                )
        for op in reversed(block._ops):
            op.drop_operands()
            _set(op, "_parent", None)
        block._ops.clear()
        self._blocks.remove(block)
        _set(block, "_parent", None)

    def move_block(self, block: Block, index: int) -> None:
        self._blocks.remove(block)
        self._blocks.insert(index, block)

    def operations(self) -> t.Iterator[Operation]:
        for block in self._blocks:
            yield from block._ops

    def calls(self) -> t.Iterator[Call]:
        for op in self.operations():
            if isinstance(op, Call):
                yield op

    def __str__(self) -> str:
        return TEXT.function(self)

    def _repr_html_(self) -> str | None:
        """Jupyter shows a function as its text (``gibbous.inspect.render`` draws its CFG)."""
        import html

        try:
            return f"<pre>{html.escape(str(self))}</pre>"
        except Exception:  # unprintable constants: Jupyter falls back to repr
            return None


def structurally_equal(f: Function, g: Function) -> bool:
    """Same blocks, operations, types, constants, names and locations, value for value."""
    if (f.name, f.loc, len(f.blocks)) != (g.name, g.loc, len(g.blocks)):
        return False
    block_map = dict(zip(map(id, f.blocks), g.blocks))
    value_map: dict[int, Value] = {}

    def same_value(a: Value, b: Value) -> bool:
        if isinstance(a, Constant):
            return isinstance(b, Constant) and a.type == b.type and _same_constant(a.value, b.value)
        return value_map.get(id(a)) is b

    for fb, gb in zip(f.blocks, g.blocks):
        if fb.name != gb.name or len(fb.args) != len(gb.args) or len(fb.ops) != len(gb.ops):
            return False
        for a, b in zip(fb.args, gb.args):
            if (a.type, a.name) != (b.type, b.name):
                return False
            value_map[id(a)] = b
        for fo, go in zip(fb.ops, gb.ops):
            if type(fo) is not type(go) or fo.loc != go.loc or len(fo.operands) != len(go.operands):
                return False
            if isinstance(fo, Call):
                assert isinstance(go, Call)
                if (fo.kwnames, fo.result.type, fo.result.name) != (
                    go.kwnames,
                    go.result.type,
                    go.result.name,
                ):
                    return False
                value_map[id(fo.result)] = go.result
            if isinstance(fo, Branch) and isinstance(go, Branch) and fo.n_true != go.n_true:
                return False
            if [block_map.get(id(s)) for s in fo.successors] != list(go.successors):
                return False
    # Operands are compared last: a use may precede its definition in block order.
    for fo, go in zip(f.operations(), g.operations()):
        if not all(same_value(a, b) for a, b in zip(fo.operands, go.operands)):
            return False
    return True


def _same_constant(a: object, b: object) -> bool:
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    return Const(a) == Const(b)
