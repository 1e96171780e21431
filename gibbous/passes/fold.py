"""Constant folding: evaluate pure calls on constants once, at compile time.

A call is folded when its callee is registered pure for its argument types, the callee and
every argument are constants, and every argument value is immutable (an array constant may be
mutated in place before the call runs, so its contents at compile time prove nothing).  The
call is evaluated once; its uses then read a ``Constant`` of the result instead, and the call
is deleted.  The result is kept only if

* the evaluation returned normally: a call that raises stays, to raise at run time.  NumPy
  floating-point errors and Python warnings count as raising (they are turned into errors while
  evaluating), because the program may run under ``np.errstate(all="raise")`` or
  ``warnings.simplefilter("error")``, and folding must not change what it would do;
* the result is immutable (``is_immutable_value``): a folded array would be one object shared
  by every run of the program, so an in-place update in one run would leak into the next;
* the result has a text form (the printer must be able to show every constant) and its
  constant type is a subtype of the call's declared type, so every use stays well typed;
* the evaluation and the result are small: like CPython's own constant folder, we refuse
  ``2 ** 10**9``, ``"x" * 10**9`` or ``np.ones(10**9)``, which would stall the compiler or
  bloat the IR; and a call declared to return an array or a container is not evaluated.

Module attributes (``getattr(numpy, "sin")``) fold to their value when the pass runs: that is
the same freezing the frontend applies to globals.

A value whose type is one constant (a parameter specialised on ``np.add``, a result inference
computed) is replaced by that constant first.

A ``branch`` on an immutable constant becomes a ``jump`` to the side it would take.  The other
side may become unreachable; ``simplify-cfg`` removes it.
"""

from __future__ import annotations

import builtins
import math
import operator
import typing as t
import warnings

import attrs
import numpy as np

from gibbous.ir.core import Branch, Call, Constant, Function, guard_of
from gibbous.ir.printer import UnprintableError, format_constant
from gibbous.ir.purity import is_pure, is_pure_call
from gibbous.ir.types import Array, Const, Dict, List, Set, is_immutable_value, is_subtype
from gibbous.passes.manager import register_pass
from gibbous.passes.cfg_edit import jump_instead

# Limits in the spirit of CPython's AST optimiser (Python/ast_opt.c).
MAX_INT_BITS = 4096
MAX_LENGTH = 4096


@register_pass
@attrs.frozen
class ConstantFolding:
    name: t.ClassVar[str] = "fold"
    description: t.ClassVar[str] = (
        "evaluate pure calls on immutable constants; turn branches on constants into jumps"
    )

    def run(self, f: Function) -> bool:
        changed = _constants_known(f)
        # Folding one call can make the operands of another constant, possibly in a block
        # earlier in the list (a loop); sweep until a sweep folds nothing.
        while True:
            folded = False
            for call in list(f.calls()):
                folded |= _fold_call(call)
            for block in f.blocks:
                term = block.terminator
                if isinstance(term, Branch):
                    folded |= _fold_branch(term)
            if not folded:
                return changed
            changed = True


_NOT_FOLDED = object()


def _constants_known(f: Function) -> bool:
    """Uses of a value whose type is one constant (``const<numpy.add>``: a parameter of a
    function specialised on it, a result type inference computed) read that constant, so that
    calls of it are known calls and branches on it fold.  Numbers with a derivative (floats,
    complex numbers) are left: a tangent may flow through them."""
    changed = False
    values = [a for b in f.blocks for a in b.args] + [c.result for c in f.calls()]
    for v in values:
        ty = v.type
        if not isinstance(ty, Const) or not v.uses or not is_immutable_value(ty.value):
            continue
        if isinstance(ty.value, (float, complex, np.inexact)):
            continue
        try:
            constant = Constant(ty.value)
            format_constant(ty.value)
        except (UnprintableError, TypeError, ValueError):
            continue
        v.replace_all_uses_with(constant)
        changed = True
    return changed


def _fold_call(call: Call) -> bool:
    if not all(isinstance(v, Constant) for v in call.operands):
        return False
    if isinstance(call.type, (Array, List, Set, Dict)):
        return False  # the result cannot be immutable: do not even compute it
    if not is_pure_call(call):
        return False
    fn = t.cast(t.Callable[..., object], t.cast(Constant, call.callee).value)
    args = [t.cast(Constant, v).value for v in call.args]
    kwargs = {k: t.cast(Constant, v).value for k, v in call.kwargs.items()}
    if not all(map(is_immutable_value, [*args, *kwargs.values()])):
        return False
    if _too_costly(fn, args, kwargs):
        return False
    value = _evaluate(fn, args, kwargs)
    if value is _NOT_FOLDED or not _acceptable_result(value):
        return False
    constant = Constant(value)
    if not is_subtype(constant.type, call.type):
        return False  # the declared type disagrees with the value: leave it to the verifier
    guard = guard_of(call)
    call.result.replace_all_uses_with(constant)
    if guard is not None:  # it did not raise: the guard's normal side is the way on
        jump_instead(guard, guard.normal, guard.normal_args)
    call.erase()
    return True


def _evaluate(fn: t.Callable[..., object], args: list[object], kwargs: dict[str, object]) -> object:
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            return fn(*args, **kwargs)
    except Exception:
        return _NOT_FOLDED  # it raises at run time instead, where the program can see it


def _acceptable_result(value: object) -> bool:
    if not is_immutable_value(value) or _too_large(value):
        return False
    try:
        format_constant(value)
    except UnprintableError:
        return False
    return True


def _too_large(value: object) -> bool:
    if isinstance(value, int):
        return value.bit_length() > MAX_INT_BITS
    if isinstance(value, (str, bytes)):
        return len(value) > MAX_LENGTH
    if isinstance(value, (tuple, frozenset)):
        return len(value) > MAX_LENGTH or any(map(_too_large, value))
    return False


def _ints_in(values: t.Iterable[object]) -> t.Iterator[int]:
    for v in values:
        if isinstance(v, (int, np.integer)):
            yield int(v)
        elif isinstance(v, tuple):
            yield from _ints_in(v)


_NUMPY_MODULES = ("numpy", "numpy.linalg")


def _too_costly(fn: object, args: list[object], kwargs: dict[str, object]) -> bool:
    """Evaluating ``fn`` could take far longer or far more memory than compiling should.

    Not a proof, a guard against the obvious: huge powers, shifts and repetitions, iterating a
    huge range, and NumPy functions asked for huge arrays.
    """
    values = [*args, *kwargs.values()]
    if any(isinstance(v, range) and len(v) > MAX_LENGTH for v in values):
        return True
    ints = [v for v in values if isinstance(v, int)]
    if any(fn is p for p in (operator.pow, builtins.pow)) and len(values) == 2 == len(ints):
        base, exponent = ints
        return exponent > 0 and abs(base) > 1 and base.bit_length() * exponent > MAX_INT_BITS
    if fn is operator.lshift and len(ints) == 2:
        return ints[1] > MAX_INT_BITS
    if fn is operator.mul and len(values) == 2 and ints:
        sequences = [v for v in values if isinstance(v, (str, bytes, tuple))]
        return bool(sequences) and len(sequences[0]) * max(ints[0], 0) > MAX_LENGTH
    if any(fn is c for c in (math.factorial, math.comb, math.perm)):
        return any(abs(i) > MAX_INT_BITS for i in ints)
    if getattr(fn, "__module__", None) in _NUMPY_MODULES and not isinstance(fn, (np.ufunc, type)):
        # Shapes, lengths and counts are ints among the arguments; their product bounds the
        # size of what the call could build (np.ones((4096, 4096)), np.arange(10**9)).
        size = 1
        for i in _ints_in(values):
            size *= max(abs(i), 1)
            if size > MAX_LENGTH:
                return True
    return False


def _fold_branch(branch: Branch) -> bool:
    cond = branch.cond
    if not (isinstance(cond, Constant) and is_immutable_value(cond.value)):
        return False
    # bool() of the condition is what the branch computes; it must be pure to run it now.
    if not is_pure(operator.truth, [cond.type]):
        return False
    try:
        taken = bool(cond.value)
    except Exception:
        return False
    index = 0 if taken else 1
    jump_instead(branch, branch.successors[index], branch.args_for(index))
    return True


__all__ = ["ConstantFolding", "MAX_INT_BITS", "MAX_LENGTH"]
