"""A run's hosts linted by several processes (--jobs): the pool, its workers' signals, and a worker that dies (its
hosts linted again one by one, so that the one it died on is reported). Imported only by a run that starts a pool
(run/lint.py): concurrent.futures' processes import multiprocessing, a start-up cost a run in one process need
not pay."""

from __future__ import annotations

import ctypes
import itertools
import os
import signal
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path

from pgvet import cache
from pgvet.engine.loader import load_pack
from pgvet.findings import HostError, HostResult
from pgvet.run.hosts import Linter, host_error
from pgvet.run.options import LintOptions
from pgvet.run.workers import batches, collect_garbage_for_batches, handed_on

_WORKER_LINTER: list[Linter] = []  # a worker process's plan, made once by _start_worker


# Signals that stop a run (pgvet.interrupt): held back while worker processes start (_signals_held)
_STOPPING = ("SIGINT", "SIGTERM", "SIGHUP")


def _start_worker(options: LintOptions, parent: int) -> None:
    # Ctrl-C reaches the whole process group: the parent stops the run and ends its workers, which must not
    # each print a KeyboardInterrupt traceback (nor break the pool). SIGTERM and SIGHUP end a worker as they end
    # any process (the parent ends its workers with SIGTERM), not by the parent's handler, inherited by fork.
    # They start with these signals blocked (_signals_held), until they are so.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in _STOPPING[1:]:
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _die_with(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, name) for name in _STOPPING})
    collect_garbage_for_batches()  # a worker process lints hosts until the pool ends
    cache.keep_quiet()  # a refused cache was said by the parent, which loaded the pack first
    pack = load_pack(options.rules, repository=options.repository)  # from the cache
    _WORKER_LINTER[:] = [Linter.of(pack, options)]


def _die_with(parent: int) -> None:
    """On Linux, this worker ends when its parent dies, also killed by SIGKILL (the out-of-memory killer) with no
    handler run to end the pool: else it would wait for chunks forever."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)


@contextmanager
def _signals_held() -> Iterator[None]:
    """The signals that stop a run held back while the block runs (they are delivered after): worker processes
    started in it begin with them blocked, until _start_worker has set what they do there."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {getattr(signal, name) for name in _STOPPING}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """The pool's processes ended and reaped now, not once they have finished their chunk: the run is stopped (a
    signal, Ctrl-C, a report that cannot be written). A worker ended while it wrote a result leaves half of it in
    the results' pipe, which the pool's thread would wait forever to read the rest of (and shutdown, and the
    interpreter's exit, for that thread): the pipe's last writing end, this process's own, is closed, so that the
    thread reads its end instead and stops. ProcessPoolExecutor has no public way to end its processes before
    Python 3.14."""
    processes = list((pool._processes or {}).values())
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
    results = pool._result_queue
    if results is not None:
        results._writer.close()  # type: ignore[attr-defined]  # SimpleQueue's own end of its pipe


def _lint_in_worker(directories: Sequence[Path | None]) -> list[HostResult | HostError]:
    """A chunk's outcomes (up to 64 hosts, for fewer round trips), linted in batches as in one process."""
    plan = _WORKER_LINTER[0]
    return [outcome for batch in batches(directories) for outcome in plan.lint_batch(batch)]


Chunk = Sequence[Path | None]


def in_processes(chunks: Iterator[Chunk], jobs: int, options: LintOptions) -> Iterator[HostResult | HostError]:
    """The chunks' outcomes in order, linted by ``jobs`` processes. A worker that dies (killed by the kernel
    out of memory, a crash in a C library) breaks its pool: the hosts that were under way are then linted again
    one at a time (_isolated) so that the one it died on is reported as such, and the run goes on."""
    # a few chunks ahead of the reports, no more: results wait in memory only while the reports write
    pending: deque[tuple[Chunk, Future[list[HostResult | HostError]]]] = deque()
    pool = _pool(jobs, options)
    try:
        for chunk in itertools.chain(chunks, [None]):
            if chunk is not None:
                try:
                    with _signals_held():
                        pending.append((chunk, pool.submit(_lint_in_worker, chunk)))
                except BrokenProcessPool:
                    pending.append((chunk, _broken()))
            while pending and (chunk is None or len(pending) > 2 * jobs):
                try:
                    outcomes = pending[0][1].result()
                except BrokenProcessPool:
                    pool.shutdown(wait=True)
                    for lost, _ in pending:
                        yield from _isolated(lost, options)
                    pending.clear()
                    pool = _pool(jobs, options)
                    continue
                pending.popleft()
                yield from handed_on(outcomes)
    except BaseException:
        _end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _pool(jobs: int, options: LintOptions) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(options, os.getpid()))


def _broken() -> Future[list[HostResult | HostError]]:
    future: Future[list[HostResult | HostError]] = Future()
    future.set_exception(BrokenProcessPool("the pool broke before the chunk was given to it"))
    return future


def _isolated(directories: Chunk, options: LintOptions) -> Iterator[HostResult | HostError]:
    """Each host in a process of its own pool: a host its process dies on is reported, the others linted."""
    pool = _pool(1, options)
    try:
        for directory in directories:
            try:
                with _signals_held():
                    future = pool.submit(_lint_in_worker, [directory])
                yield from future.result()
            except BrokenProcessPool:
                yield host_error(directory, "internal error: the process linting this host died (killed by the "
                                             "system, out of memory?); the other hosts were linted")
                pool.shutdown(wait=True)
                pool = _pool(1, options)
    except BaseException:
        _end_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
