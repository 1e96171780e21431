"""The workloads of ``benchmarks/peers.py``: each written once as plain NumPy (what gibbous
differentiates and what the primal times), once by hand (the gradient in NumPy: the floor a
tool could reach), and in the peers' idioms.

The peers' versions are functions of the array module: ``peer(autograd.numpy)``,
``peer(torch)`` and ``peer(jax.numpy)`` give the loss in that library (each speaks enough of
NumPy's API: ``xp.sin``, ``xp.sum``, ``xp.stack``, ``xp.asarray``, ``@``).  This module imports
no peer, so it loads where none is installed.  A tool that cannot express a workload is named
in ``Workload.cannot`` with the reason, and is shown in the table as such.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

import numpy as np
from bench_ad import hand_written

Args = tuple[np.ndarray, ...]
Loss = t.Callable[..., t.Any]
# The value and the gradients of the arguments in ``Workload.wrt``, in that order.
Result = tuple[float, tuple[np.ndarray, ...]]


@dataclass(frozen=True)
class Workload:
    key: str  # the table's label prefix: "2 (n=100)"
    number: int  # what --workloads selects
    label: str
    fn: Loss  # plain NumPy: gibbous and the primal
    make_args: t.Callable[[], Args]
    wrt: tuple[int, ...]  # the arguments whose gradients are computed and checked
    hand: t.Callable[[Args], t.Callable[[], Result]]  # the floor, made once per arguments
    peer: t.Callable[[t.Any], Loss] | None  # given autograd.numpy, torch or jax.numpy
    cannot: dict[str, str] = field(default_factory=dict)  # tool name -> why not
    # tool name -> why it is run only with --slow (its first gradient takes minutes)
    slow: dict[str, str] = field(default_factory=dict)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- 1. scalar loop with a NumPy ufunc -----------------------------------------------------


def scalar_loop(x: np.ndarray) -> float:
    s = 0.0
    for i in range(100):
        s += np.sin(x[i]) * x[i]
    return s


def scalar_loop_xp(xp: t.Any) -> Loss:
    def f(x: t.Any) -> t.Any:
        s = 0.0
        for i in range(100):
            s += xp.sin(x[i]) * x[i]
        return s

    return f


def scalar_loop_hand(args: Args) -> t.Callable[[], Result]:
    (x,) = args

    def run() -> Result:  # records what the reverse loop needs, as a tape would
        s, tape = 0.0, []
        for i in range(100):
            xi = x[i]
            si = np.sin(xi)
            tape.append((i, xi, si))
            s += si * xi
        dx = np.zeros_like(x)
        for i, xi, si in reversed(tape):
            dx[i] += np.cos(xi) * xi + si
        return s, (dx,)

    return run


# --- 2. Rosenbrock -------------------------------------------------------------------------


def rosenbrock(x: np.ndarray) -> t.Any:  # a NumPy scalar
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_xp(xp: t.Any) -> Loss:
    def f(x: t.Any) -> t.Any:
        return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    return f


def rosenbrock_hand(args: Args) -> t.Callable[[], Result]:
    rosen = hand_written("e", args)  # bench_ad's case (e) is this function

    def run() -> Result:
        value, g = t.cast(tuple[float, np.ndarray], rosen())
        return value, (g,)

    return run


# --- 3. tanh MLP ---------------------------------------------------------------------------

MLP_X = _rng(3).standard_normal((64, 64))  # a batch of 64 inputs: data, a module global


def mlp(W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray) -> t.Any:
    return np.sum((np.tanh(MLP_X @ W1 + b1) @ W2 + b2) ** 2)


def mlp_xp(xp: t.Any) -> Loss:
    X = xp.asarray(MLP_X)

    def f(W1: t.Any, b1: t.Any, W2: t.Any, b2: t.Any) -> t.Any:
        return xp.sum((xp.tanh(X @ W1 + b1) @ W2 + b2) ** 2)

    return f


def mlp_hand(args: Args) -> t.Callable[[], Result]:
    W1, b1, W2, b2 = args

    def run() -> Result:
        h = np.tanh(MLP_X @ W1 + b1)
        out = h @ W2 + b2
        dout = 2.0 * out
        dh = (dout @ W2.T) * (1 - h * h)
        return float(np.sum(out * out)), (MLP_X.T @ dh, dh.sum(0), h.T @ dout, dout.sum(0))

    return run


def mlp_args() -> Args:
    rng = _rng(4)
    return (
        rng.standard_normal((64, 128)) / 8,
        rng.standard_normal(128) / 10,
        rng.standard_normal((128, 10)) / 11,
        rng.standard_normal(10) / 10,
    )


# --- 4. the seed: matmul into out= ---------------------------------------------------------


def seed(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> t.Any:  # a NumPy scalar
    np.matmul(A, B, out=C)
    return np.sum(C)


def seed_hand(args: Args) -> t.Callable[[], Result]:
    C, A, B = args

    def run() -> Result:  # the sum's cotangent is ones: dA = 1 @ B.T, dB = A.T @ 1
        np.matmul(A, B, out=C)
        value = float(np.sum(C))
        ones = np.ones_like(C)
        return value, (ones @ B.T, A.T @ ones)

    return run


def seed_args() -> Args:
    rng = _rng(5)
    return np.zeros((16, 8)), rng.standard_normal((16, 32)), rng.standard_normal((32, 8))


def functional(A: np.ndarray, B: np.ndarray) -> t.Any:  # a NumPy scalar
    return np.sum(A @ B)


def functional_xp(xp: t.Any) -> Loss:
    def f(A: t.Any, B: t.Any) -> t.Any:
        return xp.sum(A @ B)

    return f


def functional_hand(args: Args) -> t.Callable[[], Result]:
    A, B = args

    def run() -> Result:
        value = float(np.sum(A @ B))
        ones = np.ones((A.shape[0], B.shape[1]))
        return value, (ones @ B.T, A.T @ ones)

    return run


# --- 5. Lorenz, explicit Euler -------------------------------------------------------------

SIGMA, RHO, BETA, DT, LORENZ_STEPS = 10.0, 28.0, 8.0 / 3.0, 0.01, 200


def lorenz(xyz: np.ndarray) -> t.Any:  # a NumPy scalar
    for _ in range(200):
        x, y, z = xyz
        xyz = xyz + np.array([SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z]) * DT
    return np.sum(xyz)


def lorenz_xp(xp: t.Any) -> Loss:
    def f(xyz: t.Any) -> t.Any:
        for _ in range(200):
            x, y, z = xyz
            xyz = xyz + xp.stack([SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z]) * DT
        return xp.sum(xyz)

    return f


def lorenz_hand(args: Args) -> t.Callable[[], Result]:
    (xyz0,) = args

    def run() -> Result:  # the primal's steps, keeping every state; the reverse on floats
        xyz, states = xyz0, []
        for _ in range(LORENZ_STEPS):
            states.append(xyz)
            x, y, z = xyz
            xyz = xyz + np.array([SIGMA * (y - x), x * (RHO - z) - y, x * y - BETA * z]) * DT
        gx = gy = gz = 1.0
        for state in reversed(states):  # g <- g + dt * J(state)^T g
            x, y, z = (float(v) for v in state)
            gx, gy, gz = (
                gx + DT * (-SIGMA * gx + (RHO - z) * gy + y * gz),
                gy + DT * (SIGMA * gx - gy + x * gz),
                gz + DT * (-x * gy - BETA * gz),
            )
        return float(np.sum(xyz)), (np.array([gx, gy, gz]),)

    return run


# --- 6. RNN --------------------------------------------------------------------------------

RNN_X = _rng(6).standard_normal((50, 16))  # 50 steps of input 16: data, a module global
RNN_H0 = np.zeros(32)


def rnn(W: np.ndarray, U: np.ndarray) -> t.Any:  # a NumPy scalar
    h = RNN_H0
    for t in range(50):
        h = np.tanh(W @ h + U @ RNN_X[t])
    return np.sum(h**2)


def rnn_xp(xp: t.Any) -> Loss:
    X, h0 = xp.asarray(RNN_X), xp.asarray(RNN_H0)

    def f(W: t.Any, U: t.Any) -> t.Any:
        h = h0
        for t in range(50):
            h = xp.tanh(W @ h + U @ X[t])
        return xp.sum(h**2)

    return f


def rnn_hand(args: Args) -> t.Callable[[], Result]:
    W, U = args

    def run() -> Result:
        hs = [RNN_H0]
        for t in range(50):
            hs.append(np.tanh(W @ hs[-1] + U @ RNN_X[t]))
        h = hs[-1]
        dW, dU, dh = np.zeros_like(W), np.zeros_like(U), 2.0 * h
        for t in range(49, -1, -1):
            da = dh * (1 - hs[t + 1] ** 2)
            dW += np.outer(da, hs[t])
            dU += np.outer(da, RNN_X[t])
            dh = W.T @ da
        return float(np.sum(h**2)), (dW, dU)

    return run


def rnn_args() -> Args:
    rng = _rng(7)
    return rng.standard_normal((32, 32)) / 6, rng.standard_normal((32, 16)) / 4


# --- 7. logsumexp --------------------------------------------------------------------------


def logsumexp(x: np.ndarray) -> t.Any:  # a NumPy scalar
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_xp(xp: t.Any) -> Loss:
    def f(x: t.Any) -> t.Any:
        m = xp.max(x)
        return m + xp.log(xp.sum(xp.exp(x - m)))

    return f


def logsumexp_hand(args: Args) -> t.Callable[[], Result]:
    (x,) = args

    def run() -> Result:
        m = np.max(x)
        e = np.exp(x - m)
        s = np.sum(e)
        return float(m + np.log(s)), (e / s,)

    return run


# --- 8. branchy scalar loop ----------------------------------------------------------------


def branchy(x: np.ndarray) -> float:
    s = 0.0
    for i in range(100):
        if x[i] > 0:
            s += x[i] ** 2
        else:
            s -= np.exp(x[i])
    return s


def branchy_xp(xp: t.Any) -> Loss:
    def f(x: t.Any) -> t.Any:
        s = 0.0
        for i in range(100):
            if x[i] > 0:
                s += x[i] ** 2
            else:
                s -= xp.exp(x[i])
        return s

    return f


def branchy_hand(args: Args) -> t.Callable[[], Result]:
    (x,) = args

    def run() -> Result:
        s, tape = 0.0, []
        for i in range(100):
            xi = x[i]
            if xi > 0:
                s += xi**2
                tape.append((i, 2 * xi))
            else:
                e = np.exp(xi)
                s -= e
                tape.append((i, -e))
        dx = np.zeros_like(x)
        for i, d in reversed(tape):
            dx[i] += d
        return s, (dx,)

    return run


# --- the list ------------------------------------------------------------------------------


def _vector(seed: int, n: int, scale: float = 1.0) -> t.Callable[[], Args]:
    return lambda: (_rng(seed).uniform(-scale, scale, n),)


NO_OUT = "cannot express: no out= (arrays are immutable)"
SLOW_LORENZ = ("not run (--slow runs it): on 2026-12-03 (`b956479`, --quick) the unrolled 200"
               " steps' compile and first call took 633 s, then 48x the primal warm")
NO_IF = "cannot express: Python `if` on a traced value (needs jnp.where or lax.cond)"

WORKLOADS: list[Workload] = [
    Workload("1", 1, "scalar loop `s += np.sin(x[i]) * x[i]`, n=100", scalar_loop,
             _vector(1, 100, 2.0), (0,), scalar_loop_hand, scalar_loop_xp),
    Workload("2 (n=100)", 2, "Rosenbrock, n=100", rosenbrock, _vector(2, 100), (0,),
             rosenbrock_hand, rosenbrock_xp),
    Workload("2 (n=10^6)", 2, "Rosenbrock, n=10^6", rosenbrock, _vector(2, 10**6), (0,),
             rosenbrock_hand, rosenbrock_xp),
    Workload("3", 3, "tanh MLP, batch 64, 64->128->10", mlp, mlp_args, (0, 1, 2, 3), mlp_hand,
             mlp_xp),
    Workload("4", 4, "seed `np.matmul(A, B, out=C); np.sum(C)`", seed, seed_args, (1, 2),
             seed_hand, None,
             cannot={"autograd": "cannot express: no out= (autograd.numpy cannot trace writes"
                     " into an array)", "PyTorch eager": "cannot express: out= arguments do not"
                     " support automatic differentiation", "JAX eager": NO_OUT, "jax.jit": NO_OUT}),
    Workload("4 functional", 4, "seed, functional `np.sum(A @ B)`", functional,
             lambda: seed_args()[1:], (0, 1), functional_hand, functional_xp),
    Workload("5", 5, "Lorenz, 200 Euler steps", lorenz, lambda: (np.array([1.0, 1.0, 1.0]),),
             (0,), lorenz_hand, lorenz_xp, slow={"jax.jit": SLOW_LORENZ}),
    Workload("6", 6, "RNN, 50 steps, hidden 32, input 16", rnn, rnn_args, (0, 1), rnn_hand,
             rnn_xp),
    Workload("7", 7, "logsumexp, n=10^4", logsumexp, _vector(8, 10**4, 5.0), (0,),
             logsumexp_hand, logsumexp_xp),
    Workload("8", 8, "branchy scalar loop, n=100", branchy, _vector(9, 100, 2.0), (0,),
             branchy_hand, branchy_xp, cannot={"jax.jit": NO_IF}),
]  # fmt: skip
