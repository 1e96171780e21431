"""The forward-mode transform: a typed function becomes one that returns its value and tangent.

``f(x1, ..., xn)`` becomes ``f_jvp(x1, ..., xn, dx_i, ...)`` with one tangent argument per
*varied* argument (one with a tangent), returning ``pair(y, dy)``.  A value is varied when it
is a varied argument, or the result of a call with a varied operand, or a block argument that
some edge passes a varied value to, and its type can carry a real tangent (a float, a float
array).  The blocks stay the primal's, in the primal's order, with a tangent block argument
beside each varied one; every primal call is made as the primal makes it, so the value is the
primal's, bit for bit.  After a call with varied operands comes its tangent:

    %z = call numpy.sin(%x)                      # the primal call, as it was
    %0 = call math.cos(%x)                       # the tangent, written out by the site's
    %dz = call operator.mul(%dx, %0)             # forward rule (gibbous.rules.frules)

or, where a type is ``Any``, a call of the rule's tangent function; a call of a Python
function becomes a call of the callee's own forward program, which returns the pair.
``resolve`` (the session's) says which.

Writes into arrays (``z[i] = x``, ``out=``, ``z += x``, a callee writing into its argument)
are followed: ``gibbous.forward.activity`` finds every array a write may reach, which gets a
tangent memory where it is made, aliased as the primal is, and the write's rule
(``gibbous.rules.inplace_forward``) writes the tangent where the primal writes.

Exception edges (``try``, ``with``) are the primal's: the guard goes on the call that does the
guarded call's work, its tangent on the normal side (``_GuardingBuilder``).

What this version refuses, with an error naming the construct and the line: a varied value of
another type (a container, a complex number, an object), a write into an array it cannot give a
tangent (a global, an array in a list) or by a function without a rule for it.  A wrong
tangent is never the result: what is not understood is refused.
"""

from __future__ import annotations

import builtins
import operator
import types
import typing as t
from types import FunctionType

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.cfg import reverse_postorder
from gibbous.ir.core import (
    Block,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Jump,
    Location,
    Operation,
    Raise,
    Result,
    Return,
    Value,
    edge_args,
)
from gibbous.ir.purity import is_pure_call, returns_fresh
from gibbous.reverse.activity import WRITE_NOTHING
from gibbous.forward.generators import lower as lower_generator
from gibbous.forward.generators import seeds as generator_seeds
from gibbous.forward.quicker import fold_scales, quicker_sums, reuse_temporaries
from gibbous.forward.calls import Calls, Resolver
from gibbous.forward.activity import (
    analyse,
    operands,
    tangent_carrying,
    tangentless,
)
from gibbous.rules import frules
from gibbous.rules import structure
from gibbous.rules import inplace_forward
from gibbous.rules.emit import ForwardModeError as ForwardModeError
from gibbous.rules.emit import complex_type, item_tangent, real_type, unknown, user_class
from gibbous.rules.public_names import callable_name


def jvp_transform(
    f: Function,
    varied_args: t.Sequence[bool],
    resolver: Resolver,
    fn_name: str,
    tangent_only: bool = False,
    reversible: bool = False,
    closure_of: FunctionType | None = None,
) -> Function:
    """``f``'s forward program (see the module's doc); with ``tangent_only`` it returns the
    tangent alone (what a Hessian-vector product differentiates); ``reversible``: a program
    reverse mode will differentiate (a callee's, in a Hessian-vector product), written with
    calls that have reverse rules only; ``closure_of``: ``f`` is this function's IR, made over
    cells with boxes: the program takes the function called and the boxes first, and reads the
    cells of the function it is given (``gibbous.library.python.closures``), so one program serves
    every function made anew of the same code."""
    made = _Transform(f, tuple(varied_args), resolver, fn_name, tangent_only, closure_of)
    made.reversible = reversible or tangent_only
    return made.run(made.reversible)


class _Transform(Calls):
    def __init__(
        self,
        f: Function,
        varied_args: tuple[bool, ...],
        resolver: Resolver,
        fn_name: str,
        tangent_only: bool,
        closure_of: FunctionType | None = None,
    ) -> None:
        self.f, self.resolver, self.fn_name = f, resolver, fn_name
        self.resolve = resolver.resolve
        self.tangent_only = tangent_only
        self.reversible = tangent_only  # (a program reverse mode differentiates: hvp's)
        self.closure_of = closure_of
        # ``closure_cell(fn, i)`` of the function itself: its cells, boxes passed in
        self.own_cells = [
            op.result for op in f.calls() if closure_of is not None and _own_cell(op, closure_of)
        ]
        self.varied = self._analyse(varied_args)
        self.primal: dict[Value, Value] = {}
        self.plain_values: set[Call] = set()
        self.tangent: dict[Value, Value] = {}
        self.blocks: dict[Block, Block] = {}
        args = [(a.name, a.type) for a in f.args]
        args += [(f"d{a.name or i}", a.type) for i, a in enumerate(f.args) if a in self.varied]
        if closure_of is not None:  # (the function, whose cells it reads, and their boxes)
            args[:0] = [("closure_fn", T.ANY), ("dclosure", T.ANY)]
        self.out = Function(f"{f.name}_jvp", args, loc=f.loc)

    def _analyse(self, varied_args: tuple[bool, ...]) -> set[Value]:
        for a, v in zip(self.f.args, varied_args):
            # (``Any``: a callee's argument of a type inference could not tell, whose tangent
            # functions check at run time what they get)
            if v and not tangent_carrying(a.type):
                raise self.refuse(None, f"argument {a.name!r} of type {a.type}")
        seeds = [*self.own_cells, *generator_seeds(self.f)]
        found = analyse(self.f, varied_args, self.resolver.writes, seeds)
        for op, ty in found.untyped_edges:
            raise self.refuse(op, f"a value of type {ty}")
        for what, op in found.unreachable:
            raise self.refuse(op, f"a write into {what}")
        self.exposed = found.exposed
        return set(found.values)

    # -- emission ---------------------------------------------------------------------------

    def run(self, reversible: bool) -> Function:
        order = reverse_postorder(self.f)
        for block in self.f.blocks:
            if block is self.f.entry:
                new = self.out.entry
                params = [a for a in new.args]
                if self.closure_of is not None:
                    self.closure_fn, self.dclosure, params = params[0], params[1], params[2:]
                n = len(block.args)
                for old, p in zip(block.args, params[:n]):
                    self.primal[old] = p
                for old, p in zip([a for a in block.args if a in self.varied], params[n:]):
                    self.tangent[old] = p
            else:
                new = self.out.add_block(block.name)
                for a in block.args:
                    self.primal[a] = new.add_arg(a.type, a.name)
                for a in block.args:
                    if a in self.varied:
                        self.tangent[a] = new.add_arg(_tangent_arg(a.type), f"d{a.name or ''}")
            self.blocks[block] = new
        for block in order:
            b = _GuardingBuilder(self.out, self.blocks[block])
            term = block.terminator
            for op in block.ops:
                b.loc = op.loc
                if isinstance(term, Guard) and isinstance(op, Call) and op.result is term.guarded:
                    # (the handler edge's values exist before the call: made here, unguarded)
                    handler = self.edge(b, term, 1)
                    b.pending = (self.blocks[term.handler], handler, term.loc)
                self.emit(b, op)
                assert b.pending is None, "the guarded call made no call"
        if not reversible:  # (reverse mode has no rule for the quicker call)
            quicker_sums(self.out)
        else:  # (nor for a call on a tangent that may be None: there it is not)
            for call in self.out.calls():
                callee = call.callee
                if isinstance(callee, Constant) and callee.value in structure.ON_TANGENT:
                    call.set_operand(0, Constant(structure.ON_TANGENT[callee.value]))
        primal = {v.op for v in self.primal.values() if isinstance(v, Result) and isinstance(v.op, Call)}
        fold_scales(self.out, primal | self.plain_values)
        if not reversible:  # (reverse mode has no rule for ``reuse``)
            reuse_temporaries(self.out, primal | self.plain_values)
        return self.out

    def emit(self, b: Builder, op: Operation) -> None:
        if isinstance(op, Call):
            self.call(b, op)
        elif isinstance(op, Jump):
            b.jump(self.blocks[op.target], *self.edge(b, op, 0))
        elif isinstance(op, Branch):
            b.branch(
                self.p(op.cond),
                self.blocks[op.successors[0]],
                self.edge(b, op, 0),
                self.blocks[op.successors[1]],
                self.edge(b, op, 1),
            )
        elif isinstance(op, Return):
            # (no tangent: None, which the entry point makes zeros of the result's shape; but
            # zeros for a float or an array, whose caller's own program may have found it
            # varied, since a call with a varied operand is, and reads its tangent as one)
            v = op.value
            dv = self.tangent.get(v) if v in self.varied else None
            if dv is None and _numeric(v.type):
                dv = frules.zero(b, self.p(v))
            if self.tangent_only:
                b.ret(frules.zero(b, self.p(v)) if dv is None else dv)
            else:
                b.ret(pair(b, self.p(v), Constant(None) if dv is None else dv))
        elif isinstance(op, Raise):
            b.raise_(self.p(op.exc))
        else:
            # (the guard itself followed the call that does the primal's work)
            assert isinstance(op, Guard)
            b.jump(self.blocks[op.normal], *self.edge(b, op, 0))

    def edge(self, b: Builder, op: Jump | Branch | Guard, i: int) -> list[Value]:
        succ = op.successors[i]
        values = edge_args(op, i)
        out = [self.p(v) for v in values]
        out += [self.d(b, v) for param, v in zip(succ.args, values) if param in self.varied]
        return out

    def call(self, b: Builder, op: Call) -> None:
        r = op.result
        callee = self.p(op.callee)
        args = [self.p(a) for a in op.args]
        kwargs = {k: self.p(v) for k, v in op.kwargs.items()}
        given = operands(op)
        varied = tuple(a in self.varied for a in given)
        if lower_generator(self, b, op):
            return
        if op.callee in self.varied:  # (a closure made here: its cells' boxes go along)
            self.dynamic(b, op, callee, args, varied)
            return
        if _is_call_ex(op) and any(varied):
            self.star_call(b, op, varied)
            return
        if _is_closure_cell(op):
            self.closure_cell(b, op, args)
            return
        if _builtin_method(op):  # (``xs.append`` read before a guarded call: no tangent)
            self.primal[r] = b.call(callee, *args, type=r.type, name=r.name)
            self.varied.discard(r)
            return
        pure = is_pure_call(op) or _writes_nothing(op)
        # (an item of what has no derivative, ``shapes[:, axis]`` of an int array, whatever
        # tangent the index got: its type could not be told)
        part_of_constant = _getitem(op) and tangentless(op.args[0].type)
        if not any(varied) or pure and tangentless(r.type) or part_of_constant:
            # No tangent in, or none out (``x > 0``, ``int(x)``): the primal's call.
            self.primal[r] = b.call(callee, *args, kwargs=kwargs, type=r.type, name=r.name)
            self.constant(b, r)
            return
        if not isinstance(op.callee, Constant):  # (a closure's cell, an argument, ...)
            self.dynamic(b, op, callee, args, varied)
            return
        name = callable_name(op.callee.value)
        fn = op.callee.value
        types = tuple(v.type for v in given)
        if isinstance(fn, type) and user_class(fn):
            self.construct(b, op, fn, varied)
            return
        if _namedtuple(fn) and not op.kwargs and len(op.args) == len(getattr(fn, "_fields")):
            # (its tangent: the NamedTuple of its items' tangents)
            self.primal[r] = b.call(callee, *args, type=r.type, name=r.name)
            d = [item_tangent(b, a, self.tangent.get(x)) for a, x in zip(args, op.args)]
            self.tangent[r] = b.call(callee, *d, type=T.ANY)
            return
        code = self.resolver.derived_code(fn, types, tuple(op.kwargs))
        if code is not None:
            self.derived_call(b, op, code, varied)
            return
        if self.resolver.writes(op, varied):  # (a primitive's, or a registered function's)
            self.write(b, op, fn, args, kwargs, varied)
            return
        # (a linear function, ``np.reshape`` of a mask: a view, made for its value)
        linear = fn in inplace_forward.LINEAR
        if not pure and tangentless(r.type) and not isinstance(fn, FunctionType) and not linear:
            # (a call made for what it writes, into what forward mode cannot follow:
            # ``a.append(x)``, ``y[0] = x`` with ``y`` of unknown type)
            raise self.refuse(op, f"{name}, which may write into an operand with a tangent")
        if fn in frules.IN_PLACE and op.args and isinstance(op.args[0].type, T.Any):
            # ``x += y`` into a float makes a new value; into an array (of a type inference
            # could not tell) it writes, into its tangent too when it has one
            if op.args[0] in self.varied and len(op.args) == 2 and not op.kwargs:
                if not self.reversible:
                    self.in_place_of_any(b, op, fn, varied)
                    return
                if self.in_place_written(b, op, fn, varied):
                    return
            b.call(frules.not_an_array, self.p(op.args[0]), name, type=T.NONE)
        if fn in (set, frozenset) and r not in self.varied and not kwargs:
            # (a set of keys, ``set(d) & set(kwds)`` in SciPy: hashed items, which carry no
            # tangent; one that is a float is refused at run time, its derivative lost)
            self.primal[r] = b.call(callee, *args, type=r.type, name=r.name)
            b.call(frules.no_float_items, self.primal[r], Constant(name), type=T.NONE)
            self.constant(b, r)
            return
        if r not in self.varied and not tangentless(r.type):
            raise self.refuse(op, f"{name}, whose result ({r.type}) depends on a float")
        site = self.resolve(op, varied)  # (a call without a forward rule is refused there)
        z = self.primal[r] = b.call(callee, *args, kwargs=kwargs, type=r.type, name=r.name)
        if site.kind == "zero" or r not in self.varied:
            self.constant(b, r)  # (no derivative: a constant from here on)
            return
        if isinstance(site.what, frules.Emit):  # the tangent written out
            dx = [self.tangent[a] if v else None for a, v in zip(given, varied)]
            self.tangent[r] = site.what.fn(b, z, args, dx, kwargs)
        else:
            written = (
                frules.written_form(fn, types, tuple(op.kwargs), varied)
                if self.reversible
                else None
            )
            if written is not None:  # (its written form, checked first)
                dx = [self.tangent[a] if v else None for a, v in zip(given, varied)]
                self.tangent[r] = written.fn(b, z, args, dx, kwargs)
                self.settle(b, op)
                return
            if self.reversible:  # (a tangent function: reverse mode cannot look inside)
                shown = ", ".join(str(a.type) for a in given)
                raise self.refuse(
                    op,
                    f"{name}({shown}) in a Hessian-vector product: its tangent is computed by "
                    "a function called at run time (operand types the build cannot tell, or a "
                    "rule not written out), which reverse mode cannot differentiate again",
                )
            tangents = [self.tangent[a] if v else Constant(None) for a, v in zip(given, varied)]
            self.tangent[r] = b.call(site.what, z, *args, *tangents, kwargs=kwargs, type=r.type)
        self.settle(b, op)

    def in_place_written(self, b: Builder, op: Call, fn: object, varied: tuple[bool, ...]) -> bool:
        """``x op= y`` of an ``x`` of unknown type in a Hessian-vector product's program: the
        tangent of ``x op y`` written out (from the operands before the write), the write,
        then ``written_tangent``: that tangent, written into ``x``'s for an array.  False
        where ``x op y`` has no written form (the call is refused for an array then)."""
        x, y = op.args
        plain = inplace_forward.IN_PLACE_OF.get(fn)
        form = None if plain is None else frules.written_form(plain, (x.type, y.type), (), varied)
        if form is None:
            return False
        r = op.result
        dx, dy = (self.tangent[a] if v else None for a, v in zip(op.args, varied))
        before = b.call(plain, self.p(x), self.p(y), type=T.ANY)  # (for the formula's z)
        d = form.fn(b, before, [self.p(x), self.p(y)], [dx, dy], {})
        self.primal[r] = b.call(fn, self.p(x), self.p(y), type=r.type, name=r.name)
        self.tangent[r] = b.call(inplace_forward.written_tangent, self.p(x), self.tangent[x], d, type=T.ANY)
        self.varied.add(r)
        return True

    def constant(self, b: Builder, r: Value) -> None:
        """``r`` has no derivative; if a write may reach it later, it gets a tangent of zeros,
        its own memory (``z = np.zeros(3)`` before ``z[0] = x``)."""
        if r in self.exposed and r in self.varied:
            z = self.primal[r]
            if isinstance(z.type, T.Array):
                self.tangent[r] = b.call(np.zeros_like, z, type=z.type)
            elif self.reversible and _calls(r, runtime.make_cell):
                # (its tangent a real cell, which reverse mode follows: empty for an empty
                # cell; for a parameter's, ``make_cell(cond)`` on Python 3.11, where a
                # comprehension reads it, zeros like what it holds, read there)
                made = t.cast(Result, r).op
                held = [b.call(frules.like, self.p(a), Constant(None), type=T.ANY) for a in made.args]
                self.tangent[r] = b.call(runtime.make_cell, *held, type=z.type)
            else:
                self.tangent[r] = b.call(frules.like, z, None, type=z.type)
        else:
            self.varied.discard(r)

    def settle(self, b: Builder, op: Call) -> None:
        """Where a write may reach the result of ``op`` (or it may be a view of an array a
        write reaches), its tangent must alias as it does (``FW.fresh`` checks, or copies)."""
        r = op.result
        if isinstance(r.type, _NOT_ARRAYS) or (
            isinstance(r.type, T.Object) and not issubclass(r.type.cls, np.ndarray)
        ):  # (``fresh`` keeps the tangent of what is never an array: a function, a cell)
            return
        given = operands(op)
        if r not in self.exposed and (returns_fresh(op) or not any(a in self.exposed for a in given)):
            return
        callee = op.callee.value if isinstance(op.callee, Constant) else None
        if callee in _SAME_VIEWS or callee in _NEVER_ARRAYS:
            return
        if self.reversible and callee is runtime.cell_get:  # (the tangent the cell holds)
            return  # (the same call on the tangent: a view exactly where the primal's is)
        if self.reversible:  # (what ``fresh`` would find, where it is known here)
            callee = op.callee.value if isinstance(op.callee, Constant) else None
            if returns_fresh(op) or callee in _COPIES:  # new memory: so its tangent
                # (``+d``: a copy of an array, a float itself, where the type is unknown)
                copy = np.copy if isinstance(r.type, T.Array) else operator.pos
                self.tangent[r] = b.call(copy, self.tangent[r], type=r.type)
                return
        pairs: list[Value] = []
        for a in given:
            if a in self.varied and not isinstance(a.type, (T.Float, T.Const)):
                pairs += [self.p(a), self.tangent[a]]
        self.tangent[r] = b.call(inplace_forward.fresh, self.primal[r], self.tangent[r], *pairs, type=r.type)

    def write(
        self,
        b: Builder,
        op: Call,
        fn: object,
        args: list[Value],
        kwargs: dict[str, Value],
        varied: tuple[bool, ...],
    ) -> None:
        """A call of a primitive that writes into an array: the primal and its tangent, which
        the rule writes where the primal writes (``gibbous.rules.inplace_forward``)."""
        r, given = op.result, operands(op)
        types = tuple(v.type for v in given)
        kwnames = tuple(op.kwargs)
        written = self.resolver.writes(op, varied)
        d = [self.tangent[a] if v else None for a, v in zip(given, varied)]
        if all(d[i] is None for i in written):  # (into an int array: no derivative there)
            self.primal[r] = b.call(self.p(op.callee), *args, kwargs=kwargs, type=r.type)
            self.constant(b, r)
            return
        emit = inplace_forward.direct(fn, types, kwnames, varied, self.reversible)
        if emit is not None:
            z, dz = emit(b, args, kwargs, d)
        else:
            z, dz = self.write_through_plain(b, op, fn, varied, d)
        self.primal[r] = z
        if r in self.varied:
            if dz is None:
                self.constant(b, r)
            else:
                self.tangent[r] = dz

    def write_through_plain(
        self, b: Builder, op: Call, fn: object, varied: tuple[bool, ...], d: list[Value | None]
    ) -> tuple[Value, Value]:
        """``z *= x``, ``f(x, out=z)``: the value and tangent of ``z * x``, ``f(x)``, from the
        operands before the write, then the write (the primal's own call, or for a ufunc's
        ``out=`` the copy of that value), then the tangent's copy into ``dz``."""
        given = operands(op)
        args = [self.p(a) for a in op.args]
        kwargs = {k: self.p(v) for k, v in op.kwargs.items()}
        plain = inplace_forward.plain(fn, tuple(v.type for v in given), tuple(op.kwargs))
        if plain is None:
            raise self.refuse(op, f"{callable_name(fn)}, which writes into an array with a tangent")
        pfn, ptypes, pkw, w = plain
        inputs = [k for k in range(len(given)) if k != w or fn in inplace_forward.IN_PLACE_OF]
        where: Value | None = None  # (a ufunc's ``where=``: which elements the write writes)
        if "where" in pkw:
            at = len(ptypes) - len(pkw) + pkw.index("where")
            mask = given[inputs[at]]
            where = None if _default_where(mask.type) else self.p(mask)
            del inputs[at]
            ptypes = ptypes[:at] + ptypes[at + 1 :]
            pkw = tuple(k for k in pkw if k != "where")
        pvaried = tuple(varied[k] for k in inputs)
        values = [self.p(given[k]) for k in inputs]
        n = len(ptypes) - len(pkw)
        pargs, pkwargs = values[:n], dict(zip(pkw, values[n:]))
        target = self.p(given[w])
        tz = b.call(pfn, *pargs, kwargs=pkwargs, type=T.ANY)
        self.plain_values.add(tz.op)  # (a primal value: not to be refolded)
        if not any(pvaried):
            dt: Value = Constant(0.0)
        else:
            site = self.resolver.primitive_site(pfn, ptypes, pkw, pvaried, op.loc)
            if site.kind == "zero":
                dt = Constant(0.0)
            elif isinstance(site.what, frules.Emit):
                dt = site.what.fn(b, tz, pargs, [d[k] for k in inputs], pkwargs)
            elif site.kind == "tangent":
                tangents = [Constant(None) if d[k] is None else d[k] for k in inputs]
                dt = b.call(site.what, tz, *pargs, *tangents, kwargs=pkwargs, type=T.ANY)
            else:
                raise self.refuse(op, f"{callable_name(fn)}, which writes into an array")
        if isinstance(fn, np.ufunc) and fn not in inplace_forward.IN_PLACE_OF:
            casting = kwargs.get("casting", Constant("same_kind"))
            written = {"casting": casting} if where is None else {"casting": casting, "where": where}
            b.call(np.copyto, target, tz, kwargs=written, type=T.NONE)
            z = target
        else:
            r = op.result
            z = b.call(self.p(op.callee), *args, kwargs=kwargs, type=r.type, name=r.name)
        dtarget = d[w]
        assert dtarget is not None
        if real_type(target.type) and not unknown(target.type) and any(
            complex_type(v.type) for v in pargs
        ):  # (a complex value written into a real array keeps its real part: so does dt)
            dt = b.call(np.real, dt, type=target.type)
        b.call(np.copyto, dtarget, dt, kwargs={} if where is None else {"where": where}, type=T.NONE)
        return z, dtarget


def _default_where(ty: T.Type) -> bool:
    """``where=True``, or NumPy's ``_NoValue`` (its ``nan*`` functions pass theirs on)."""
    if not isinstance(ty, T.Const):
        return False
    return ty.value is True or type(ty.value).__name__ == "_NoValueType"


class _GuardingBuilder(Builder):
    """A builder that guards the first call it makes after ``pending`` is set with the
    primal's exception edge: the call that does the work of the primal's guarded call (the
    primal call itself, a callee's forward program, a write's rule).  What follows it, the
    tangent, goes on on the normal side."""

    pending: tuple[Block, list[Value], Location | None] | None = None

    def call(self, callee: object, *args: object, **kw: t.Any) -> Result:
        made = super().call(callee, *args, **kw)
        if self.pending is not None:
            handler, handler_args, loc = self.pending
            self.pending = None
            normal = self.add_block()
            self.guard(made, normal, [], handler, handler_args, loc=loc)
            self.at_end(normal)
        return made


#: calls whose result is a view of their first operand, or new memory, by their operands'
#: shapes and indices alone, not by the layout: the same call on the tangent (their forward
#: rules' tangent) is a view of the tangent exactly where the primal is a view
_SAME_VIEWS = frozenset([
    operator.getitem, builtins.iter, builtins.next, builtins.enumerate, runtime.next_or_stop,
    runtime.unpack, np.transpose, np.ndarray.transpose, np.swapaxes, np.ndarray.swapaxes,
    np.moveaxis, np.expand_dims, np.squeeze, np.ndarray.squeeze, np.broadcast_to,
    np.atleast_1d, np.atleast_2d, np.flip, np.copy, np.ndarray.copy, np.array,
    builtins.list, builtins.tuple,  # (an array's rows: views by its shape alone)
    dict.get, dict.pop,  # (the value stored, or the default: its tangent, the one stored)
])  # fmt: skip

#: types whose values are never arrays: ``FW.fresh`` returns their tangents as they are (a
#: tuple's items are aliased as the primal's are: ``make_tuple`` of the items' tangents)
_NOT_ARRAYS = (T.Float, T.Const, T.Tuple, T.List, T.Dict, T.Int, T.Bool, T.Str, T.NoneType)

#: calls whose results are never arrays (whatever type inference could tell of them)
_NEVER_ARRAYS = frozenset([
    runtime.make_cell, runtime.make_function, runtime.make_genexpr, runtime.make_tuple,
    runtime.make_list, runtime.make_dict,
])  # fmt: skip

#: calls that return new memory whatever their operands (their tangents are new too)
# (sum: 0 + ...; ``np.full``: new memory, whatever its fill value)
_COPIES = frozenset([np.copy, np.ndarray.copy, np.array, builtins.sum, np.full, np.full_like])


def _calls(r: Value, fn: object) -> bool:
    """Whether ``r`` is the result of a call of ``fn``."""
    if not isinstance(r, Result) or not isinstance(r.op, Call):
        return False
    callee = r.op.callee
    return isinstance(callee, Constant) and callee.value is fn


def _namedtuple(fn: object) -> t.TypeGuard[type[tuple[t.Any, ...]]]:
    return isinstance(fn, type) and issubclass(fn, tuple) and hasattr(fn, "_fields")


def _builtin_method(op: Call) -> bool:
    """``getattr(x, "name")`` of a method of a builtin container (``xs.append``): the frontend
    calls the method itself (``list.append(xs, ...)``); the read stays where it may raise."""
    callee = op.callee
    if not (isinstance(callee, Constant) and callee.value is getattr and len(op.args) == 2):
        return False
    cls, name = T.python_class(op.args[0].type), op.args[1]
    return (
        cls in (list, dict, tuple, set)
        and isinstance(name, Constant)
        and isinstance(getattr(cls, str(name.value), None), types.MethodDescriptorType)
    )


def _is_call_ex(op: Call) -> bool:
    callee = op.callee
    return isinstance(callee, Constant) and callee.value is runtime.call_ex


def _is_closure_cell(op: Call) -> bool:
    callee = op.callee
    return isinstance(callee, Constant) and callee.value is runtime.closure_cell


def _own_cell(op: Call, fn: FunctionType) -> bool:
    """``closure_cell(fn, i)``: a cell of ``fn`` itself."""
    return _is_closure_cell(op) and isinstance(op.args[0], Constant) and op.args[0].value is fn


def _numeric(ty: T.Type) -> bool:
    """A float, complex or float array type, whose zero tangent is a number or zeros, or a
    type inference could not tell (``emit.like`` makes zeros for what it is at run time); a
    float constant's too (``beta = 0.0`` on one branch: SciPy's ``kaiser_beta``)."""
    if isinstance(ty, T.Const):
        ty = T.widen(ty)
    if isinstance(ty, T.Array):
        return ty.dtype is None or np.dtype(ty.dtype).kind in "fc"
    return isinstance(ty, (T.Float, T.Complex, T.Any))


def _tangent_arg(ty: T.Type) -> T.Type:
    """The type of a block argument's tangent: its value's, or ``any`` for a tuple or list
    whose items the build could not tell (the tangent of ``(Ellipsis,) + index`` is made at
    run time, ``any`` to the build)."""
    return T.ANY if isinstance(ty, T.Object) and ty.cls in (tuple, list) else ty


def pair(b: Builder, y: Value, dy: Value) -> Value:
    """What a forward program returns: the value and its tangent."""
    return b.call(runtime.make_tuple, y, dy, type=T.Tuple((y.type, dy.type)))


def _a_str(ty: T.Type) -> bool:
    return isinstance(ty, T.Const) and type(ty.value) is str or ty == T.typeof("")


def _getitem(op: Call) -> bool:
    return isinstance(op.callee, Constant) and op.callee.value is operator.getitem and len(op.args) == 2


def _writes_nothing(op: Call) -> bool:
    callee = op.callee
    if not isinstance(callee, Constant):
        return False
    if callee.value is operator.getitem and op.args:  # (an item of a plain tuple, of any type)
        ty = op.args[0].type
        return isinstance(ty, T.Tuple) and ty.cls is tuple
    if isinstance(callee.value, type) and issubclass(callee.value, BaseException):
        return callee.value.__module__ == "builtins"  # (an exception of Python's own)
    if getattr(callee.value, "__objclass__", None) is str:  # (``", ".join``: a new string)
        return True
    if callee.value is operator.mod and op.args and _a_str(op.args[0].type):
        return True  # (``"%d given" % a.ndim``: str's own formatting, a new string)
    # (a conversion writes nothing: ``np.asarray(mask, dtype=bool)`` of a mask of unknown type)
    # (nor does making a new array of others: ``np.insert(shape, axis, n)``)
    conversions = (
        np.ndarray.astype, int, round, np.asarray, np.asanyarray, np.array, np.insert, np.delete,
        np.append,
    )  # fmt: skip
    return callee.value in WRITE_NOTHING or callee.value in conversions
