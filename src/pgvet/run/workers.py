"""A run's hosts linted by several processes (--jobs): how many pay, the pool, its workers' signals, and a worker
that dies (its hosts linted again one by one, so that the one it died on is reported)."""

from __future__ import annotations

import ctypes
import gc
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
from pgvet.errors import UsageError
from pgvet.findings import HostError, HostResult
from pgvet.run.hosts import BATCH_HOSTS, Linter, host_error
from pgvet.run.options import LintOptions

# The fewest hosts each --jobs process must have for the processes to pay: with fewer, starting the pool (each
# worker loads the rule pack) and moving results between processes cost more than the linting they share, and the
# run is slower than in one process (scripts/bench.py --jobs measures it; docs/performance.md). PGVET_JOBS_MIN_HOSTS
# sets it for a machine where it lies elsewhere.
JOBS_MIN_HOSTS = 1000


def worker_count(hosts: int, jobs: int) -> int:
    """The processes a run of ``hosts`` hosts is spread over for ``--jobs``: each must have JOBS_MIN_HOSTS hosts,
    and fewer than two is the run in its own process (1). ``jobs`` 0 (the default) takes one process fewer than the
    CPUs usable: the process that started them reads every result and writes the reports, the text report's
    rendering as costly as the linting (docs/decisions.md) — on two CPUs, a run stays in one process."""
    given = os.environ.get("PGVET_JOBS_MIN_HOSTS")
    try:
        least = JOBS_MIN_HOSTS if not given else int(given)
    except ValueError:
        least = 0
    if least < 1:
        raise UsageError(f"PGVET_JOBS_MIN_HOSTS must be a whole number of hosts, 1 or more, not {given!r}")
    count = min(jobs or usable_cpus() - 1, hosts // least)
    return count if count >= 2 else 1


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask (taskset, a CI runner's cpuset) and a cgroup v2 CPU
    quota (a container's --cpus), which os.cpu_count() does not see."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            group = next(line[3:].strip() for line in handle if line.startswith("0::"))
        with open(f"/sys/fs/cgroup{group.rstrip('/')}/cpu.max", encoding="utf-8") as handle:
            quota, period = handle.read().split()[:2]
        return cpus if quota == "max" else max(1, min(cpus, -(-int(quota) // int(period))))
    except (OSError, StopIteration, ValueError, ZeroDivisionError):  # cgroup v1, no cpu controller: no quota known
        return cpus


_WORKER_LINTER: list[Linter] = []  # a worker process's plan, made once by _start_worker


# A host makes thousands of containers and no reference cycle (tests/reports/test_report_fleet.py holds a lint to none):
# its objects are freed by their reference counts, and each pass of the cycle collector finds nothing while it
# walks the hosts of the batch still in use. A pass every 20 000 new containers rather than CPython's 700 (or
# the 5 000 of before, 3 % of a 1 000-host lint's time) takes 0.5 %; a cycle that some input still makes is
# collected all the same, within 20 000 containers.
BATCH_GC_THRESHOLD = (20_000, 20, 20)


@contextmanager
def collecting_garbage_for_batches() -> Iterator[None]:
    """The cycle collector set for a batch of hosts while the block runs, as it was after."""
    before = gc.get_threshold()
    gc.set_threshold(*BATCH_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


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
    gc.set_threshold(*BATCH_GC_THRESHOLD)  # a worker process lints hosts until the pool ends
    cache.keep_quiet()  # a refused cache was said by the parent, which loaded the pack first
    _WORKER_LINTER[:] = [Linter.of(load_pack(options.rules), options)]  # the pack from the cache


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


def batches(directories: Sequence[Path | None]) -> Iterator[Sequence[Path | None]]:
    """The directories BATCH_HOSTS at a time, in order."""
    return (directories[start:start + BATCH_HOSTS] for start in range(0, len(directories), BATCH_HOSTS))


Chunk = Sequence[Path | None]


def handed_on(outcomes: list[HostResult | HostError]) -> Iterator[HostResult | HostError]:
    """A batch's outcomes in order, each let go of once yielded: the run holds no host the reports wrote."""
    outcomes.reverse()
    while outcomes:
        yield outcomes.pop()


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
