"""The worker pool: claim layers run side by side on worker processes (the standard library's
ProcessPoolExecutor, spawn context), one task per (claim, layer).

A worker looks its claim up by id in the registry (so only registered claims travel), runs one layer of
every variant it was handed, and returns picklable Evidence.  A worker that dies (killed, out of memory,
a crash in a library) breaks the pool: :func:`pool_round` reports its tasks as lost (None), and the
caller (:func:`verify.pipeline.run.execute`) gives them one more try.  Ctrl-C stops the workers at once.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import Any, Mapping, Sequence

from verify import interrupts, runcache
from verify.core import registry
from verify.core.model import Claim, run_layer
from verify.evidence import Context, Evidence, Layer, Status
from verify.thirdparty import pool_broken, pool_processes

#: the cyclic garbage collector's thresholds for a run (CPython's default is (700, 10, 10)): sympy, Fractions and
#: z3's Python objects allocate millions of short-lived objects, and a first-generation pass every 700
#: allocations scanned them again and again (measured: 5-10% of the symbolic and solver layers' time).
#: Reference counting still frees all acyclic garbage at once; only cycles wait longer.  No result depends on it.
GC_THRESHOLD = (50_000, 50, 100)


def tune_gc() -> None:
    """Set :data:`GC_THRESHOLD` (the command line's process and every worker)."""
    import gc

    gc.set_threshold(*GC_THRESHOLD)


def _worker_init(threads: int, parent: int | None = None) -> None:
    """Each worker process gets its share of the cores for torch (no oversubscription), and
    leaves without tearing its modules down: a worker exits only after the pool's shutdown,
    when every result it computed has been written to the result pipe, and the interpreter's
    teardown of torch, sympy and z3 took about 0.6 s of every ``verify all`` (measured).

    torch is not imported here (1.1-1.4 s): a worker that runs only symbolic and solver layers
    never pays for it, and torch reads its thread count from ``OMP_NUM_THREADS`` when a layer
    first imports it."""
    import atexit
    import signal
    import sys
    import threading

    tune_gc()
    atexit.register(os._exit, 0)  # exit handlers run last-registered first: the libraries' own ones still run
    # Ctrl-C reaches the whole process group: the parent handles it (it stops the workers); a worker
    # interrupted mid-task would leave the pool's queues locked and the parent waiting for ever
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:  # a worker whose parent is gone (killed) leaves instead of waiting on a dead pipe
        threading.Thread(target=_orphan_watch, args=(parent,), daemon=True).start()
    os.environ["OMP_NUM_THREADS"] = str(threads)
    runcache.enter()  # the worker's memo scope: its tasks belong to one run (a pool lives for one round)
    if "torch" in sys.modules:  # a forked worker: torch is already loaded, its pool not yet sized
        sys.modules["torch"].set_num_threads(threads)


def _orphan_watch(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _layer_in_worker(items: list[tuple[str, Mapping[str, Any]]], ctx: Context, layer: str,
                     layers: Sequence[str]) -> list[Any]:
    """One layer of every listed (claim id, variant), in a worker process, in order; returns their (picklable)
    Evidence.  A task holds every variant of one claim (variants share work through the layers' caches), or
    of every claim of one ``Claim.worker_group`` (claims that share an expensive import or construction), in
    the worker's memo scope (:mod:`verify.runcache`: one run's, shared by the tasks of this worker), or a
    fresh one for this task where none is open.  ``ctx`` is the run's settings without the progress
    callback."""
    with runcache.run_scope():
        out = []
        for claim_id, variant in items:
            claim = registry.get(claim_id)
            out.append(run_layer(claim, claim.params_type.from_options(variant), ctx, layer, layers))
        return out


def pool_round(groups: Mapping[tuple[str, str], list[int]], planned: Sequence[tuple[Claim, Mapping[str, Any]]],
                ctx: Context, layers: Sequence[str], jobs: int) -> dict[tuple[str, str], list[Any] | None]:
    """Run each (claim id or worker group, layer) task of ``groups`` on a fresh pool of worker processes; return
    each task's Evidence list, or None for a task lost to a dead worker (killed, out of memory, a
    crash in a library: the pool then breaks and every task it has not answered is lost)."""
    import concurrent.futures as cf
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    threads = max(1, (os.cpu_count() or 1) // jobs)
    pool = cf.ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_worker_init, initargs=(threads, os.getpid()))
    try:
        # parameters travel as plain dicts of parsed values (a claim's Params class is rebuilt in the worker)
        futures = {}
        # the pool starts its workers inside submit (_worker_init then ignores SIGINT in them); a key
        # pressed meanwhile is raised after the hand-out (deferred), never inside a worker's start,
        # which would leave that worker outside the pool's list of processes to stop
        with interrupts.blocked_for_children(), interrupts.deferred():
            for key, idx in groups.items():
                try:
                    futures[key] = pool.submit(_layer_in_worker, [(planned[i][0].id, dict(planned[i][1])) for i in idx],
                                               ctx.replace(progress=None), key[1], tuple(layers))
                except Exception as exc:  # a worker died while the work was handed out: the rest is lost
                    # (besides BrokenProcessPool, a pool breaking meanwhile closes the pipes a worker it
                    # is starting needs: OSError 'handle is closed', ValueError 'bad value(s) in fds_to_keep')
                    if isinstance(exc, BrokenProcessPool) or pool_broken(pool):
                        break
                    raise
        pending, answered = set(futures.values()), 0
        while pending:
            finished, pending = cf.wait(pending, timeout=0.25, return_when=cf.FIRST_COMPLETED)
            for _ in finished:
                answered += 1
                ctx.note(f"[{answered}/{len(futures)}] claim layers done ({jobs} jobs)")
            if pending and pool_broken(pool):
                # a worker died: the pool fails what it knew of, but a task handed out while it was
                # breaking can wait for ever (Python 3.11's pool races its own submit against its
                # clean-up, and a worker it spawned then is never stopped), so stop waiting here
                break
    except BaseException as exc:  # Ctrl-C (or any failure here): stop the workers now, never wait for their work
        if isinstance(exc, KeyboardInterrupt):
            ignore_further_interrupts()
        stop_workers(pool)
        raise
    broken = pool_broken(pool) or len(futures) < len(groups)
    if broken:  # its workers are killed, so that the pool's own clean-up (and the exit) never waits on one
        stop_workers(pool)
    answers: dict[tuple[str, str], list[Any] | None] = {}
    with nullcontext() if broken else pool:  # all answered: the normal shutdown is immediate
        for key, idx in groups.items():
            try:
                if key not in futures or not futures[key].done():  # never handed out, or lost in a broken pool
                    raise BrokenProcessPool("the pool broke before this task answered")
                answers[key] = futures[key].result()
            except BrokenProcessPool:
                answers[key] = None
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot travel back: visible, never dropped
                answers[key] = [Evidence(layer=Layer(key[1]), status=Status.ERROR, summary=f"{type(exc).__name__}: {exc}")
                                for _ in idx]
    return answers


def stop_workers(pool: Any) -> None:
    """Kill a process pool's workers at once and shut it down without waiting for their work (Ctrl-C,
    or a pool broken by a dead worker)."""
    procs = pool_processes(pool)  # no public way before 3.14
    for proc in procs:
        proc.kill()
    for proc in procs:  # reaped before the run ends: none is still there when verify exits
        proc.join(5.0)
    pool.shutdown(wait=False, cancel_futures=True)


def ignore_further_interrupts() -> None:
    """After the first Ctrl-C the run is stopping: a second one (a terminal's repeated key, or a
    signal sent to the whole process group) must not cut the cleanup and the one-line message short."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if signal.getsignal(signal.SIGTERM) is interrupts._on_sigint:  # SIGTERM taken like Ctrl-C (interrupts.watching)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread (an embedding program's): leave its handling alone
        pass


def lost(layer: str) -> Evidence:
    """The evidence of a layer whose worker process died before answering: an error (the claim is
    INCONCLUSIVE, never passed), saying how to rerun it."""
    return Evidence(layer=Layer(layer), status=Status.ERROR,
                    summary="the worker process running this layer died before answering, on two tries (killed, out of "
                            "memory or a crash inside a library); nothing was decided; rerun it alone, in this process, with "
                            "'verify CLAIM --serial' (or 'verify all --jobs 1')")


