"""The pass manager and the pass registry."""

from __future__ import annotations

import operator
import typing as t

import attrs
import pytest

from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Function, Jump
from gibbous.passes import (
    Pass,
    PassError,
    PassManager,
    get_pass,
    parse_pipeline,
    register_pass,
    registered_passes,
)
from gibbous.passes import manager
from gibbous.passes.manager import UnknownPassError

STANDARD = ("cse", "dce", "fold", "simplify-cfg")


def sample() -> Function:
    """x -> (x * 2.0) with a dead call, a constant to fold, and a block to merge."""
    f = Function("sample", [("x", T.FLOAT)])
    b = Builder(f)
    x = f.args[0]
    two = b.call(operator.add, 1.0, 1.0, type=T.FLOAT, name="two")
    b.call(operator.neg, x, type=T.FLOAT, name="dead")
    nxt = b.add_block("next", [("y", T.FLOAT)])
    b.jump(nxt, x)
    b.at_end(nxt)
    b.ret(b.call(operator.mul, nxt.args[0], two, type=T.FLOAT, name="r"))
    return f


@attrs.frozen
class Recorder:
    """A pass that changes nothing and notes that it ran (the name is an instance field)."""

    log: list[str]
    name: str = "recorder"

    def run(self, f: Function) -> bool:
        self.log.append(self.name)
        return False


@attrs.frozen
class BreakJumpArity:
    """A deliberately wrong pass: drops the arguments of every jump."""

    name: t.ClassVar[str] = "break-arity"
    description: t.ClassVar[str] = "drop jump arguments (broken on purpose)"

    def run(self, f: Function) -> bool:
        for block in f.blocks:
            term = block.terminator
            if isinstance(term, Jump) and term.args:
                term.erase()
                block.append(Jump(term.target, []))
        return True


@pytest.fixture
def scratch_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test vanish after it."""
    monkeypatch.setattr(manager, "_REGISTRY", dict(manager._REGISTRY))


# --------------------------------------------------------------------------------------------
# Registry


def test_standard_passes_are_registered_with_one_line_descriptions() -> None:
    passes = registered_passes()
    assert set(STANDARD) <= set(passes)
    for name in STANDARD:
        cls = passes[name]
        assert cls.name == name  # type: ignore[attr-defined]
        description = cls.description  # type: ignore[attr-defined]
        assert isinstance(description, str) and description and "\n" not in description
        assert attrs.has(cls)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(cls(), "name", "other")


def test_registered_passes_is_sorted_and_a_copy() -> None:
    passes = registered_passes()
    assert list(passes) == sorted(passes)
    passes.clear()
    assert registered_passes()


def test_get_pass_makes_an_instance() -> None:
    p = get_pass("dce")
    assert p.name == "dce"
    assert isinstance(p, registered_passes()["dce"])
    assert get_pass(" fold ").name == "fold"


def test_unknown_pass_name_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownPassError) as info:
        get_pass("dead-code")
    message = str(info.value)
    assert "'dead-code'" in message
    for name in STANDARD:
        assert name in message
    assert not message.startswith('"')  # not KeyError's quoted repr


def test_unknown_pass_error_is_both_key_and_value_error() -> None:
    with pytest.raises(KeyError):
        PassManager(["dce", "nope"])
    with pytest.raises(ValueError, match="no pass named 'nope'"):
        PassManager("dce, nope")


@pytest.mark.usefixtures("scratch_registry")
def test_register_pass_by_name() -> None:
    assert register_pass(BreakJumpArity) is BreakJumpArity
    assert registered_passes()["break-arity"] is BreakJumpArity
    assert register_pass(BreakJumpArity) is BreakJumpArity  # again: the same class is fine
    assert isinstance(get_pass("break-arity"), BreakJumpArity)


@pytest.mark.usefixtures("scratch_registry")
def test_register_pass_refuses_a_taken_name() -> None:
    @attrs.frozen
    class OtherDce:
        name: t.ClassVar[str] = "dce"
        description: t.ClassVar[str] = "an impostor"

        def run(self, f: Function) -> bool:
            return False

    with pytest.raises(ValueError, match="'dce' is taken"):
        register_pass(OtherDce)
    assert registered_passes()["dce"] is not OtherDce


@pytest.mark.usefixtures("scratch_registry")
def test_register_pass_needs_a_name_and_a_one_line_description() -> None:
    class Nameless:
        description = "x"

    class Undescribed:
        name = "undescribed"

    class Wordy:
        name = "wordy"
        description = "two\nlines"

    for cls in (Nameless, Undescribed, Wordy):
        with pytest.raises(TypeError):
            register_pass(cls)


def test_parse_pipeline() -> None:
    assert parse_pipeline("fold, dce ,cse") == ["fold", "dce", "cse"]
    assert parse_pipeline(" ") == []
    assert parse_pipeline("dce,,") == ["dce"]


# --------------------------------------------------------------------------------------------
# Running


def test_pipeline_of_names_runs_in_order_and_reports_change() -> None:
    f = sample()
    assert PassManager(["fold", "dce", "simplify-cfg"], verify=True).run(f)
    assert str(f) == (
        "func @sample(%x: f64) {\n"
        "^entry:\n"
        "  %r = call operator.mul(%x, 2.0) : f64\n"
        "  return %r\n"
        "}\n"
    )
    assert not PassManager(["fold", "dce", "simplify-cfg"], verify=True).run(f)


def test_pipeline_mixes_pass_objects_and_names() -> None:
    log: list[str] = []
    pm = PassManager([Recorder(log, "first"), "dce", Recorder(log, "second")])
    assert [p.name for p in pm.passes] == ["first", "dce", "second"]
    f = sample()
    assert pm.run(f)  # dce removed %dead
    assert log == ["first", "second"]
    assert "dead" not in str(f)


def test_a_single_string_is_a_comma_separated_pipeline() -> None:
    pm = PassManager("fold, dce")
    assert [p.name for p in pm.passes] == ["fold", "dce"]


def test_pass_instances_satisfy_the_protocol() -> None:
    passes: list[Pass] = [get_pass(name) for name in STANDARD]
    passes.append(Recorder([]))
    assert all(isinstance(p.name, str) and callable(p.run) for p in passes)


def test_verify_after_each_pass_names_the_pass_that_broke_the_ir() -> None:
    log: list[str] = []
    pm = PassManager(["dce", BreakJumpArity(), Recorder(log)], verify=True)
    with pytest.raises(PassError) as info:
        pm.run(sample())
    err = info.value
    assert err.pass_name == "break-arity"
    assert err.problems and any("passes 0 values" in p for p in err.problems)
    assert "pass 'break-arity' left the IR invalid" in str(err)
    assert "jump ^next\n" in err.ir_text  # the broken IR, printed
    assert err.ir_text.strip() in str(err)
    assert log == []  # nothing ran after the broken pass


def test_without_verify_a_broken_pass_goes_unnoticed() -> None:
    f = sample()
    PassManager([BreakJumpArity()]).run(f)
    assert "jump ^next\n" in str(f)


def test_verify_checks_the_input_first() -> None:
    f = sample()
    BreakJumpArity().run(f)
    with pytest.raises(PassError) as info:
        PassManager(["dce"], verify=True).run(f)
    assert info.value.pass_name is None
    assert "the input IR is invalid" in str(info.value)


def test_dump_is_called_after_each_pass_with_its_name() -> None:
    dumps: list[tuple[str, str]] = []
    pm = PassManager(["fold", "dce"], dump=lambda name, f: dumps.append((name, str(f))))
    pm.run(sample())
    assert [name for name, _ in dumps] == ["fold", "dce"]
    after_fold, after_dce = (text for _, text in dumps)
    assert "%two" not in after_fold and "%dead" in after_fold
    assert "%dead" not in after_dce


def test_dump_sees_the_broken_ir_before_the_error() -> None:
    dumped: list[str] = []
    pm = PassManager([BreakJumpArity()], verify=True, dump=lambda name, f: dumped.append(name))
    with pytest.raises(PassError):
        pm.run(sample())
    assert dumped == ["break-arity"]


def test_timing_records_every_pass_run() -> None:
    pm = PassManager(["fold", "dce", "cse"], timing=True)
    pm.run(sample())
    assert [name for name, _ in pm.timings] == ["fold", "dce", "cse"]
    assert all(isinstance(s, float) and s >= 0 for _, s in pm.timings)
    pm.run(sample())  # records accumulate over runs
    assert [name for name, _ in pm.timings] == ["fold", "dce", "cse"] * 2


def test_no_timing_records_unless_asked() -> None:
    pm = PassManager(["fold"])
    pm.run(sample())
    assert pm.timings == []


def test_an_exception_in_a_pass_is_annotated_with_its_name() -> None:
    @attrs.frozen
    class Crash:
        name: t.ClassVar[str] = "crash"

        def run(self, f: Function) -> bool:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom") as info:
        PassManager([Crash()]).run(sample())
    assert any("pass 'crash'" in note and "@sample" in note for note in info.value.__notes__)
