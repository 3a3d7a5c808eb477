"""Grids of independent tasks on Dask (dask.distributed), or in this process.

:func:`run_grid` maps one importable function over a list of task descriptions and returns the
results *in the order of the tasks*, whatever order the workers finish in.  Where it runs is the
``scheduler`` string (:func:`parse_scheduler`):

* ``"local"`` (the default for the heavy claims): a ``distributed.LocalCluster`` started on this
  machine with ``processes=True``, ``n_workers`` workers of one thread each, no dashboard and
  silenced logs; it is shut down when the grid ends (also on error or Ctrl-C).  Its workers are
  started by multiprocessing's *spawn*: a script that calls :func:`run_grid` must guard its entry
  point with ``if __name__ == "__main__":`` (the ``verify`` console script and ``python -m verify``
  are safe).
* ``"in-process"``: a plain loop in this process (no Dask; used by tests and for one-off runs).
* an address ``tcp://HOST:PORT``: an existing cluster's scheduler.  The address is validated before
  any work (``tls://`` is refused: it needs a Dask security configuration verify does not take); a
  scheduler that cannot be reached within ``connect_timeout_s``, or an address that answers with
  something else than a Dask scheduler, raises :class:`SchedulerUnreachable` (a one-line message),
  which the claims report as an inconclusive numeric layer (exit 3).  Workers of an existing cluster must have ``verify``
  installed, and a cache directory given to a grid must be a path the workers can write.

Dask is imported only when a grid runs on it (``verify list`` stays fast).  Tasks submitted to
Dask are ``client.map(fn, tasks, key=[...], pure=False)`` (each call wrapped to return its task's
index with its result) and collected as they complete; each result is placed by its key and must
carry that key's index (matched by identity, never by an order of keys: "grid-10" sorts before
"grid-2"; tests/core/test_grid.py runs more than ten tasks).  A task function must be deterministic in its argument: then the results do
not depend on where they ran (tests/core/test_grid.py runs one grid both ways and compares the JSON).
Each worker runs its task with torch on one thread (the task functions use
:func:`verify.numeric.lab.one_thread`), so results do not depend on the number of workers.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from typing import Any, Callable, Sequence

from verify.faults import seam

#: the scheduler choices that are not addresses
LOCAL, IN_PROCESS = "local", "in-process"
SCHEDULER_HELP = ("where grids run: 'local' (a 2-worker dask LocalCluster on this machine), 'in-process' (no Dask), "
                  "or an existing scheduler's address tcp://HOST:PORT")
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])"
_ADDRESS = re.compile(r"(tcp)://(" + _HOST + r"):([0-9]{1,5})")
#: most workers a local cluster may start (the machine has few cores; more only adds memory)
MAX_LOCAL_WORKERS = 16


class SchedulerUnreachable(ConnectionError):
    """The scheduler address was well formed but no scheduler answered (one-line message)."""


def parse_scheduler(text: str) -> str:
    """Validate a scheduler string: ``local``, ``in-process`` or ``tcp://HOST:PORT``.

    Returns:
        The normalised string (surrounding blanks removed).
    Raises:
        ValueError: anything else (a one-line message saying what is accepted), including a port
            outside 1..65535.
    """
    t = str(text).strip()
    if t in (LOCAL, IN_PROCESS):
        return t
    m = _ADDRESS.fullmatch(t)
    if not m and t.lower().startswith(("tls://", "ucx://", "ws://", "wss://", "inproc://")):
        raise ValueError(f"scheduler {t.split('://')[0].lower()}:// is not supported (only tcp://HOST:PORT: a tls:// "
                         "scheduler needs a Dask security configuration that verify does not take)")
    if not m:
        shown = t if len(t) <= 60 else t[:40] + "..."
        raise ValueError(f"scheduler {shown!r} is not 'local', 'in-process' or an address tcp://HOST:PORT")
    port = int(m.group(3))
    if not 1 <= port <= 65535:
        raise ValueError(f"scheduler port {port} is outside 1..65535")
    return t


def run_grid(fn: Callable[[Any], Any], tasks: Sequence[Any], scheduler: str = LOCAL, n_workers: int = 2,
             progress: Callable[[str], None] | None = None, name: str = "grid",
             connect_timeout_s: float = 10.0) -> list[Any]:
    """``[fn(t) for t in tasks]``, computed on Dask (or in this process), in the order of ``tasks``.

    Args:
        fn: a module-level (importable, picklable) function of one argument.
        tasks: the task descriptions (picklable; plain dicts are best).
        scheduler: see :func:`parse_scheduler`.
        n_workers: workers of a ``local`` cluster (1..MAX_LOCAL_WORKERS); one thread each.
        progress: optional callback, one line per finished task.
        name: prefix of the Dask task keys and of the progress lines.
        connect_timeout_s: how long to wait for an existing scheduler.

    Returns:
        The results, ``results[k] = fn(tasks[k])``.

    Raises:
        ValueError: a bad scheduler string or worker count.
        SchedulerUnreachable: no scheduler answered at the address.
        Exception: the first exception a task raised (the other tasks are cancelled; Dask's own
            worker log lines are silenced, so the caller reports it once).
    """
    scheduler = parse_scheduler(scheduler)
    if not 1 <= int(n_workers) <= MAX_LOCAL_WORKERS:
        raise ValueError(f"n_workers must be in 1..{MAX_LOCAL_WORKERS}, got {n_workers}")
    note = progress or (lambda m: None)
    tasks = list(tasks)
    if scheduler == IN_PROCESS:
        out = []
        for k, t in enumerate(tasks):
            out.append(fn(t))
            note(f"{name}: task {k + 1}/{len(tasks)} done (in-process)")
        return out
    if not tasks:
        return []
    with _client(scheduler, n_workers, connect_timeout_s) as client:
        from distributed import as_completed

        t0 = time.perf_counter()
        keys = [f"{name}-{k}" for k in range(len(tasks))]
        slot = _key_index(keys)
        futures = client.map(functools.partial(_tagged, fn), range(len(tasks)), tasks, key=keys, pure=False)
        out = [None] * len(tasks)
        filled = [False] * len(tasks)
        done = 0
        for fut in as_completed(futures):
            if fut.status == "error":  # stop at the first failure: cancel the rest, re-raise its exception
                client.cancel(futures)
                raise fut.exception()
            # each result is matched to its task by identity: the task's own index travels with it and
            # must be the slot its key names (never an order of keys, strings or completions)
            k = slot[fut.key]
            tag, res = fut.result()
            if tag != k or filled[k]:
                client.cancel(futures)
                raise RuntimeError(f"{name}: the result of task {tag} came back under the key of task {k}")
            out[k], filled[k] = res, True
            done += 1
            note(f"{name}: task {done}/{len(tasks)} done ({time.perf_counter() - t0:.1f} s, {scheduler})")
        if not all(filled):
            raise RuntimeError(f"{name}: {filled.count(False)} task(s) returned no result")
        return out


def _tagged(fn: Callable[[Any], Any], k: int, task: Any) -> tuple[int, Any]:
    """``(k, fn(task))`` (runs on a worker): the task's index travels with its result."""
    return k, fn(task)


@seam("numeric.grid._key_index")
def _key_index(keys: Sequence[str]) -> dict[str, int]:
    """The position of each task from its Dask key (task k has the key ``f"{name}-{k}"``)."""
    return {key: k for k, key in enumerate(keys)}


class _client:
    """Context manager: a ``distributed.Client`` on a fresh LocalCluster or on an existing scheduler;
    closes the client (and the cluster it started) on exit."""

    def __init__(self, scheduler: str, n_workers: int, connect_timeout_s: float) -> None:
        self.scheduler, self.n_workers, self.timeout = scheduler, n_workers, connect_timeout_s
        self.cluster: Any = None
        self.client: Any = None

    def __enter__(self) -> Any:
        import dask
        from distributed import Client, LocalCluster

        dask.config.set({"distributed.worker.daemon": False, "distributed.logging.distributed": "error"})
        for logger in ("distributed", "distributed.worker", "distributed.scheduler", "distributed.nanny",
                       "distributed.core", "distributed.comm", "tornado"):
            logging.getLogger(logger).setLevel(logging.ERROR)
        if self.scheduler == LOCAL:
            self.cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(self.scheduler, timeout=f"{self.timeout}s")
            except (OSError, TimeoutError) as exc:
                first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
                raise SchedulerUnreachable(f"no Dask scheduler answered at {self.scheduler} within "
                                           f"{self.timeout:g} s ({type(exc).__name__}: {first})") from None
            except Exception as exc:  # noqa: BLE001 - garbage from the address (a MemoryError of a bogus frame size, ...)
                first = (str(exc).splitlines() or [""])[0][:160]
                raise SchedulerUnreachable(f"the address {self.scheduler} did not answer as a Dask scheduler "
                                           f"({type(exc).__name__}: {first})") from None
        return self.client

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.client is not None:
                self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


__all__ = ["run_grid", "parse_scheduler", "SchedulerUnreachable", "LOCAL", "IN_PROCESS", "SCHEDULER_HELP",
           "MAX_LOCAL_WORKERS"]
