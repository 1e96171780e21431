"""Gradients on Dask workers: a data-parallel loss, its data sharded across worker processes.

Run it: ``python examples/dask_gradients.py`` (needs ``pip install "dask[distributed]"``)
starts a ``LocalCluster`` of two worker processes, computes the gradient of a logistic
regression's negative log-likelihood as the sum of the gradients of its shards, each on the
worker that holds the shard, and compares it with the gradient computed here in one process.

Each worker builds the rule of ``shard_loss`` once, on its first task, and reuses it for every
later task (``rule_for``: a per-process cache keyed by the function and the argument types).
Workers find ``shard_loss`` by importing this module (``examples.dask_gradients``), which is
how Dask pickles module-level functions; a rule itself also travels (pickle stores the
function and the argument types, and the worker builds it again on load: docs/ad.md, "Copies
and pickling").
"""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: this checkout's gibbous and examples
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gibbous  # noqa: E402

if t.TYPE_CHECKING:
    from distributed import Client


def shard_loss(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """The negative log-likelihood of logistic regression on one shard (labels 0 or 1)."""
    z = X @ w
    return float(np.sum(np.logaddexp(0.0, z) - y * z))


# One rule per function and argument types, per process: built by a worker's first task.
_RULES: dict[tuple[object, ...], t.Any] = {}
builds = 0


def rule_for(f: t.Callable[..., float], *args: np.ndarray) -> t.Any:
    global builds
    key = (f, *((a.dtype.str, a.ndim) for a in args))
    rule = _RULES.get(key)
    if rule is None:
        rule = _RULES[key] = gibbous.build_rrule(f, *args)
        builds += 1
    return rule


def shard_gradient(w: np.ndarray, shard: tuple[np.ndarray, np.ndarray]) -> dict[str, t.Any]:
    """A task: one shard's loss and gradient, with which process computed it and how many
    rules that process has built so far."""
    X, y = shard
    rule = rule_for(shard_loss, w, X, y)
    value, (_, dw, _, _) = gibbous.value_and_gradient(rule, shard_loss, w, X, y)
    return {"loss": value, "gradient": dw, "pid": os.getpid(), "builds": builds}


def gradient_with(rule: t.Any, w: np.ndarray, shard: tuple[np.ndarray, np.ndarray]) -> t.Any:
    """A task given a rule built by the client (pickled, and built again on the worker)."""
    X, y = shard
    return gibbous.value_and_gradient(rule, shard_loss, w, X, y)[1][1]


def make_data(n: int = 4000, d: int = 8, shards: int = 8, seed: int = 0) -> t.Any:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0).astype(float)
    w = 0.1 * rng.standard_normal(d)
    parts = list(zip(np.array_split(X, shards), np.array_split(y, shards)))
    return w, X, y, parts


def distributed_gradient(
    client: Client, w: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]], rounds: int = 3
) -> tuple[np.ndarray, list[dict[str, t.Any]]]:
    """The gradient of the sum of the shards' losses, each shard's on the worker that holds
    it, ``rounds`` times over (as the steps of an optimiser would): the last round's gradient
    and every task's report."""
    shards = client.scatter(parts)  # spread over the workers; each task runs where its shard is
    reports: list[dict[str, t.Any]] = []
    total = np.zeros_like(w)
    for _ in range(rounds):
        futures = [client.submit(shard_gradient, w, s, pure=False) for s in shards]
        done = client.gather(futures)
        reports.extend(done)
        total = np.sum([r["gradient"] for r in done], axis=0)
    return total, reports


def local_gradient(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    rule = gibbous.build_rrule(shard_loss, w, X, y)
    return t.cast(np.ndarray, gibbous.value_and_gradient(rule, shard_loss, w, X, y)[1][1])


def main() -> None:
    from distributed import Client, LocalCluster

    # Submitted by this module's import name, so that workers import it rather than receive
    # copies of __main__'s functions (and their cache) with every task.
    from examples import dask_gradients as here

    w, X, y, parts = here.make_data()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, Client(cluster) as client:
        gradient, reports = here.distributed_gradient(client, w, parts)
        rule = here.rule_for(here.shard_loss, w, *parts[0])
        shipped = client.gather([client.submit(here.gradient_with, rule, w, p) for p in parts])
    want = here.local_gradient(w, X, y)
    per_worker: dict[int, int] = {}
    for report in reports:
        per_worker[report["pid"]] = max(per_worker.get(report["pid"], 0), report["builds"])
    print("gradient (Dask, 2 worker processes):", np.array2string(gradient, precision=6))
    print("gradient (one process):             ", np.array2string(want, precision=6))
    print(f"max |difference| {np.max(np.abs(gradient - want)):.3g}")
    print(f"tasks {len(reports)}, rules built per worker {sorted(per_worker.values())}")
    shipped_error = max(np.max(np.abs(g - local_gradient(w, *p))) for g, p in zip(shipped, parts))
    print(f"a pickled rule on the workers: max |difference| {shipped_error:.3g}")


if __name__ == "__main__":
    main()
