"""IR functions as generated Python: written once, compiled once, called many times.

A ``Factory`` holds one or more IR functions and the constants they use.  Its source is a
factory function whose parameters are the closure variables and whose body defines the
functions::

    def __make(sin, c0):
        def poly(x, /):  # poly.py:3
            y = x * 2.0  # poly.py:4
            return sin(y) * y + c0  # poly.py:5
        return poly,

Calling ``__make(numpy.sin, array)`` once binds the constants; a call of ``poly`` then looks
nothing up but its closure cells.  ``FunctionEmitter`` writes one function: its names, its
operations (``operators`` holds the table of calls written as syntax) and its control flow
(``layout`` decides which blocks are written inline, which follow in sequence and which go
under a label in a dispatch loop).  docs/backend.md shows whole examples.

``compile_function`` is the primal backend's entry point; the AD pass will put its forward and
reverse programs into one ``Factory`` so that they share closure variables (stacks, buffers).
"""

from __future__ import annotations

import operator
import typing as t

import attrs

from gibbous.backends.numpy.layout import Layout, plan
from gibbous.backends.numpy.operators import (
    ATOM,
    COMPARE,
    PRIMARY,
    TOP,
    Cast,
    Form,
    inline_form,
)
from gibbous.backends.numpy.source import (
    ClosurePool,
    Scope,
    SourceWriter,
    define,
    index_literal,
    keyword_argument,
    literal,
    negated,
    unique_filename,
)
from gibbous.ir.core import (
    Block,
    Branch,
    Guard,
    Call,
    Constant,
    Function,
    Jump,
    Location,
    Operation,
    Raise,
    Return,
    Terminator,
    Value,
)
from gibbous.ir import types as T
from gibbous.ir.exceptions import GibbousError, caught
from gibbous.ir.printer import Namer
from gibbous.ir.verify import verify

FACTORY = "__make"

# An arm of a branch at most this big is written first (nested under ``if``) even when the
# other arm is smaller, so that short loop bodies read ``if i < n: ...`` rather than as a
# negated guard.  Past it the smaller arm nests and the larger continues unindented, which
# keeps the nesting depth logarithmic in the code size (Python refuses 100 levels).
SMALL_ARM = 8


def compile_function(f: Function) -> t.Callable[..., object]:
    """A Python function running ``f``; its positional arguments are ``f.args``.

    The callable carries ``__gibbous_source__`` (the generated Python) and ``__gibbous_ir__``.
    """
    factory = Factory(f.name)
    factory.add(f)
    (fn,) = factory.build()
    return fn


EmitterFactory = t.Callable[[Function, ClosurePool, Scope, str], "FunctionEmitter"]


class Factory:
    """Generated functions that share one factory, hence one set of closure variables."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.scope = Scope(reserved=[FACTORY])
        self.pool = ClosurePool(self.scope)
        self._defs: list[tuple[str, Function, SourceWriter]] = []

    def add(self, f: Function, emitter: EmitterFactory | None = None) -> str:
        """Write ``f`` (verified first) into the factory; returns its Python name."""
        verify(f)
        name = self.scope.fresh(f.name)
        body = SourceWriter()
        (emitter or FunctionEmitter)(f, self.pool, Scope(self.scope), name).write(body)
        self._defs.append((name, f, body))
        return name

    def bind(self, value: object, hint: str | None = None) -> str:
        """A closure variable holding ``value`` (stacks, buffers, child rules, ...)."""
        return self.pool.bind(value, hint)

    def source(self) -> str:
        out = SourceWriter()
        out.line(f"def {FACTORY}({', '.join(self.pool.names)}):")
        with out.indented():
            for _, _, body in self._defs:
                out.embed(body)
            out.line(f"return {''.join(name + ', ' for name, _, _ in self._defs).rstrip()}")
        return out.render()

    def build(self) -> tuple[t.Callable[..., object], ...]:
        """Compile the source once and return the functions, in the order they were added."""
        return self.compile().instantiate()

    def compile(self) -> CompiledFactory:
        """Compile the source once; ``instantiate`` then makes the functions, as often as
        needed, each time with the closure values bound so far or replacements for some."""
        source = self.source()
        make = define(source, unique_filename(self.name), FACTORY)
        return CompiledFactory(
            source,
            make,
            tuple(self.pool.names),
            tuple(self.pool.values),
            tuple(f for _, f, _ in self._defs),
        )


@attrs.frozen(eq=False)
class CompiledFactory:
    """A compiled factory: its source, its closure variables and their values, and the IR of
    the functions it defines."""

    source: str
    make: t.Callable[..., object]
    names: tuple[str, ...]
    values: tuple[object, ...]
    functions: tuple[Function, ...]

    def instantiate(
        self, replace: t.Mapping[int, object] | None = None
    ) -> tuple[t.Callable[..., object], ...]:
        """The functions, with closure variable ``i`` holding ``replace[i]`` where given."""
        values = list(self.values)
        for i, value in (replace or {}).items():
            values[i] = value
        made = t.cast(tuple[t.Callable[..., object], ...], self.make(*values))
        for fn, f in zip(made, self.functions):
            fn.__dict__["__gibbous_source__"] = self.source
            fn.__dict__["__gibbous_ir__"] = f
        return made


@attrs.frozen
class _Arm:
    """One side of a branch: where it goes, with what, and the test that selects it."""

    target: Block
    args: tuple[Value, ...]
    test: str


class FunctionEmitter:
    """Writes one IR function as a ``def``.

    Every SSA value that needs a variable gets its own Python name, so block arguments are
    plain assignments at each jump site; a tuple assignment makes them simultaneous.

    Each operation becomes a line carrying its source location, except a call folded into the
    one expression that uses its result (``return np_sum(a * (b - c))``, ``if i < n:``), which
    is done only where Python's order of evaluation is the IR's (``_find_folds``).
    """

    def __init__(self, f: Function, pool: ClosurePool, scope: Scope, name: str) -> None:
        self.f = f
        self.pool = pool
        self.scope = scope
        self.function_name = name
        self.layout: Layout = plan(f)
        # With one labelled block every jump goes to it: no label to keep.
        self.label_var = scope.fresh("__label") if len(self.layout.labels) > 1 else None
        guards = any(isinstance(b.terminator, Guard) for b in self.layout.blocks)
        self.caught_var = scope.fresh("__caught") if guards else None
        self.caught_as = scope.fresh("__exc") if guards else None
        self.folded: dict[Value, Call] = self._find_folds()
        self.variables, self.none_results = self._values_with_variables()
        self._names: dict[Value, str] = {}
        for a in f.args:  # the signature first; other names in the order the code uses them
            self.name(a)
        self.block_names = Namer()  # labels as the printed IR spells them, for comments
        for b in f.blocks:
            self.block_names.define_block(b)

    # -- names

    def _find_folds(self) -> dict[Value, Call]:
        """The calls written inside the one expression that uses their result.

        A call is folded when its result has one use, in its block, by a call or the
        terminator, and the written code still evaluates every operation in the IR's order: the
        operations between a call and its use must all be folded into that same use, at the
        operands it evaluates before the one taking the call.  Walking a block backwards, the
        expression being built is a stack of open calls, each with the operands (in the order
        Python evaluates them) that can still take a folded call; a call that is not folded is
        a statement of its own, so nothing before it can move past it.  So effects, exceptions
        and reads of mutable state happen exactly as in the IR.
        """
        folded: dict[Value, Call] = {}
        for b in self.layout.blocks:
            term = b.terminator
            assert term is not None  # verified
            stack: list[tuple[Operation, list[int]]] = [(term, _terminator_order(term))]
            for op in reversed(b.ops[:-1]):
                assert isinstance(op, Call)
                form = self.form(op)
                if _fold_into(op, form, stack):
                    folded[op.result] = op
                else:
                    stack.clear()  # a statement: what comes before it stays before it
                order = form.order() if form is not None else tuple(range(len(op.operands)))
                stack.append((op, list(order)))
        return folded

    def _values_with_variables(self) -> tuple[set[Value], set[Value]]:
        """The values that need a variable; the results that are always None (setitem, ...),
        which are written as ``None``.  Unused results and dead arguments need none."""
        variables: set[Value] = set(self.f.args)
        none_results: set[Value] = set()
        for b in self.layout.blocks:
            if b is not self.f.entry:
                variables.update(a for a in b.args if a.has_uses())
            for op in b.calls:
                r = op.result
                form = self.form(op)
                if r in self.folded:
                    continue
                if form is not None and form.result_is_none:
                    none_results.add(r)
                elif _read(r) or (form is not None and form.statement):
                    variables.add(r)
        return variables, none_results

    def _deaths(self, b: Block) -> dict[Operation, list[Value]]:
        """The array variables of ``b`` to delete after each statement: made in ``b``, used
        only by its statements (not its terminator, nor another block), the statement their
        last use.  NumPy then frees an array, or reuses its memory, as soon as the program is
        done with it, as it does for the temporaries of an expression: a program that kept
        every temporary alive to its end touched fresh memory for each (twice the time of
        Rosenbrock's forward-mode program at 10⁶ elements)."""
        statement: dict[Operation, int] = {}
        ops = b.ops
        for i, op in enumerate(ops):
            statement[op] = i
        for op in reversed(ops[:-1]):  # a folded call is evaluated in the statement that uses it
            if isinstance(op, Call) and op.result in self.folded:
                (user,) = op.result.users
                statement[op] = statement[user]
        last = len(ops) - 1
        deaths: dict[Operation, list[Value]] = {}
        for op in ops[:-1]:
            if not isinstance(op, Call) or op.result in self.folded:
                continue
            v = op.result
            if v not in self.variables or not isinstance(v.type, T.Array) or _unpacked(op):
                continue
            users = v.users
            if not users or any(u.parent is not b or statement[u] == last for u in users):
                continue
            at = ops[max(statement[u] for u in users)]
            if at is not op:
                deaths.setdefault(at, []).append(v)
        return deaths

    def name(self, v: Value) -> str:
        """The variable holding ``v``, named from its hint (or numbered) when first needed."""
        text = self._names.get(v)
        if text is None:
            text = self.scope.fresh(v.name) if v.name else self.scope.numbered("_")
            self._names[v] = text
        return text

    def _ref(self, v: Value) -> str:
        return "None" if v in self.none_results else self.name(v)

    # -- operands (the ``operators.Operands`` protocol)

    def expr(self, v: Value) -> str:
        return self.operand(v, TOP)

    def atom(self, v: Value) -> str:
        return self.operand(v, ATOM)

    def operand(self, v: Value, level: int) -> str:
        return self._operand(v, level, bind_literals=False)

    def receiver(self, v: Value) -> str:
        # A literal here draws a SyntaxWarning (``1[0]``, ``"f"()``) or misparses (``1.real``).
        return self._operand(v, PRIMARY, bind_literals=True)

    def identity(self, v: Value) -> str:
        v = self._through_casts(v)
        if isinstance(v, Constant) and any(v.value is s for s in (None, True, False, ...)):
            return literal(v.value) or self.pool.bind(v.value)
        return self._operand(v, COMPARE + 1, bind_literals=True)

    def index(self, v: Value) -> str:
        v = self._through_casts(v)
        if isinstance(v, Constant):
            text = index_literal(v.value)
            if text is not None:
                return text
        return self.expr(v)

    def _through_casts(self, v: Value) -> Value:
        """A folded ``typing.cast(T, x)`` is written as ``x``."""
        call = self.folded.get(v)
        while call is not None and isinstance(inline_form(call), Cast):
            v = call.args[1]
            call = self.folded.get(v)
        return v

    def _operand(self, v: Value, level: int, bind_literals: bool) -> str:
        v = self._through_casts(v)
        if isinstance(v, Constant):
            if bind_literals:
                return self.pool.bind(v.value)
            text = self.pool.ref(v.value)
            return f"({text})" if level > TOP and text.startswith("-") else text
        call = self.folded.get(v)
        if call is None:
            return self._ref(v)
        text, precedence = self._expression(call)
        return text if precedence >= level else f"({text})"

    # -- operations

    def call_expression(self, op: Call) -> str:
        return self._expression(op)[0]

    def _expression(self, op: Call) -> tuple[str, int]:
        """``op`` as an expression, and its precedence."""
        if isinstance(op.callee, Constant) and op.callee.value is caught:
            assert self.caught_var is not None  # a verified function has a guard then
            return self.caught_var, ATOM
        form = self.form(op)
        if form is not None:
            return form.expression(op.args, self), form.precedence
        args = [self.expr(a) for a in op.args]
        args += [keyword_argument(k, self.expr(v)) for k, v in op.kwargs.items()]
        return f"{self.receiver(op.callee)}({', '.join(args)})", PRIMARY

    def form(self, op: Call) -> Form | None:
        """The syntax ``op`` is written in (None: a plain call)."""
        return inline_form(op)

    def prologue(self, out: SourceWriter) -> None:
        """Lines at the top of the function's body (none here)."""

    def emit_call(self, op: Call, out: SourceWriter) -> None:
        form = self.form(op)
        if form is not None and form.statement:
            target = "None" if op.result in self.none_results else self.name(op.result)
            loc = self._span(op, op.operands, op.loc)
            for text in form.statements(op.args, self, target):
                out.line(text, loc)
            return
        text = self.call_expression(op)
        if op.result in self.variables:
            text = f"{self.name(op.result)} = {text}"
        out.line(text, self._span(op, op.operands, op.loc))

    def _loc(self, term: Terminator) -> Location | str | None:
        """Where a terminator's line points: the lines of the calls folded into it, else its
        own location."""
        return self._span(None, term.operands, term.loc)

    def _span(
        self, root: Call | None, operands: t.Iterable[Value], default: Location | None
    ) -> Location | str | None:
        """The source lines of ``root`` and the calls folded into its operands: a location,
        or ``file:first-last`` when they span lines of one file; else ``default``."""
        locs = [] if root is None or root.loc is None else [root.loc]
        todo = [call for v in operands if (call := self.folded.get(v)) is not None]
        while todo:
            call = todo.pop()
            if call.loc is not None:
                locs.append(call.loc)
            todo.extend(c for v in call.operands if (c := self.folded.get(v)) is not None)
        if not locs:
            return default
        first, last = min(loc.line for loc in locs), max(loc.line for loc in locs)
        if first == last or any(loc.file != locs[0].file for loc in locs):
            return locs[0]
        return f"{locs[0].file}:{first}-{last}"

    # -- control flow
    #
    # Code before the dispatch loop runs once, top to bottom: a jump out of it falls out of
    # the ``if`` it is in, into a follower or into the loop.  Inside the loop a jump to a
    # follower falls out likewise, and any other jump ends in ``continue``.  An arm of a
    # branch that cannot fall out is written under ``if`` and the other arm continues
    # unindented after it; when both can, they make an ``if``/``else``.

    def write(self, out: SourceWriter) -> None:
        params = [self.name(a) for a in self.f.args]
        signature = ", ".join(params) + (", /" if params else "")
        out.line(f"def {self.function_name}({signature}):", self.f.loc)
        with out.indented():
            self.prologue(out)
            self._root(self.f.entry, out, _Context(self.layout.followers[self.f.entry]))
            if self.layout.needs_loop:
                out.line("while True:")
                with out.indented():
                    self._dispatch(self.layout.labelled, 0, out)

    def _root(self, root: Block, out: SourceWriter, ctx: _Context) -> bool:
        """Write a root's region and its followers'; True if control can fall out of them."""
        falls = True
        for b in (root, *self.layout.followers[root]):
            if b is not self.f.entry:
                out.comment(self.block_names.block_ref(b))
            falls = self._region(b, out, ctx)
        return falls

    def _dispatch(self, blocks: t.Sequence[Block], first: int, out: SourceWriter) -> None:
        """A balanced tree of ``<`` tests on the label: log2(n) tests to reach a block."""
        if len(blocks) == 1:
            ctx = _Context(self.layout.followers[blocks[0]], label=first)
            falls = self._root(blocks[0], out, ctx)
            assert not falls  # inside the loop every path ends in continue, return or raise
            return
        mid = len(blocks) // 2
        out.line(f"if {self.label_var} < {first + mid}:")
        with out.indented():
            self._dispatch(blocks[:mid], first, out)
        out.line("else:")
        with out.indented():
            self._dispatch(blocks[mid:], first + mid, out)

    def _region(self, block: Block, out: SourceWriter, ctx: _Context) -> bool:
        """Write ``block`` and the inline blocks it leads to; True if control can fall out of
        the end."""
        base = out.depth
        try:
            b, elif_next = block, False
            while True:  # one turn per block, so that long chains do not recurse
                term = b.terminator
                body = b.ops[:-2] if isinstance(term, Guard) else b.ops[:-1]
                deaths = self._deaths(b)
                for op in body:
                    assert isinstance(op, Call)
                    if op.result not in self.folded:
                        self.emit_call(op, out)
                        dead = deaths.get(op)
                        if dead:
                            out.line(f"del {', '.join(self.name(v) for v in dead)}")
                if isinstance(term, Return):
                    out.line(f"return {self.expr(term.value)}", self._loc(term))
                    return False
                if isinstance(term, Raise):
                    out.line(f"raise {self.expr(term.exc)}", self._loc(term))
                    return False
                if isinstance(term, Jump):
                    arm = _Arm(term.target, term.args, "")
                    follow = self._follow(arm, out, ctx, term, False)
                elif isinstance(term, Guard):
                    follow = self._guard(t.cast(Call, b.ops[-2]), term, out, ctx)
                else:
                    assert isinstance(term, Branch)
                    follow = self._branch(term, out, ctx, elif_next)
                if isinstance(follow, bool):
                    return follow
                b, elif_next = follow
        finally:
            out.depth = base  # an ``else:`` arm continued at a deeper level

    def _branch(
        self, term: Branch, out: SourceWriter, ctx: _Context, elif_: bool
    ) -> tuple[Block, bool] | bool:
        """Write a branch: the nested arm under ``if``, then start the other arm, which
        ``_region`` continues.  ``elif_`` says the ``if`` is the ``elif`` of an earlier one."""
        cond = self.expr(term.cond)
        true = _Arm(term.if_true, term.true_args, cond)
        false = _Arm(term.if_false, term.false_args, negated(cond))
        size_true, size_false = self._arm_size(true), self._arm_size(false)
        # The smaller arm nests, so that nesting stays logarithmic in the code size (Python
        # refuses 100 levels); a small true arm nests anyway, for ``if i < n: ...`` loops.
        by_size = [true, false] if size_true <= max(size_false, SMALL_ARM) else [false, true]
        cond_loc, keyword = self._loc(term), "elif" if elif_ else "if"

        stays = [arm for arm in by_size if not self._falls(arm, ctx)]
        if stays:
            nested = stays[0]
            rest = false if nested is true else true
            out.line(f"{keyword} {nested.test}:", cond_loc)
            with out.indented():
                self._arm(nested, out, ctx, term)
            return self._follow(rest, out, ctx, term, False)

        # Both arms fall out: ``if``/``else``, the larger arm in the else (or, when it is
        # itself such an ``if``, as ``elif``: flat, like an elif chain in the source).
        first, second = by_size
        out.line(f"{keyword} {first.test}:", cond_loc)
        with out.indented():
            self._arm(first, out, ctx, term)
        if self._opens_with_if_else(second, ctx):
            return self._follow(second, out, ctx, term, True)
        out.line("else:")
        out.depth += 1
        return self._follow(second, out, ctx, term, False)

    def _guard(
        self, call: Call, term: Guard, out: SourceWriter, ctx: _Context
    ) -> tuple[Block, bool] | bool:
        """The guarded call under ``try``; its handler arm under ``except`` (gibbous's own
        errors pass through); then the normal arm, after the statement or, when the handler
        arm can fall out of it too, under ``else``."""
        assert self.caught_var is not None
        normal = _Arm(term.normal, term.normal_args, "")
        handler = _Arm(term.handler, term.handler_args, "")
        out.line("try:", call.loc)
        with out.indented():
            self.emit_call(call, out)
        out.line(f"except {self.pool.bind(GibbousError)}:")
        with out.indented():
            out.line("raise")
        out.line(f"except BaseException as {self.caught_as}:")
        with out.indented():
            out.line(f"{self.caught_var} = {self.caught_as}")  # `as` unbinds at the end
            self._arm(handler, out, ctx, term)
        if self._falls(handler, ctx):
            out.line("else:")
            out.depth += 1
        return self._follow(normal, out, ctx, term, False)

    def _falls(self, arm: _Arm, ctx: _Context) -> bool:
        """Can control fall out of the end of this arm's code?"""
        if arm.target in self.layout.inline:
            return self.layout.falls[arm.target]
        return ctx.label is None or arm.target in ctx.followers

    def _arm_size(self, arm: _Arm) -> int:
        return self.layout.sizes[arm.target] if arm.target in self.layout.inline else 0

    def _opens_with_if_else(self, arm: _Arm, ctx: _Context) -> bool:
        """Is the arm's first line an ``if`` whose arms both fall out (so an ``elif`` fits)?"""
        b = arm.target
        term = b.terminator
        return (
            b in self.layout.inline
            and not any(p.has_uses() for p in b.args)  # no assignment comes first
            and all(op.result in self.folded for op in b.calls)
            and isinstance(term, Branch)
            and self._falls(_Arm(term.if_true, (), ""), ctx)
            and self._falls(_Arm(term.if_false, (), ""), ctx)
        )

    def _arm(self, arm: _Arm, out: SourceWriter, ctx: _Context, term: Terminator) -> bool:
        """Write an arm completely, as the body of an ``if``."""
        follow = self._follow(arm, out, ctx, term, False)
        if isinstance(follow, bool):
            return follow
        return self._region(follow[0], out, ctx)

    def _follow(
        self, arm: _Arm, out: SourceWriter, ctx: _Context, term: Terminator, elif_next: bool
    ) -> tuple[Block, bool] | bool:
        """Pass the arm's arguments; then either the inline block to continue with, or (for
        a jump to another root or a follower) whether control falls out here."""
        # A jump's arguments may hold folded calls, whose location the assignment shows.
        assign_loc = self._loc(term) if isinstance(term, Jump) else term.loc
        self._assign(arm.target, arm.args, out, assign_loc)
        if arm.target in self.layout.inline:
            return arm.target, elif_next
        return self._goto(arm.target, out, ctx, term.loc)

    def _assign(
        self,
        target: Block,
        args: t.Sequence[Value],
        out: SourceWriter,
        loc: Location | str | None,
    ) -> None:
        """Pass ``args`` to ``target``'s arguments, all at once (``a, b = b, a`` swaps)."""
        lhs, rhs = [], []
        for param, arg in zip(target.args, args):
            if not param.has_uses():
                continue  # never read, so never named (nothing is folded into it)
            name = self.name(param)
            value = self.expr(arg)
            if value != name:
                lhs.append(name)
                rhs.append(value)
        if lhs:
            out.line(f"{', '.join(lhs)} = {', '.join(rhs)}", loc)

    def _goto(self, target: Block, out: SourceWriter, ctx: _Context, loc: Location | None) -> bool:
        if target in ctx.followers:
            return True  # written next: fall out of the code written so far
        label = self.layout.labels[target]
        if self.label_var is not None and label != ctx.label:
            out.line(f"{self.label_var} = {label}", loc)
        if ctx.label is None:
            return True  # before the loop: fall into it
        out.line("continue", loc)
        return False


def _unpacked(op: Call) -> bool:
    """An item of a tuple or list (a tape record's): the container keeps it alive anyway."""
    callee = op.callee
    return (
        isinstance(callee, Constant)
        and callee.value is operator.getitem
        and not isinstance(op.args[0].type, T.Array)
    )


def _terminator_order(term: Terminator) -> list[int]:
    """The operands a terminator's line evaluates, in order.  A branch evaluates only its
    condition before choosing an arm (an arm's values must not move into one arm, where the
    other would skip them); a jump skips the arguments its target never reads."""
    if isinstance(term, Branch):
        return [0]
    if isinstance(term, Jump):
        return [i for i, p in enumerate(term.target.args) if p.has_uses()]
    if isinstance(term, Guard):
        return []  # the guarded call is a statement of its own, under ``try``
    return list(range(len(term.operands)))


def _read(v: Value) -> bool:
    """Whether anything reads ``v`` (a guard naming the call it guards does not)."""
    return any(not (isinstance(u.user, Guard) and u.index == 0) for u in v.uses)


def _fold_into(op: Call, form: Form | None, stack: list[tuple[Operation, list[int]]]) -> bool:
    """Can ``op`` (written in ``form``) be written inside the expression being built
    (innermost call last)?  If so, close the calls above its user and the user's operands
    evaluated after it."""
    uses = op.result.uses
    if (form is not None and form.statement) or len(uses) != 1:
        return False
    use = uses[0]
    for depth in range(len(stack) - 1, -1, -1):
        user, open_operands = stack[depth]
        if user is use.user:
            if use.index not in open_operands:
                return False
            del open_operands[open_operands.index(use.index) :]
            del stack[depth + 1 :]
            return True
    return False


@attrs.frozen
class _Context:
    """Where code is being written: before the loop (``label`` None) or under ``label``, and
    which blocks follow in sequence there."""

    followers: t.Collection[Block]
    label: int | None = None
