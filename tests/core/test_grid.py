"""Grids on Dask: the same grid in this process and on a 2-worker LocalCluster gives identical results."""

from __future__ import annotations

import json
import socket

import pytest

from verify import faults
from verify.numeric import grid
from verify.numeric import pr26_trained as pt


def _specs(cache_dir=None):
    specs = pt.cell_specs([0, 1], [30, 60], cache_dir, families=("rope", "affine"), tasks=("prev", "copy"))
    for s in specs:
        s["steps"] = 25  # a short training run: the comparison is about where it runs, not the model
    return specs


def _stable(cells):
    return json.dumps([{k: v for k, v in c.items() if k not in ("train_s", "eval_s", "from_cache", "rejected")}
                       for c in cells], sort_keys=True)


def test_in_process_equals_local_cluster():
    lines: list[str] = []
    here = grid.run_grid(pt.run_cell, _specs(), scheduler=grid.IN_PROCESS)
    dask = grid.run_grid(pt.run_cell, _specs(), scheduler=grid.LOCAL, n_workers=2, progress=lines.append)
    assert _stable(here) == _stable(dask)
    # results come back in task order, whatever order the workers finished in
    assert [(c["family"], c["task"]) for c in dask] == [("rope", "prev"), ("rope", "copy"), ("affine", "prev"),
                                                         ("affine", "copy")]
    assert len(lines) == 4 and all("local" in ln for ln in lines)


def test_equality_check_can_fail():
    """Fault: one worker-side result perturbed -> the in-process/Dask comparison notices."""
    a = grid.run_grid(pt.run_cell, _specs()[:1], scheduler=grid.IN_PROCESS)
    b = json.loads(json.dumps(a))
    b[0]["rows"][0]["accuracy"] += 1e-9
    assert _stable(a) != _stable(b)


@pytest.mark.parametrize("text", ["local", "in-process", "tcp://127.0.0.1:8786", "tcp://scheduler.example.org:443",
                                  "tcp://[::1]:8786", " local "])
def test_scheduler_strings_accepted(text):
    assert grid.parse_scheduler(text) == text.strip()


@pytest.mark.parametrize("text", ["", "localhost:8786", "http://x:1", "tcp://x", "tcp://x:0", "tcp://x:99999",
                                  "tcp://-bad-:1", "tcp://a b:1", "tcp://x:1/path", "tcp://x:1; rm -rf /", "LOCAL",
                                  "tls://127.0.0.1:9"])  # tls:// needs a security configuration verify does not take
def test_scheduler_strings_refused(text):
    with pytest.raises(ValueError):
        grid.parse_scheduler(text)


def test_unreachable_scheduler_is_one_line():
    with socket.socket() as s:  # a port with nothing listening on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(grid.SchedulerUnreachable) as exc:
        grid.run_grid(pt.run_cell, _specs()[:1], scheduler=f"tcp://127.0.0.1:{port}", connect_timeout_s=2)
    assert "\n" not in str(exc.value) and f"127.0.0.1:{port}" in str(exc.value)


def test_bad_worker_count_refused():
    with pytest.raises(ValueError):
        grid.run_grid(pt.run_cell, [], n_workers=0)


def test_more_than_ten_cells_matched_by_identity():
    """Twelve tasks on one Dask cluster come back as [fn(t) for t in tasks] ("grid-10" sorts before "grid-2":
    an order of key strings would put task 10's result in slot 2).  Fault: the slots taken
    from the sorted key strings -> the identity check (each result carries its task's index) refuses."""
    import logging

    from distributed import LocalCluster

    tasks = list(range(12))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster:
        addr = cluster.scheduler_address
        assert grid.run_grid(str, tasks, scheduler=addr) == [str(t) for t in tasks]
        with faults.inject("numeric.grid._key_index", lambda keys: {key: k for k, key in enumerate(sorted(keys))}):
            with pytest.raises(RuntimeError, match="came back under the key of task"):
                grid.run_grid(str, tasks, scheduler=addr)
    assert grid.run_grid(str, tasks, scheduler=grid.IN_PROCESS) == [str(t) for t in tasks]
