"""examples/dask_gradients.py on a LocalCluster of worker processes: the sharded gradient is
the single-process one, and each worker builds its rule once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import typing as t
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from examples import dask_gradients as example  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def client() -> t.Iterator[t.Any]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def test_sharded_gradient_on_worker_processes(client: t.Any) -> None:
    w, X, y, parts = example.make_data(n=2000, shards=6)
    gradient, reports = example.distributed_gradient(client, w, parts, rounds=3)
    want = example.local_gradient(w, X, y)
    assert np.max(np.abs(gradient - want)) < 1e-10
    last = reports[-len(parts) :]
    assert sum(r["loss"] for r in last) == pytest.approx(example.shard_loss(w, X, y), rel=1e-12)
    pids = {r["pid"] for r in reports}
    assert len(pids) == 2 and os.getpid() not in pids  # both worker processes worked
    for pid in pids:
        mine = [r for r in reports if r["pid"] == pid]
        assert len(mine) >= 2  # reused across tasks ...
        assert max(r["builds"] for r in mine) == 1  # ... built once


def test_a_pickled_rule_travels_to_the_workers(client: t.Any) -> None:
    w, _, _, parts = example.make_data(n=600, shards=3, seed=1)
    rule = example.gibbous.build_rrule(example.shard_loss, w, *parts[0])
    futures = [client.submit(example.gradient_with, rule, w, p) for p in parts]
    for got, (X, y) in zip(client.gather(futures), parts):
        assert np.allclose(got, example.local_gradient(w, X, y), rtol=1e-12, atol=1e-12)


def test_the_example_script() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dask_gradients.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT.parent,  # anywhere: the script finds gibbous and itself
    )
    assert done.returncode == 0, done.stderr
    difference = re.search(r"^max \|difference\| (\S+)$", done.stdout, re.MULTILINE)
    assert difference is not None and float(difference.group(1)) < 1e-10
    assert "rules built per worker [1, 1]" in done.stdout
