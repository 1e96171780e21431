"""Stateful rules: primitives that keep buffers between calls (the seed's proposal).

A rule that overwrites memory must save what it overwrites; a plain rule allocates the copies
on every call.  A stateful rule is written as

    stateful_rrule(state, f, *args, **kwargs) -> (y, pullback, new_state)

It receives the state it returned the last time it ran at this call depth (``None`` the first
time), allocates or resizes as needed, and returns the state to keep: usually the very object
it received, a new one when shapes or dtypes changed.

``StatefulRRule`` turns it into an ordinary rule and owns one state per *call depth*: a call
site may run several times before any of its pullbacks (a loop, recursion), and each pending
call needs its own saved data.  Rule writers never see the depth.

* A forward call takes the state stored at the current depth, reserves the depth (so a call
  nested inside the rule, e.g. through a higher-order function, gets the next one), runs the
  rule, stores ``new_state`` at the depth and returns.  If the rule raises, the depth is given
  back: the rule stays usable and right, and the state stored there is the previous one.
* The pullback of the call at depth ``d`` runs the rule's pullback, then gives depth ``d`` back.

The contract: pullbacks run in reverse order of the forward calls (last in, first out), each at
most once.  That is what a reverse pass does; ``PullbackOrderError`` reports a violation (one
integer comparison per pullback, always on), because a state handed to a new call while an
older pullback still needs it would give wrong numbers, silently.  Popping moves the depth,
and the next forward call at that depth reuses the state.  A driver that abandons a reverse
pass half-way (an exception) calls ``reset()`` before the next forward pass, which frees the
states.  A pullback dropped unrun while an earlier call is pending (a caller that drops
pullbacks in a loop) makes the next forward call that would need a new state start again at
depth 0 instead, reusing the states it has: the abandoned calls' states are dead.
"""

from __future__ import annotations

import typing as t

import attrs

from gibbous.ir.exceptions import GibbousError
from gibbous.tangents.model import NO_TANGENT, CoDual

if t.TYPE_CHECKING:
    from gibbous.rules.registry import Pullback, RRule

S = t.TypeVar("S")


class StatefulRRuleFunction(t.Protocol[S]):
    """``stateful_rrule(state, f, *args, **kwargs) -> (y, pullback, new_state)``."""

    def __call__(
        self, state: S | None, f: CoDual[t.Any, t.Any], /, *args: t.Any, **kwargs: t.Any
    ) -> tuple[CoDual[t.Any, t.Any], Pullback, S]: ...


class PullbackOrderError(GibbousError, RuntimeError):
    """A pullback of a stateful rule ran out of order, twice, or after ``reset()``."""


@attrs.define(eq=False, repr=False)
class StatefulRRule(t.Generic[S]):
    """A stateful rule as a plain rule: one instance per call site, with a stack of states.

    With ``debug`` it also checks that the rule returns a ``CoDual`` and a state of
    ``state_type``.
    """

    rule: StatefulRRuleFunction[S]
    state_type: type[S]
    debug: bool = False
    _states: list[S | None] = attrs.field(factory=list, init=False)
    _depth: int = attrs.field(default=0, init=False)
    # The serial number of the call pending at each depth: a pullback of a call superseded at
    # its depth (forward, pullback, forward, the first pullback again) is refused.
    _serials: list[int] = attrs.field(factory=list, init=False)
    _serial: int = attrs.field(default=0, init=False)
    # A pending call's pullback was dropped unrun (see _WatchedPullback).
    _abandoned: bool = attrs.field(default=False, init=False)

    @property
    def depth(self) -> int:
        """How many forward calls have no pullback run yet."""
        return self._depth

    @property
    def states(self) -> tuple[S | None, ...]:
        """The states kept, one per depth reached so far (``None``: no call finished there)."""
        return tuple(self._states)

    def __repr__(self) -> str:
        name = getattr(self.rule, "__qualname__", repr(self.rule))
        return f"<StatefulRRule {name}: depth {self._depth}, {len(self._states)} state(s)>"

    def reset(self) -> None:
        """Forget pending calls (after an abandoned reverse pass) and free the states."""
        self._depth = 0
        self._states.clear()
        self._serials.clear()
        self._abandoned = False

    def __call__(
        self, f: CoDual[t.Any, t.Any], *args: t.Any, **kwargs: t.Any
    ) -> tuple[CoDual[t.Any, t.Any], Pullback]:
        depth = self._depth
        states = self._states
        if depth == len(states):
            if self._abandoned:  # no pending call can ever be pulled back: start again
                self._abandoned = False
                depth = 0
            else:
                states.append(None)
                self._serials.append(0)
        self._serial = serial = self._serial + 1
        self._serials[depth] = serial
        self._depth = depth + 1
        try:
            y, pullback, new_state = self.rule(states[depth], f, *args, **kwargs)
        except BaseException:
            self._depth = depth
            raise
        if self.debug:
            self._check(y, new_state)
        states[depth] = new_state
        if depth == 0:
            return y, StatefulPullback(self, pullback, depth, serial)
        return y, _WatchedPullback(self, pullback, depth, serial)

    def _check(self, y: object, new_state: object) -> None:
        name = getattr(self.rule, "__qualname__", repr(self.rule))
        if not isinstance(y, CoDual):
            raise TypeError(f"stateful rule {name} returned {y!r} as its result, not a CoDual")
        if not isinstance(new_state, self.state_type):
            raise TypeError(
                f"stateful rule {name} returned a state of type {type(new_state).__name__}, "
                f"not {self.state_type.__name__}"
            )


class StatefulPullback:
    """The pullback of one forward call of a ``StatefulRRule``: gives its depth back.  (A
    plain class: one is made per forward call, and attrs' frozen ``__init__`` costs more.)"""

    __slots__ = ("owner", "pullback", "depth", "serial")

    def __init__(
        self, owner: StatefulRRule[t.Any], pullback: Pullback, depth: int, serial: int
    ) -> None:
        self.owner, self.pullback, self.depth, self.serial = owner, pullback, depth, serial

    def abandon(self) -> None:
        """Run the rule's pullback for what it restores, ignoring errors (``unwind``)."""
        try:
            self.pullback(NO_TANGENT)
        except Exception:
            pass
        self.owner._depth = min(self.owner._depth, self.depth)

    def __call__(self, dy: t.Any) -> tuple[t.Any, ...]:
        owner = self.owner
        if owner._depth <= self.depth or owner._serials[self.depth] != self.serial:
            raise PullbackOrderError(
                f"pullback of call {self.depth} of {owner!r} ran twice, after reset(), or "
                "after a later forward call took its place; it touched nothing"
            )
        try:
            result = self.pullback(dy)
        except BaseException:
            owner._depth = self.depth  # the reverse pass is abandoned: so is this call
            raise
        # Calls made after this one (nested in it included) have given their depths back.
        if owner._depth != self.depth + 1:
            raise PullbackOrderError(
                f"pullback of call {self.depth} of {owner!r} ran while "
                f"{owner._depth - self.depth - 1} later call(s) had not run theirs: pullbacks "
                "must run in reverse order of the forward calls"
            )
        owner._depth = self.depth
        return result


class _WatchedPullback(StatefulPullback):
    """The pullback of a call made while another was pending: dropped unrun, it leaves the
    calls up to its own pending for good, which the owner's next new depth notices.  (The first
    depth is not watched: a call without nesting pays nothing.)"""

    __slots__ = ()

    def __del__(self) -> None:
        owner, depth = self.owner, self.depth
        if owner._depth > depth and owner._serials[depth] == self.serial:
            owner._abandoned = True


def plain_rrule(rule: StatefulRRuleFunction[S]) -> RRule:
    """The rule as a plain (stateless) rule: every call starts from ``None`` and allocates."""

    def rrule(
        f: CoDual[t.Any, t.Any], *args: t.Any, **kwargs: t.Any
    ) -> tuple[CoDual[t.Any, t.Any], Pullback]:
        y, pullback, _ = rule(None, f, *args, **kwargs)
        return y, pullback

    rrule.__qualname__ = f"plain_rrule({getattr(rule, '__qualname__', repr(rule))})"
    return rrule
