"""How a run's hosts go through a process: how many processes pay (--jobs; run/pool.py runs them), the hosts in
batches, the cycle collector set for them."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pgvet.errors import UsageError
from pgvet.findings import HostError, HostResult
from pgvet.run.hosts import BATCH_HOSTS

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


# A host makes thousands of containers and no reference cycle (tests/reports/test_report_fleet.py holds a lint to none):
# its objects are freed by their reference counts, and each pass of the cycle collector finds nothing while it
# walks the hosts of the batch still in use. The command line starts with the collector off (pgvet.__main__); a
# batch turns it on with a pass every 20 000 new containers rather than CPython's 700, so that a cycle some input
# still makes is collected within 20 000 containers and memory stays bounded over a fleet.
BATCH_GC_THRESHOLD = (20_000, 20, 20)


def collect_garbage_for_batches() -> bool:
    """The cycle collector on, set for batches of hosts; whether it was off. Off, it was the command line's
    (pgvet.__main__): what exists then (modules, the rule pack) lives as long as the command, and is frozen out of
    the collector's passes."""
    was_off = not gc.isenabled()
    if was_off:
        gc.freeze()
    gc.set_threshold(*BATCH_GC_THRESHOLD)
    gc.enable()
    return was_off


@contextmanager
def collecting_garbage_for_batches() -> Iterator[None]:
    """The cycle collector set for batches of hosts while the block runs, as it was after."""
    threshold = gc.get_threshold()
    was_off = collect_garbage_for_batches()
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if was_off:
            gc.disable()
            gc.unfreeze()


def batches(directories: Sequence[Path | None]) -> Iterator[Sequence[Path | None]]:
    """The directories BATCH_HOSTS at a time, in order."""
    return (directories[start:start + BATCH_HOSTS] for start in range(0, len(directories), BATCH_HOSTS))


def handed_on(outcomes: list[HostResult | HostError]) -> Iterator[HostResult | HostError]:
    """A batch's outcomes in order, each let go of once yielded: the run holds no host the reports wrote."""
    outcomes.reverse()
    while outcomes:
        yield outcomes.pop()
