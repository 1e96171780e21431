"""``np.fft``: every transform in reverse mode, forward mode and Hessian-vector products
against central differences (every norm, ``n`` / ``s`` cropping and padding, axes, real and
complex inputs); the stages' adjoints by the dot-product test; dtypes, refusals."""

from __future__ import annotations

import typing as t

import numpy as np
import pytest

import gibbous
from gibbous.library.transforms.fft import Stage, stages_of
from gibbous.rules.emit import ForwardModeError
from tests.library.programs import check_program
from tests.library.transforms.typed import operand, program

# (the call, of ``z``; z's shape; whether z is complex)
CASES: list[tuple[str, tuple[int, ...], bool]] = [
    ("fft(z)", (6,), False),
    ("fft(z, norm='ortho')", (6,), True),
    ("fft(z, 4, norm='forward')", (7,), True),  # cropped
    ("fft(z, n=9, axis=0)", (3, 2), False),  # padded, along the first axis
    ("ifft(z)", (5,), True),
    ("ifft(z, n=7, axis=0, norm='forward')", (3, 5), True),
    ("ifft(z, 3, -1, 'ortho')", (2, 5), False),
    ("rfft(z)", (7,), False),
    ("rfft(z)", (8,), False),  # with a Nyquist bin
    ("rfft(z, 4, norm='ortho')", (6,), False),
    ("rfft(z, n=9, axis=0, norm='forward')", (3, 6), False),
    ("irfft(z)", (5,), True),
    ("irfft(z, 9, norm='forward')", (5,), True),  # odd: no Nyquist bin; padded
    ("irfft(z, n=6)", (5,), False),  # a real spectrum
    ("irfft(z, n=3, axis=0, norm='ortho')", (6, 4), True),  # cropped
    ("hfft(z)", (5,), True),
    ("hfft(z, 7, norm='ortho')", (4,), True),
    ("hfft(z, n=4, norm='forward')", (6,), True),
    ("ihfft(z)", (6,), False),
    ("ihfft(z, 8, -1, 'forward')", (5,), False),
    ("ihfft(z, n=3, axis=0, norm='ortho')", (5, 2), False),
    ("fftn(z)", (3, 4), True),
    ("fftn(z, norm='ortho')", (2, 3, 2), False),
    ("fft2(z, s=(5, 2))", (2, 3, 4), True),
    ("ifftn(z, axes=(0, 2), s=(2, 3), norm='ortho')", (3, 4, 2), True),
    ("ifft2(z, norm='forward')", (3, 4), True),
    ("fftn(z, s=(-1, 3), axes=(1, 0))", (3, 4), True),  # -1: the axis's own length
    ("fftn(z, axes=(0, 0))", (3, 2), True),  # an axis twice
    ("rfftn(z)", (4, 5), False),
    ("rfftn(z, s=(3, 4), axes=(0, 1), norm='ortho')", (4, 5), False),
    ("rfft2(z, s=(2, 6), norm='forward')", (3, 4, 5), False),
    ("irfftn(z)", (4, 3), True),
    ("irfft2(z, s=(5, 7), norm='ortho')", (3, 4, 5), True),
    ("irfftn(z, axes=(2, 0), s=(3, 5))", (4, 3, 3), True),
    ("irfft2(z, norm='forward')", (3, 4), False),
    ("fftshift(z)", (4, 5), False),
    ("fftshift(z, axes=(1,))", (5, 3), True),
    ("ifftshift(z, axes=0)", (5, 3), False),
    ("ifftshift(z)", (5,), True),
]


@pytest.mark.parametrize("call, shape, complex_", CASES, ids=[c[0] for c in CASES])
def test_transform_in_every_mode(
    call: str, shape: tuple[int, ...], complex_: bool, rng: np.random.Generator
) -> None:
    source, size = operand("z", 0, shape, complex_)
    f = program(f"{source}\nreturn loss(np.fft.{call})")
    check_program(f, rng.standard_normal(size))


def test_transform_between_other_steps(rng: np.random.Generator) -> None:
    """A spectral filter: rfft, a weight per bin, irfft back, a nonlinear loss."""
    h = rng.standard_normal(9) + 1j * rng.standard_normal(9)
    f = program("return np.sum(np.tanh(np.fft.irfft(np.fft.rfft(x) * h, n=16)) ** 2)", h=h)
    check_program(f, rng.standard_normal(16))


@pytest.mark.parametrize("name", ["fft", "rfft", "ifftn", "ihfft", "rfft2"])
def test_transform_called_through_a_value(name: str, rng: np.random.Generator) -> None:
    """A transform the build cannot tell (``fn(x)``, ``fn`` a value), so a complex result of
    unknown type: the linear and bilinear steps after it (``np.conj``, ``*``, ``np.real``)
    take complex values in a Hessian-vector product's written tangents."""
    fn = getattr(np.fft, name)
    shape = (3, 4) if name == "rfft2" else (6,)
    w = np.cos(np.arange(np.prod(shape)).reshape(shape))

    def f(x: np.ndarray) -> t.Any:
        y = fn(x * w)
        return np.sum((np.real(y) ** 2 + np.imag(y) ** 2) * np.real(y * y))

    check_program(f, rng.standard_normal(shape))


def _complex_step(kind: str) -> t.Callable[[np.ndarray], t.Any]:
    """A loss of ``y = fn(x * w)``, ``fn`` a value (so ``y``'s type, complex, is unknown to
    the build), through one elementwise step written in the loss itself."""
    fn, w = np.fft.fft, np.cos(np.arange(6.0))
    if kind == "abs":
        return lambda x: np.sum(np.abs(fn(x * w)) ** 3)
    if kind == "exp":
        return lambda x: np.sum(np.real(np.exp(0.3 * fn(x * w))))
    if kind == "conj times":
        return lambda x: np.sum(np.real(np.conj(fn(x * w)) * fn(x * w) * fn(x)))
    if kind == "times":
        return lambda x: np.sum(np.real(fn(x * w) * fn(x * w) * fn(x)))
    if kind == "divide":
        return lambda x: np.sum(np.real(1.0 / (fn(x * w) + 4.0) + fn(x) / (2.0 - 1j * fn(x))))
    if kind == "sin, sqrt":
        return lambda x: np.sum(np.real(np.sin(fn(x * w)) * np.sqrt(fn(x) + 9.0)))
    assert kind == "sin, cosh"
    return lambda x: np.sum(np.real(np.sin(fn(x * w)) * np.cosh(0.2 * fn(x))))


#: Each step, and the modes it differentiates in: a Hessian-vector product writes the formulas
#: out, the complex forms where they read as the real ones do (``conj``, ``abs`` and ``sqrt``'s
#: do not: refused at run time, by name).
COMPLEX_STEPS = {"abs": "rf", "exp": "rfh", "conj times": "rf", "times": "rfh", "divide": "rfh",
                 "sin, sqrt": "rfh", "sin, cosh": "rfh"}  # fmt: skip


@pytest.mark.parametrize("kind", list(COMPLEX_STEPS))
def test_complex_steps_of_unknown_type(kind: str, rng: np.random.Generator) -> None:
    """Forward mode turns an elementwise formula for a complex value found at run time
    (``conj(P(conj(d)))``, the real part for a real result); each mode against central
    differences."""
    f, modes = _complex_step(kind), COMPLEX_STEPS[kind]
    check_program(f, rng.standard_normal(6), modes=modes)
    if "h" not in modes:
        with pytest.raises(ForwardModeError, match="where a real number or array was expected"):
            gibbous.hvp(f, np.linspace(0.1, 1.0, 6), np.ones(6))


def test_frequencies_are_derived_with_their_spacing() -> None:
    """``fftfreq`` and ``rfftfreq`` have no rule: NumPy's Python is derived, in the spacing."""
    for fn in ("fftfreq", "rfftfreq"):
        f = program(f"return np.sum(np.fft.{fn}(8, x[0]) ** 2 * x[1])")
        check_program(f, np.array([0.3, 1.7]))


def _pair(a: np.ndarray, b: np.ndarray) -> float:
    """The real pairing of docs/tangents.md: ``Re sum(conj(a) b)``."""
    return float(np.real(np.vdot(a, b)))


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("kind", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("m, n", [(6, 6), (7, 7), (5, 8), (9, 4), (4, 5)])
def test_stage_adjoints_by_the_dot_product_test(
    kind: str, norm: str | None, m: int, n: int, rng: np.random.Generator
) -> None:
    """``<A x, y> = <x, A* y>`` for the pairing, with ``A*`` the stage's adjoint; an rfft's
    input is real, an irfft's output real (its input's DC and Nyquist imaginary parts get 0)."""
    stage = Stage(kind, 1, n, m, norm)
    x = rng.standard_normal((2, m))
    if kind != "rfft":
        x = x + 1j * rng.standard_normal((2, m))
    y_of_x = getattr(np.fft, kind)(x, n, axis=1, norm=norm)
    y = rng.standard_normal(y_of_x.shape)
    if kind != "irfft":
        y = y + 1j * rng.standard_normal(y.shape)
    adjoint = stage.adjoint(y)
    assert adjoint.shape == x.shape
    if kind == "rfft":
        adjoint = np.real(adjoint)
    assert _pair(y_of_x, y) == pytest.approx(_pair(x, adjoint), rel=1e-12, abs=1e-12)
    if kind == "irfft":
        nyquist = n // 2 if n % 2 == 0 and n // 2 < m else None
        assert np.all(adjoint[:, 0].imag == 0)
        if nyquist is not None:
            assert np.allclose(adjoint[:, nyquist].imag, 0, atol=1e-13)


def test_stages_follow_numpy() -> None:
    """The chains of the n-dimensional transforms: the order NumPy applies them in, and the
    lengths ``s`` and the defaults give."""
    shape = (4, 5, 6)
    kinds = lambda fn, **o: [(s.kind, s.axis, s.n, s.m) for s in stages_of(fn, shape, o)]  # noqa: E731
    assert kinds(np.fft.fftn) == [("fft", 2, 6, 6), ("fft", 1, 5, 5), ("fft", 0, 4, 4)]
    assert kinds(np.fft.rfft2, s=(3, 8)) == [("rfft", 2, 8, 6), ("fft", 1, 3, 5)]
    assert kinds(np.fft.irfftn, axes=(0, 1)) == [("ifft", 0, 4, 4), ("irfft", 1, 8, 5)]
    assert kinds(np.fft.hfft, n=5, axis=0) == [("irfft", 0, 5, 4)]
    hfft = stages_of(np.fft.hfft, shape, {"norm": "ortho"})[0]
    assert hfft.conj_in and hfft.norm == "ortho"
    assert stages_of(np.fft.ihfft, shape, {})[0].norm == "forward"  # NumPy swaps hfft's norms


@pytest.mark.parametrize("fn", [np.fft.fft, np.fft.rfft, np.fft.rfftn, np.fft.irfft])
def test_single_precision_keeps_its_dtype(fn: t.Callable[..., t.Any]) -> None:
    x = np.linspace(0.1, 1.0, 6).astype(np.complex64 if fn is np.fft.irfft else np.float32)
    g = gibbous.grad(lambda x: np.sum(np.abs(fn(x)) ** 2))(x)
    assert g.dtype == x.dtype
    wide = gibbous.grad(lambda x: np.sum(np.abs(fn(x)) ** 2))(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    np.testing.assert_allclose(g, wide, rtol=1e-5, atol=1e-5)


def test_real_input_gets_a_real_gradient() -> None:
    g = gibbous.grad(lambda x: np.sum(np.abs(np.fft.fft(x, 8)) ** 3))(np.arange(5.0))
    assert g.dtype == np.float64


def test_out_is_refused_by_name() -> None:
    out = np.zeros(4, complex)
    with pytest.raises(NotImplementedError, match=r"np.fft.fft with out="):
        gibbous.grad(lambda x: np.sum(np.abs(np.fft.fft(x, out=out))))(np.ones(4))


def test_results_are_typed() -> None:
    from gibbous.inspect import code_ir

    def f(x: np.ndarray) -> t.Any:
        return np.fft.irfft(np.fft.rfft2(x.astype(np.float32)), n=5)

    text = str(code_ir(f, np.ones((3, 4)), stage="typed"))
    assert "numpy.fft.rfft2(%1) : c64[:,:]" in text
    assert "numpy.fft.irfft(%2, n=5) : f32[:,:]" in text
