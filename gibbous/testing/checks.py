"""The checks of ``test_rule``, run by a ``Tester`` on one rule: (b) interface, (d) mutation
and (a) correctness on every call it makes, then (c) reuse, (e) state and (f) allocations.
docs/testing.md explains each check and shows its failures."""

from __future__ import annotations

import traceback
import typing as t

import attrs
import numpy as np

from gibbous.rules.stateful import StatefulRRule
from gibbous.tangents.kinds import fdata_problem, rdata_problem
from gibbous.tangents.model import NO_TANGENT, TangentMemo, randn_tangent, zero_rdata
from gibbous.testing.allocations import CALLS, Allocations, measure
from gibbous.testing.errors import Check, RuleTestError, short_path
from gibbous.testing.memory import Copier, Pairing, copy_values, inner
from gibbous.testing.rounds import Call, Point, Round, Roots
from gibbous.testing.structure import difference, layout, leaves
from gibbous.testing.verify import alias_groups, format_relation, nodes, sharing

Perf = t.Literal["none", "allocs"]


@attrs.frozen
class RuleTestReport:
    """What ``test_rule`` checked: check name -> what it found (or why it was skipped)."""

    subject: str
    results: dict[str, str]
    allocations: dict[str, Allocations] = attrs.field(factory=dict)

    def __str__(self) -> str:
        lines = [f"test_rule({self.subject}):"]
        lines += [f"  {check}: {result}" for check, result in self.results.items()]
        return "\n".join(lines)


@attrs.frozen
class Options:
    perf: Perf
    rtol: float
    atol: float
    steps: tuple[float, ...]
    same: float
    directions: int
    output_tangent: t.Any


class Tester:
    """Runs the checks on one rule (one call site) in order: interface, mutation and
    correctness on a first call, then reuse, state and allocations."""

    def __init__(
        self,
        call: Call,
        make_rule: t.Callable[[], t.Callable[..., t.Any]],
        point: Point,
        options: Options,
        rng: np.random.Generator,
    ) -> None:
        self.call = call
        self.make_rule = make_rule
        self.point = point
        self.options = options
        self.rng = rng
        self.subject = call.describe(point.operands)
        self.results: dict[str, str] = {}
        self.allocations: dict[str, Allocations] = {}

    def error(self, check: Check, *lines: str) -> RuleTestError:
        return RuleTestError(check, self.subject, lines)

    def seed(self) -> int:
        return int(self.rng.integers(2**32))

    def new_round(self, rule: t.Callable[..., t.Any], point: Point, seed: int) -> Round:
        return Round(self.call, rule, point, np.random.default_rng(seed))

    # ----------------------------------------------------------------------------------------

    def run(self, other: Point | str) -> RuleTestReport:
        try:
            rule = self.make_rule()
        except LookupError as e:
            raise self.error("interface", "no rule for this call:", *str(e).splitlines()) from e
        directions = self.options.directions
        found = self.check_round(rule, self.point, directions, self.seed())
        self.results["interface"] = "passed"
        self.results["mutation"] = "passed"
        self.results["correctness"] = found
        self.check_reuse(rule)
        self.check_state(rule, other)
        if self.options.perf == "allocs":
            self.check_allocations(rule)
        return RuleTestReport(self.subject, self.results, self.allocations)

    def check_round(
        self, rule: t.Callable[..., t.Any], point: Point, directions: int, seed: int
    ) -> str:
        """Checks (b), (d) and (a) on one call of the rule; returns a summary."""
        r = self.new_round(rule, point, seed)
        before = layout(r.roots), layout(self.call.roots(r.fdata))
        self.forward(r)
        self.check_outputs(r)
        r.seed(self.options.output_tangent)
        self.reverse(r)
        self.check_restored(r, before)
        return self.check_gradients(r, directions)

    def forward(self, r: Round) -> None:
        try:
            result = r.forward()
        except Exception as e:
            raise self.error("interface", f"the forward call raised {exception_text(e)}") from e
        if r.y is None or not callable(r.pullback):
            raise self.error(
                "interface",
                f"the rule returned {_short(result)}",
                "a rule returns (CoDual(y, y_fdata), pullback)",
            )

    def reverse(self, r: Round) -> None:
        try:
            rdata = r.reverse()
        except Exception as e:
            raise self.error("interface", f"the pullback raised {exception_text(e)}") from e
        names = self.call.names
        if not isinstance(rdata, tuple) or len(rdata) != len(names):
            raise self.error(
                "interface",
                f"the pullback returned {_short(rdata)}",
                f"a pullback returns a tuple of {len(names)} rdata, one per operand: "
                + ", ".join(names),
            )
        for x, rd, name in zip(r.point.operands, rdata, names):
            problem = rdata_problem(x, rd, f"the rdata returned for {name}")
            if problem is not None:
                raise self.error("interface", problem)

    def check_outputs(self, r: Round) -> None:
        """After the forward call: the tangent model's kinds, f's values, f's sharing."""
        assert r.y is not None
        problem = fdata_problem(r.y.primal, r.y.fdata, "the fdata of the result")
        for name, x, fd in zip(self.call.names, r.work, r.fdata):
            problem = problem or fdata_problem(x, fd, f"the fdata of {name} after the call")
        if problem is not None:
            raise self.error("interface", problem)
        rtol, atol = self.options.rtol, self.options.atol
        names = ["result", *self.call.names]
        for name, got, want in zip(names, [r.y.primal, *r.work], r.point.after):
            found = difference(got, want, name, rtol=rtol, atol=atol)
            if found is not None:
                raise self.error(
                    "correctness",
                    "the rule computes another primal than f (rule vs f):",
                    f"  {found}",
                )
        self.check_sharing(r)

    def check_sharing(self, r: Round) -> None:
        """After the forward call, parts of the result and the arguments share memory exactly
        as after ``f``, and their fdata share memory exactly as they do."""
        assert r.y is not None
        found = nodes(r.output_roots, [r.y.fdata, *r.fdata])
        primal = sharing(found)
        fdata = sharing(found, of_trees=True)
        for p, q in sorted(primal.keys() | fdata.keys()):
            if primal.get((p, q)) != fdata.get((p, q)):
                raise self.error(
                    "mutation",
                    f"after the forward call, {p} {format_relation(primal.get((p, q)))} {q},",
                    f"but its fdata {format_relation(fdata.get((p, q)))} the fdata of {q}",
                    "values that share memory have fdata that share it the same way: a result",
                    "that is (a view of) an argument gets the argument's own fdata (or the same",
                    "view of it), and an object stored in a container brings its own fdata along",
                )
        after = r.point.after
        reference = sharing(nodes([("result", after[0]), *self.call.roots(after[1:])]))
        for p, q in sorted(primal.keys() | reference.keys()):
            if primal.get((p, q)) != reference.get((p, q)):
                raise self.error(
                    "mutation",
                    f"after f, {p} {format_relation(reference.get((p, q)))} {q};",
                    f"after the rule's forward call, it {format_relation(primal.get((p, q)))} it",
                )

    def check_restored(self, r: Round, before: tuple[dict[str, t.Any], dict[str, t.Any]]) -> None:
        for name, now, then in zip(self.call.names, r.work, r.point.operands):
            found = difference(now, then, name)
            if found is not None:
                raise self.error(
                    "mutation",
                    "after the pullback an argument does not hold its value from before the "
                    "call (after vs before):",
                    f"  {found}",
                    "a rule that overwrites an argument saves it and restores it in its pullback",
                )
        for what, old, new in (
            ("", before[0], layout(r.roots)),
            ("the fdata of ", before[1], layout(self.call.roots(r.fdata))),
        ):
            for path, record in old.items():
                if new.get(path) == record:
                    continue
                change = (
                    "is another object than before the call"
                    if new.get(path, (None,))[0] != record[0]
                    else f"moved: {_layout(record)} before the call, {_layout(new[path])} after"
                )
                raise self.error(
                    "mutation",
                    f"after the pullback {what}{path} {change}",
                    "a pullback restores what it overwrote in place, into the same objects",
                )

    # ----------------------------------------------------------------------------------------
    # (a) correctness

    def check_gradients(self, r: Round, directions: int) -> str:
        point, names = r.point, self.call.names
        gradients = r.gradients()
        worst = 0.0
        checked = 0
        for group in alias_groups(point.operands):
            roots = [(names[i], point.operands[i]) for i in group]
            for k in range(directions):
                memo = TangentMemo()
                d = [randn_tangent(x, self.rng, memo=memo) for _, x in roots]
                norm = inner(roots, d, d) ** 0.5
                if norm == 0:
                    break
                claimed = inner(roots, [gradients[i] for i in group], d) / norm
                error, estimates = self.finite_differences(r, group, d, norm, claimed)
                if error is None:
                    raise self.error(
                        "correctness", *self.gradient_message(r, group, k, claimed, estimates)
                    )
                worst = max(worst, error)
                checked += 1
        return f"passed ({checked} direction(s); largest relative error {worst:.1e})"

    def finite_differences(
        self, r: Round, group: list[int], d: list[t.Any], norm: float, claimed: float
    ) -> tuple[float | None, list[tuple[float, float]]]:
        """Central differences of <cotangents, outputs> along d / |d| at each step until one
        agrees with ``claimed``: (its relative error or None, [(step, estimate)])."""
        rtol, atol = self.options.rtol, self.options.atol
        direction: list[t.Any] = [NO_TANGENT] * len(r.work)
        for i, di in zip(group, d):
            direction[i] = di
        estimates = []
        for step in self.options.steps:
            h = step / norm
            try:
                plus, minus = (self.outputs(r.point, direction, s * h) for s in (1, -1))
            except Exception as e:
                raise self.error(
                    "correctness", f"f raised {exception_text(e)} at a point {step:g} away"
                ) from e
            pairing = Pairing()
            for leaf in leaves(plus, r.cotangents, [v for _, v in plus], [v for _, v in minus]):
                c, p, m = leaf.values
                pairing.add(leaf.primal, c, (p - m) / (2 * h))
            estimate = pairing.total() / norm
            estimates.append((step, estimate))
            gap = abs(estimate - claimed)
            if gap <= atol + rtol * max(abs(estimate), abs(claimed)):
                return gap / max(abs(estimate), abs(claimed), atol), estimates
        return None, estimates

    def outputs(self, point: Point, direction: list[t.Any], h: float) -> Roots:
        copier = Copier(h)
        operands = [copier.copy(x, d) for x, d in zip(point.operands, direction)]
        y = self.call.run(operands)
        return [("result", y), *self.call.roots(operands)]

    def gradient_message(
        self,
        r: Round,
        group: list[int],
        k: int,
        claimed: float,
        estimates: list[tuple[float, float]],
    ) -> list[str]:
        names = ", ".join(self.call.names[i] for i in group)
        o = self.options
        lines = [
            f"the gradient with respect to {names} disagrees with central finite differences",
            f"along a random unit direction dx (the {_ordinal(k)}), with random cotangents dy_bar",
            "of the outputs (the result, and each argument after the call):",
            f"  rule                 <dx, J^T dy_bar> = {claimed:.10g}",
            *(
                f"  {'finite differences   <dy_bar, J dx>   =' if i == 0 else '':39} "
                f"{e:.10g} (step {s:g})"
                for i, (s, e) in enumerate(estimates)
            ),
            f"  tolerance: atol + rtol * max(|a|, |b|) with rtol={o.rtol:g}, atol={o.atol:g}",
        ]
        return lines + self.zero_cotangent_hint(r.rule, r.point)

    def zero_cotangent_hint(self, rule: t.Callable[..., t.Any], point: Point) -> list[str]:
        """With zero cotangents a pullback must leave every fdata as it found it: if it does
        not, say where, since that is the usual cause."""
        try:
            r = self.new_round(rule, point, self.seed())
            r.forward()
            r.seed(zero=True)
            r.reverse()
        except Exception:
            return []
        for name, now, then in zip(self.call.names, r.fdata, r.start):
            found = difference(now, then, f"the fdata of {name}")
            if found is not None:
                return [
                    "with all cotangents zero the pullback still changed some fdata (after vs "
                    "before the call):",
                    f"  {found}",
                    "a pullback adds into fdata (never overwrites it), and gives back the fdata",
                    "of what its forward call overwrote",
                ]
        return []

    # ----------------------------------------------------------------------------------------
    # (c) reuse

    def check_reuse(self, rule: t.Callable[..., t.Any]) -> None:
        other = self.jittered()
        seed_a, seed_b = self.seed(), self.seed()
        tangent = self.options.output_tangent
        try:
            first = self.results_of(rule, self.point, seed_a)
            again = self.results_of(rule, self.point, seed_a)
            alone = self.results_of(rule, other, seed_b)
        except Exception as e:
            raise self.error("reuse", f"a second call raised {exception_text(e)}") from e
        second = "a second call gives other results than the first (second vs first):"
        self.compare([second], again, first)
        a, b = self.new_round(rule, self.point, seed_a), self.new_round(rule, other, seed_b)
        nested = "two calls pending at once (fwd A, fwd B, pb B, pb A)"
        try:
            a.forward()
            b.forward()
            b.seed(tangent)
            b.reverse()
            a.seed(tangent)
            a.reverse()
        except Exception as e:
            raise self.error("reuse", f"{nested}, the rule raised {exception_text(e)}") from e
        for name, got, want in (("A", a, first), ("B", b, alone)):
            head = f"{nested} give call {name}"
            legend = "other results than the same call made alone (nested vs alone):"
            self.compare([head, legend], got.results(), want)
        if isinstance(rule, StatefulRRule) and rule.depth != 0:
            raise self.error("reuse", f"after all pullbacks ran, {rule!r} has calls pending")
        self.results["reuse"] = "passed"

    def results_of(self, rule: t.Callable[..., t.Any], point: Point, seed: int) -> dict[str, t.Any]:
        r = self.new_round(rule, point, seed)
        r.forward()
        r.seed(self.options.output_tangent)
        r.reverse()
        return r.results()

    def compare(self, head: list[str], got: dict[str, t.Any], want: dict[str, t.Any]) -> None:
        same = self.options.same
        for what, value in got.items():
            found = difference(value, want[what], what, rtol=same, atol=same)
            if found is not None:
                raise self.error(
                    "reuse",
                    *head,
                    f"  {found}",
                    "a rule keeps what a pending call needs in the state it is handed for that",
                    "call (or in its pullback), never in the rule itself or in a global",
                )

    def jittered(self) -> Point:
        """The point with every float moved by a few percent: calls whose saved data would be
        mixed up then give different numbers."""
        memo = TangentMemo()
        d = [randn_tangent(x, self.rng, memo=memo) for x in self.point.operands]
        copier = Copier(0.05, relative=True)
        try:
            operands = [copier.copy(x, di) for x, di in zip(self.point.operands, d)]
            return Point.make(self.call, operands)
        except Exception:  # outside f's domain: the same values still check the bookkeeping
            return self.point

    # ----------------------------------------------------------------------------------------
    # (e) state

    def check_state(self, rule: t.Callable[..., t.Any], other: Point | str) -> None:
        calls = [("a second call (the state of the first reused)", self.point)]
        if isinstance(other, Point):
            shapes = self.call.describe(other.operands)
            calls += [(f"a call with other shapes, {shapes}", other)]
            calls += [("a call with the first shapes again", self.point)]
        for label, point in calls:
            try:
                self.check_round(rule, point, 1, self.seed())
            except RuleTestError as e:
                raise self.error(
                    "state",
                    f"on {label},",
                    f"after calls at other arguments, the {e.check} check failed:",
                    *(f"  {line}" for line in e.lines),
                ) from e
        skipped = "" if isinstance(other, Point) else f"; other shapes skipped: {other}"
        self.results["state"] = f"passed ({len(calls)} more call(s){skipped})"

    # ----------------------------------------------------------------------------------------
    # (f) allocations

    def check_allocations(self, rule: t.Callable[..., t.Any]) -> None:
        # A fresh copy for every run: the primal may consume its arguments (``list.pop``).
        # (The rule's calls need none: their pullbacks restore the arguments.)
        copies = [copy_values(self.point.operands) for _ in range(CALLS)]
        primal = measure(lambda mark: self.call.run(copies.pop()))
        r = self.new_round(rule, self.point, self.seed())
        coduals = r.coduals

        def round_trip(mark: t.Callable[[str], None]) -> None:
            y, pullback = self.call.run_rule(rule, coduals)
            mark("from the forward call to the pullback")
            pullback(zero_rdata(y.primal))

        measured = measure(round_trip)
        self.allocations.update(primal=primal, rule=measured)
        if primal.allocated:
            self.results["allocations"] = (
                f"skipped: the primal allocates NumPy memory ({primal.describe()})"
            )
            return
        if measured.allocated:
            raise self.error(
                "allocations",
                "the warm primal allocates no NumPy memory, but a warm forward + reverse does:",
                f"  allocated: {measured.allocated} bytes of NumPy memory",
                f"  in use at once at most: {measured.peak} bytes",
                *(f"  in use {what}: {n} bytes" for what, n in measured.held.items()),
                f"  still in use after the pullback: {measured.held_at_end} bytes",
                "  allocated at:",
                *(f"    {site}" for site in measured.sites),
                "keep buffers in the state of a stateful rule (gibbous.stateful_primitive) and",
                "write into them with out=",
            )
        self.results["allocations"] = f"passed ({measured.describe()})"


def _ordinal(k: int) -> str:
    return ["first", "second", "third"][k] if k < 3 else f"{k + 1}th"


def exception_text(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {short_path(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}: {e}{where}"


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def _layout(record: tuple[t.Any, ...]) -> str:
    if len(record) == 1:
        return f"object {record[0]:#x}"
    return f"data at {record[1]:#x}, shape {record[2]}, strides {record[3]}"
