"""The IR verifier: ``verify(f)`` checks that a function is well formed, or says all that is not.

Invariants, each checked by one method of ``_Checker`` (in this order):

1. Every block's parent is the function.
2. Every block is non-empty and has exactly one terminator (``jump``, ``branch``, ``guard``,
   ``return``, ``raise``), which is its last operation.
3. Every operation's parent is the block that contains it.
4. Every terminator targets blocks of the function, and never the entry block (the entry's
   arguments are the function's arguments, so nothing may jump there).
5. Operands are values of this function: a constant, an argument of one of its blocks (still
   at its index), or the result of a call in one of its blocks.  Values of another function
   and detached values (of an erased argument, of an operation taken out of its block) are not.
6. Use lists are exact: an operand ``v`` at index ``i`` of ``op`` is recorded as
   ``Use(op, i)`` in ``v.uses`` ...
7. ... and every use recorded on a value defined in the function names an operation of the
   function that has that value as that operand.
8. Every use is dominated by its definition: a call's result is used later in its own block or
   in blocks its block strictly dominates; a block argument in blocks its block dominates.
   Jump and branch arguments are uses in the jumping block.  Uses in blocks unreachable from
   the entry are not checked (nothing dominates them); uses in reachable blocks of values
   defined in unreachable ones are errors.
9. A jump or branch passes each target exactly as many values as the target has arguments.
10. The type of every value passed to a block argument is a subtype of the argument's type.
11. A constant's type is ``typeof(value, const=True)``.
12. A ``guard`` guards the call just before it; that call's result is not passed to the
    handler, and its other uses are on the normal side (in blocks the normal target dominates,
    which only the guard enters).  A block a handler edge enters is entered through handler
    edges alone, and ``caught()`` is only ever the first operation of a block that nothing
    else enters.

Every problem is reported, not just the first, as one line naming the function, the block by
its printed label, the operation as printed and its ``file:line`` when it has one, then what
is wrong and what is expected (one line, wrapped here)::

    @clip, ^done, 'return %y' at clip.py:6: operand 0 (the returned value %y) is defined in
    ^big, which does not dominate ^done; expected every use to be dominated by its definition

Problems come grouped by invariant, in the order above, then in block and operation order.
"""

from __future__ import annotations

import typing as t

from gibbous.ir.cfg import DominatorTree, dominator_tree
from gibbous.ir.core import (
    Block,
    BlockArgument,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Jump,
    Operation,
    Raise,
    Result,
    Return,
    Terminator,
    Use,
    Value,
    edge_args,
)
from gibbous.ir.printer import (
    Namer,
    UnprintableError,
    format_constant,
    format_name,
    format_operation,
    format_type,
)
from gibbous.ir.exceptions import caught
from gibbous.ir.types import Type, is_subtype, typeof


class VerificationError(Exception):
    """A function broke invariants of the IR; ``problems`` lists every one of them."""

    def __init__(self, problems: t.Sequence[str]) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        head = f"IR verification failed with {n} problem{'s' if n != 1 else ''}:"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


def verify(f: Function) -> None:
    """Check the invariants listed in this module's docstring; raise ``VerificationError``."""
    problems = _Checker(f).run()
    if problems:
        raise VerificationError(problems)


# --------------------------------------------------------------------------------------------
# Naming things the way the printer does


class _Namer(Namer):
    """The printer's names; constants without a text form print as their repr instead of
    failing, because verifying is legal for IR that cannot be printed.  Once ``frozen``,
    values not of the function (results of stray operations) get their hints, not numbers,
    so that naming them cannot make them look like values of the function."""

    frozen = False

    def define(self, v: Value) -> str:
        return _loose_name(v) if self.frozen else super().define(v)

    def ref(self, v: Value) -> str:
        if isinstance(v, Constant):
            try:
                return format_constant(v.value)
            except UnprintableError:
                return f"<{v.value!r}>"
        return super().ref(v)


def _namer_for(f: Function) -> Namer:
    # Defines names in the same order as printer.format_function, so the names agree.
    namer = _Namer()
    for b in f.blocks:
        namer.define_block(b)
    for a in f.args:
        namer.define(a)
    for i, b in enumerate(f.blocks):
        if i > 0:
            for a in b.args:
                namer.define(a)
        for op in b.ops:
            if isinstance(op, Call):
                namer.define(op.result)
    namer.frozen = True
    return namer


def _type_text(ty: Type) -> str:
    return format_type(ty, lenient=True)


def _function_text(f: Function | None) -> str:
    return "no function" if f is None else f"function {format_name('@', f.name)}"


def _operand_role(op: Operation, i: int) -> str:
    """What operand ``i`` is for, in words: 'the callee', 'argument 1 to the true target'..."""
    match op:
        case Call():
            n_args = len(op.operands) - len(op.kwnames)
            if i == 0:
                return "the callee"
            if i < n_args:
                return f"argument {i - 1}"
            return f"keyword argument {op.kwnames[i - n_args]!r}"
        case Jump():
            return f"argument {i} to the target"
        case Branch():
            if i == 0:
                return "the condition"
            if i <= op.n_true:
                return f"argument {i - 1} to the true target"
            return f"argument {i - 1 - op.n_true} to the false target"
        case Guard():
            if i == 0:
                return "the guarded result"
            if i <= op.n_normal:
                return f"argument {i - 1} to the normal target"
            return f"argument {i - 1 - op.n_normal} to the handler"
        case Return():
            return "the returned value"
        case Raise():
            return "the raised exception"
    return f"operand {i}"


# --------------------------------------------------------------------------------------------
# The checks


class _Checker:
    """One verification of one function: the facts every check shares, then the checks."""

    def __init__(self, f: Function) -> None:
        self.f = f
        self.problems: list[str] = []
        self.namer = _namer_for(f)
        self.blocks = set(f.blocks)
        # Where each operation of f sits, by identity: membership is "in a block's op list".
        self.position: dict[int, tuple[Block, int]] = {
            id(op): (b, i) for b in f.blocks for i, op in enumerate(b.ops)
        }
        self.dom: DominatorTree = dominator_tree(f)

    def run(self) -> list[str]:
        self.check_block_parents()
        self.check_terminators()
        self.check_operation_parents()
        self.check_successors()
        self.check_operands_belong()
        self.check_operand_uses_recorded()
        self.check_recorded_uses_exist()
        self.check_dominance()
        self.check_edge_arity()
        self.check_edge_types()
        self.check_constant_types()
        self.check_guards()
        return self.problems

    # -- reporting

    def op_text(self, op: Operation) -> str:
        try:
            return format_operation(op, self.namer)
        except UnprintableError:  # a result type naming a class without an import path
            return f"<{type(op).__name__} with an unprintable type>"

    def where(self, block: Block, op: Operation | None = None) -> str:
        text = f"{format_name('@', self.f.name)}, {self.namer.block_ref(block)}"
        if op is not None:
            text += f", '{self.op_text(op)}'"
            if op.loc is not None:
                text += f" at {op.loc}"
        return text

    def report(self, block: Block, op: Operation | None, wrong: str, expected: str) -> None:
        self.problems.append(f"{self.where(block, op)}: {wrong}; expected {expected}")

    def name(self, v: Value) -> str:
        if isinstance(v, Constant):
            return self.namer.ref(v)
        return self.namer.values.get(id(v)) or _loose_name(v)

    def operand_text(self, op: Operation, i: int) -> str:
        return f"operand {i} ({_operand_role(op, i)} {self.name(op.operands[i])})"

    def operations(self) -> t.Iterator[tuple[Block, int, Operation]]:
        for b in self.f.blocks:
            for i, op in enumerate(b.ops):
                yield b, i, op

    def edges(self) -> t.Iterator[tuple[Block, Terminator, int, Block]]:
        """(block, terminator, successor index, target) for every edge to a block of f."""
        for b in self.f.blocks:
            term = b.terminator
            if term is None:
                continue
            for k, target in enumerate(term.successors):
                if target in self.blocks:
                    yield b, term, k, target

    # -- 1. blocks belong to f

    def check_block_parents(self) -> None:
        for b in self.f.blocks:
            if b.parent is not self.f:
                self.report(
                    b,
                    None,
                    f"the block's parent is {_function_text(b.parent)}",
                    f"its parent to be {_function_text(self.f)}, which lists it",
                )

    # -- 2. one terminator, last

    def check_terminators(self) -> None:
        for b in self.f.blocks:
            if not b.ops:
                self.report(b, None, "the block is empty", "operations ending in a terminator")
                continue
            for op in b.ops[:-1]:
                if isinstance(op, Terminator):
                    self.report(
                        b,
                        op,
                        "a terminator in the middle of the block",
                        "terminators only as the last operation of a block",
                    )
            last = b.ops[-1]
            if not isinstance(last, Terminator):
                self.report(
                    b,
                    last,
                    "the block's last operation is not a terminator",
                    "every block to end in a jump, branch, return or raise",
                )

    # -- 3. operations belong to their block

    def check_operation_parents(self) -> None:
        for b, _, op in self.operations():
            if op.parent is not b:
                actual = "no block" if op.parent is None else self.namer.block_ref(op.parent)
                self.report(
                    b,
                    op,
                    f"the operation's parent is {actual}",
                    f"its parent to be {self.namer.block_ref(b)}, which contains it",
                )

    # -- 4. targets are blocks of f, other than the entry

    def check_successors(self) -> None:
        for b in self.f.blocks:
            term = b.terminator
            if term is None:
                continue
            for target in term.successors:
                if target not in self.blocks:
                    self.report(
                        b,
                        term,
                        f"it targets a block of {_function_text(target.parent)}"
                        + (f" named {target.name!r}" if target.name is not None else ""),
                        f"targets among the blocks of {_function_text(self.f)}",
                    )
                elif target is self.f.entry:
                    self.report(
                        b,
                        term,
                        f"it jumps to the entry block {self.namer.block_ref(target)}",
                        "no edges into the entry block, whose arguments are the function's",
                    )

    # -- 5. operands are values of f

    def home(self, v: Value) -> Block | None:
        """The block of f that defines ``v``, or None for constants and values not of f."""
        if isinstance(v, BlockArgument):
            b = v.block
            in_place = v.index < len(b.args) and b.args[v.index] is v
            return b if b in self.blocks and in_place else None
        if isinstance(v, Result):
            where = self.position.get(id(v.op))
            return where[0] if where is not None and v.op.result is v else None
        return None

    def check_operands_belong(self) -> None:
        for b, _, op in self.operations():
            for i, v in enumerate(op.operands):
                if isinstance(v, Constant) or self.home(v) is not None:
                    continue
                self.report(
                    b,
                    op,
                    f"{self.operand_text(op, i)} is {self.describe_foreign(v)}",
                    f"a constant or a value defined in {_function_text(self.f)}",
                )

    def describe_foreign(self, v: Value) -> str:
        if isinstance(v, BlockArgument):
            if v.block in self.blocks:
                return "an argument that its block no longer has (erased?)"
            owner = v.block.parent
            unlisted = " that the function does not list" if owner is self.f else ""
            return f"an argument of a block of {_function_text(owner)}{unlisted}"
        if isinstance(v, Result):
            block = v.op.parent
            if block is None:
                return "the result of an operation that is in no block (detached?)"
            if block in self.blocks or block.parent is self.f:
                return "the result of an operation missing from its block's operations"
            return f"the result of an operation in {_function_text(block.parent)}"
        return f"a bare {type(v).__name__}, not a constant, block argument or call result"

    # -- 6., 7. use lists are exact, both ways

    def check_operand_uses_recorded(self) -> None:
        recorded: dict[int, set[Use]] = {}
        for b, _, op in self.operations():
            for i, v in enumerate(op.operands):
                uses = recorded.get(id(v))
                if uses is None:  # a set once per value: values may have many uses
                    uses = recorded[id(v)] = set(v.uses)
                if Use(op, i) not in uses:
                    self.report(
                        b,
                        op,
                        f"{self.operand_text(op, i)} does not list this operation among its uses",
                        "the value's uses to include this operand (operands change only "
                        "through core's methods, which keep both ends)",
                    )

    def check_recorded_uses_exist(self) -> None:
        for b in self.f.blocks:
            for arg in b.args:
                self.check_uses_of(arg, b, None)
            for op in b.ops:
                if isinstance(op, Call):
                    self.check_uses_of(op.result, b, op)

    def check_uses_of(self, v: Value, block: Block, op: Operation | None) -> None:
        what = "result" if op is not None else "block argument"
        for use in v.uses:
            user = use.user
            if id(user) not in self.position:
                problem = "which is not in the function"
            elif use.index >= len(user.operands) or user.operands[use.index] is not v:
                problem = "which has another value there"
            else:
                continue  # the common case: no message text is built for a good use
            at = f" at {user.loc}" if user.loc is not None else ""
            described = f"operand {use.index} of '{self.op_text(user)}'{at}"
            wrong = f"{what} {self.name(v)} records a use as {described}, {problem}"
            self.report(block, op, wrong, "its uses to be exactly the operands that refer to it")

    # -- 8. definitions dominate uses

    def check_dominance(self) -> None:
        for b, index, op in self.operations():
            if b not in self.dom.idom:
                continue  # unreachable: nothing dominates it, so there is nothing to check
            for i, v in enumerate(op.operands):
                wrong = self.undominated_use(b, index, op, i, v)
                if wrong is not None:
                    self.report(b, op, wrong, "every use to be dominated by its definition")

    def undominated_use(
        self, b: Block, index: int, op: Operation, i: int, v: Value
    ) -> str | None:
        """What is wrong with using ``v`` as operand ``i`` of ``op`` (at ``index`` in ``b``)."""
        home = self.home(v)
        if home is None:
            return None  # a constant, or reported as not belonging to f
        operand = self.operand_text(op, i)
        if isinstance(v, Result) and home is b:
            if v.op is op:
                return f"{operand} is this operation's own result"
            if self.position[id(v.op)][1] > index:
                return f"{operand} is defined later in {self.namer.block_ref(b)}"
            return None
        if isinstance(v, Result) and self.dom.strictly_dominates(home, b):
            return None
        if isinstance(v, BlockArgument) and self.dom.dominates(home, b):
            return None
        kind = "an argument of" if isinstance(v, BlockArgument) else "defined in"
        reach = "" if home in self.dom.idom else " (unreachable)"
        return (
            f"{operand} is {kind} {self.namer.block_ref(home)}{reach}, "
            f"which does not dominate {self.namer.block_ref(b)}"
        )

    # -- 9., 10. values passed along edges

    def check_edge_arity(self) -> None:
        for b, term, k, target in self.edges():
            passed, wanted = len(edge_args(term, k)), len(target.args)
            if passed != wanted:
                self.report(
                    b,
                    term,
                    f"it passes {passed} value{'s' if passed != 1 else ''} to "
                    f"{self.namer.block_ref(target)}, which takes {wanted}",
                    "one value per argument of the target block",
                )

    def check_edge_types(self) -> None:
        for b, term, k, target in self.edges():
            for j, (v, param) in enumerate(zip(edge_args(term, k), target.args)):
                if is_subtype(v.type, param.type):
                    continue
                self.report(
                    b,
                    term,
                    f"the value {self.name(v)} : {_type_text(v.type)} passed to argument {j} "
                    f"({self.name(param)} : {_type_text(param.type)}) "
                    f"of {self.namer.block_ref(target)} is not of the argument's type",
                    f"a subtype of {_type_text(param.type)}",
                )

    # -- 11. constants have their value's type

    def check_constant_types(self) -> None:
        seen: set[int] = set()
        for b, _, op in self.operations():
            for i, v in enumerate(op.operands):
                if not isinstance(v, Constant) or id(v) in seen:
                    continue
                seen.add(id(v))
                want = typeof(v.value, const=True)
                if v.type != want:
                    self.report(
                        b,
                        op,
                        f"{self.operand_text(op, i)} has type {_type_text(v.type)}",
                        f"{_type_text(want)}, the type of a constant holding that value",
                    )


    # -- 12. guards

    def check_guards(self) -> None:
        handlers: set[Block] = set()
        jumped: set[Block] = {self.f.entry}  # entered other than by a handler edge
        for b, term, k, target in self.edges():
            (handlers if isinstance(term, Guard) and k == 1 else jumped).add(target)
        for b, term, k, target in self.edges():
            if target in handlers and not (isinstance(term, Guard) and k == 1):
                self.report(
                    b,
                    term,
                    f"it jumps to {self.namer.block_ref(target)}, which a guard's handler "
                    "edge enters",
                    "handler blocks entered through handler edges alone",
                )
        for b, index, op in self.operations():
            if isinstance(op, Guard):
                self.check_guard(b, index, op)
            elif isinstance(op, Call) and _calls(op, caught) and (index or b in jumped):
                self.report(
                    b,
                    op,
                    "caught() is not the first operation of a block entered by handler edges",
                    "caught() only where the exception a handler edge caught is defined",
                )

    def check_guard(self, b: Block, index: int, op: Guard) -> None:
        guarded = op.guarded
        previous = b.ops[index - 1] if index > 0 else None
        if not isinstance(previous, Call) or guarded is not previous.result:
            self.report(
                b,
                op,
                f"{self.operand_text(op, 0)} is not the result of the call just before it",
                "a guard to name the result of the call it guards",
            )
            return
        if any(v is guarded for v in op.handler_args):
            self.report(
                b,
                op,
                f"it passes {self.name(guarded)} to its handler, where the call did not complete",
                "the guarded result only on the normal side",
            )
        normal_only = op.normal is not op.handler and [
            (p, k) for p, term, k, target in self.edges() if target is op.normal
        ] == [(b, 0)]
        for use in guarded.uses:
            user = use.user
            if user is op:
                continue
            where = self.position.get(id(user))
            if where is None:
                continue  # reported by the use checks
            home = where[0]
            if normal_only and home in self.dom.idom and self.dom.dominates(op.normal, home):
                continue
            self.report(
                home,
                user,
                f"{self.operand_text(user, use.index)} is the result of a guarded call, used "
                f"where {self.namer.block_ref(op.normal)} (its normal side) does not dominate",
                "a guarded result used only where the call is known to have completed",
            )


def _calls(op: Call, fn: object) -> bool:
    return isinstance(op.callee, Constant) and op.callee.value is fn


def _loose_name(v: Value) -> str:
    """A value not named by the function's namer: its hint, as an error message can give it."""
    return format_name("%", v.name) if v.name is not None else "%?"


__all__ = ["VerificationError", "verify"]
