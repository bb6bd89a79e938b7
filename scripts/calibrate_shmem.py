"""pgvet's shared memory estimate against real PostgreSQL servers.

``postgres -C`` computes PostgreSQL's whole shared memory without starting a server. Where the build lets us
choose ``huge_page_size`` (15, 17 and 18 here), ``shared_memory_size_in_huge_pages`` with 1 kB "huge pages"
gives the size to the byte: PostgreSQL reports size / page size + 1, and its size is a multiple of 8 kB.
Otherwise (16's wheel) ``shared_memory_size`` gives it in megabytes, rounded up. Before 15 there is neither:
the server is started (``huge_pages = off``) and the size of the anonymous shared mapping it made, which holds
the whole of CalculateShmemSize's sum since 12 (the System V segment beside it is a small header), is read
from the postmaster's ``/proc/PID/maps``, to the byte; its grid is kept to what this machine can start.

The estimate is the derived fact ``derived.shared_memory_estimate`` of rules/pgv1xx-kernel-memory.yaml, evaluated by
pgvet's engine on a host whose postgresql.conf holds the settings: this script holds no model of its own. It
draws random settings (every setting that sizes shared memory varies), measures them and

    python scripts/calibrate_shmem.py                    # prints the error table of docs/calibration.md
    python scripts/calibrate_shmem.py --constants        # the fixed part consistent with every measurement
    python scripts/calibrate_shmem.py --majors 12 13 14   # some versions only
    python scripts/calibrate_shmem.py --seed 7 --count 60
    python scripts/calibrate_shmem.py --per-unit 14      # the bytes each unit of each setting adds on 14

``--constants`` prints, per version, the interval of ``derived.shared_memory_fixed`` (the structures no
setting sizes) within which the estimate equals every measurement: rules/pgv1xx-kernel-memory.yaml carries its top,
so that the estimate errs high when it errs. An empty interval means a term of the model is wrong.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgservers

KB = 1024
MB = 1024 * KB
PAGE = 8192  # PostgreSQL rounds its shared memory up to a multiple of 8 kB
HUGE_PAGE_SIZES = ("2MB", "1GB")
SLRU_SETTINGS = ("transaction_buffers", "subtransaction_buffers", "commit_timestamp_buffers",
                 "multixact_member_buffers", "multixact_offset_buffers", "notify_buffers", "serializable_buffers")


def _log_uniform(rng: random.Random, low: float, high: float) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


# Versions without shared_memory_size are measured on started servers: the memory PostgreSQL writes at start
# (everything but the buffer pages: descriptors, hash tables, query texts…) must fit this machine.
FIRST_REPORTING_MAJOR = 15
STARTED_MAX_SHARED_BUFFERS = 16 * MB  # kB: 16 GB of buffer pages, mapped but not written
STARTED_MAX_WRITTEN = 1536 * MB  # bytes: the rest of the segment, written at start


def random_settings(major: int, rng: random.Random, *, pg_stat_statements: bool) -> dict[str, str]:
    """One configuration: every setting that feeds the shared memory size, drawn at random."""
    largest_buffers = 200 * MB if major >= FIRST_REPORTING_MAJOR else STARTED_MAX_SHARED_BUFFERS
    settings = {
        "shared_buffers": f"{_log_uniform(rng, 128 * KB, largest_buffers) // 8 * 8}kB",  # 128 MB … 200 GB
        "max_connections": str(_log_uniform(rng, 5, 5000)),
        "max_locks_per_transaction": str(rng.choice([10, 32, 64, 64, 128, 256, 1000, 4000])),
        "max_pred_locks_per_transaction": str(rng.choice([10, 32, 64, 64, 128, 500, 2000])),
        "max_prepared_transactions": str(rng.choice([0, 0, 1, 10, 100, 1000])),
        "wal_buffers": rng.choice(["-1", "-1", "32kB", "1MB", "16MB", "64MB", "512MB"]),
        "max_wal_senders": str(rng.choice([0, 3, 10, 50])),
        "max_replication_slots": str(rng.choice([0, 10, 100, 1000])),
        "max_worker_processes": str(rng.choice([0, 8, 16, 64, 300])),
        "autovacuum_max_workers": str(rng.choice([1, 3, 5, 10])),
        "track_activity_query_size": str(_log_uniform(rng, 100, 100 * KB if major <= 12 else MB)),  # 12: ≤ 100 kB
        "track_commit_timestamp": rng.choice(["on", "off"]),
        "hot_standby": rng.choice(["on", "on", "off"]),
        "max_logical_replication_workers": str(rng.choice([0, 4, 4, 40])),
    }
    if major >= 14:
        settings["min_dynamic_shared_memory"] = rng.choice(["0", "0", "64MB", "1GB"])
    if pg_stat_statements and rng.random() < 0.5:
        settings["shared_preload_libraries"] = "pg_stat_statements"
        settings["pg_stat_statements.max"] = str(rng.choice([100, 5000, 5000, 20000, 200000]))
    if major >= 17:
        for name in SLRU_SETTINGS:
            if rng.random() < 0.3:
                settings[name] = str(16 * rng.choice([1, 4, 16, 64, 256, 1024]))
    if major >= 18:
        slots = max(int(settings["autovacuum_max_workers"]), rng.choice([16, 16, 32, 100]))
        settings["autovacuum_worker_slots"] = str(slots)
        settings["io_workers"] = str(rng.choice([1, 3, 3, 32]))
        settings["io_max_concurrency"] = str(rng.choice([-1, -1, 1, 16, 64, 256]))
        settings["io_max_combine_limit"] = rng.choice(["128kB", "128kB", "8kB", "256kB", "1MB"])
        settings["max_active_replication_origins"] = str(rng.choice([0, 10, 10, 100]))
    return settings


@dataclass(frozen=True, slots=True)
class Measurement:
    settings: dict[str, str]
    size: int | None  # bytes, exact (None when the build gives megabytes only)
    size_mb: int  # shared_memory_size: megabytes, rounded up
    huge_pages: dict[str, int]  # shared_memory_size_in_huge_pages per huge_page_size the build accepts


def has_pg_stat_statements(major: int) -> bool:
    directory = pgservers.bindir(major)
    if directory is not None and not (directory / "pg_config").exists():  # the npm builds: lib/postgresql
        return (directory.parent / "lib" / "postgresql" / "pg_stat_statements.so").is_file()
    done = pgservers.run(major, "pg_config", ["--pkglibdir"])
    return done.returncode == 0 and (Path(done.stdout.strip()) / "pg_stat_statements.so").is_file()


def status_slots_lacking(major: int) -> tuple[str, ...]:
    """The pg_stat_activity status arrays the build of ``major`` lacks — ``ssl`` and ``gssapi``, as the
    derived facts ``ssl_status_shmem`` and ``gssapi_status_shmem`` name them — read from the libraries its
    postgres links (the builds here link them dynamically, as distributions do)."""
    directory = pgservers.bindir(major)
    assert directory is not None
    done = subprocess.run(["ldd", str(directory / "postgres")], capture_output=True, text=True, check=True)
    return tuple(feature for feature, library in (("ssl", "libssl."), ("gssapi", "libgssapi_krb5."))
                 if library not in done.stdout)


def unmeasured_status(values: dict[str, int], lacking: tuple[str, ...]) -> int:
    """The bytes of the status arrays the estimate counts (a distribution's build has them) and the build
    measured lacks."""
    return sum(values[f"{feature}_status_shmem"] for feature in lacking)


def accepts_huge_page_size(major: int, data: Path) -> bool:
    """Whether the build lets us choose huge_page_size (a wheel built without MAP_HUGE_MASK does not)."""
    done = pgservers.run(major, "postgres", ["-D", str(data), "-C", "huge_page_size", "-c", "huge_page_size=2MB"])
    return done.returncode == 0


def _ask(major: int, data: Path, parameter: str, settings: dict[str, str]) -> int:
    args = ["-D", str(data), "-C", parameter]
    for name, value in settings.items():
        args += ["-c", f"{name}={value}"]
    done = pgservers.run(major, "postgres", args, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"postgres {major} -C {parameter} failed for {settings}: {done.stderr.strip()}")
    return int(done.stdout.strip())


def started_size(major: int, data: Path, settings: dict[str, str]) -> int:
    """The bytes of the shared memory a server of ``major`` maps when started with ``settings`` (huge pages
    off): its anonymous shared mapping, read from /proc (PostgreSQL 12+ keeps all of it there)."""
    socket_dir = pgservers.make_tempdir("pgvet-shmem-sock-")
    options = [f"-c listen_addresses='' -k {socket_dir} -c huge_pages=off"]
    options += [f"-c {name}='{value}'" for name, value in settings.items()]
    log = socket_dir / "server.log"
    try:
        started = pgservers.run(major, "pg_ctl", ["start", "-w", "-t", "120", "-D", str(data), "-l", str(log),
                                                  "-o", " ".join(options)], timeout=180)
        if started.returncode != 0:
            raise RuntimeError(f"PostgreSQL {major} did not start with {settings}: "
                               f"{log.read_text(errors='replace') if log.exists() else started.stderr}")
        pid = int((data / "postmaster.pid").read_text().split()[0])
        sizes = [int(end, 16) - int(start, 16) for start, end, name in _mappings(pid) if name == "/dev/zero (deleted)"]
        if len(sizes) != 1:
            raise RuntimeError(f"PostgreSQL {major} (pid {pid}): {len(sizes)} anonymous shared mappings")
        return sizes[0]
    finally:
        pgservers.run(major, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", str(data)], timeout=60)
        shutil.rmtree(socket_dir, ignore_errors=True)


def _mappings(pid: int) -> Iterator[tuple[str, str, str]]:
    """(start, end, path) of each shared mapping of a process."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[1].endswith("s"):
            start, end = fields[0].split("-")
            yield start, end, fields[5]


def measure(major: int, data: Path, settings: dict[str, str], *, fine: bool) -> Measurement:
    if major < FIRST_REPORTING_MAJOR:
        # the segment the server made; huge pages would take it rounded up to a whole page
        size = started_size(major, data, settings)
        return Measurement(settings, size, math.ceil(size / MB),
                           {hp: math.ceil(size / pg_size(hp)) for hp in HUGE_PAGE_SIZES})
    size_mb = _ask(major, data, "shared_memory_size", settings)
    if not fine:  # the kernel's default huge page size only
        return Measurement(settings, None, size_mb, {"default": _ask(major, data, "shared_memory_size_in_huge_pages",
                                                                     settings)})
    size = (_ask(major, data, "shared_memory_size_in_huge_pages", {**settings, "huge_page_size": "1kB"}) - 1) * KB
    pages = {hp: _ask(major, data, "shared_memory_size_in_huge_pages", {**settings, "huge_page_size": hp})
             for hp in HUGE_PAGE_SIZES}
    return Measurement(settings, size, size_mb, pages)


def measure_grid(major: int, seed: int, count: int) -> list[Measurement]:
    """``count`` random configurations drawn with ``seed``, measured on two cluster copies in parallel
    (postgres -C locks its data directory)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed * 100 + major)
    preload = has_pg_stat_statements(major)
    points: list[dict[str, str]] = []
    with engine() as evaluate:
        while len(points) < count:
            point = random_settings(major, rng, pg_stat_statements=preload)
            if major >= FIRST_REPORTING_MAJOR or startable(evaluate(major, point)):
                points.append(point)
    clusters = [pgservers.fresh_cluster(major), pgservers.fresh_cluster(major)]
    fine = major < FIRST_REPORTING_MAJOR or accepts_huge_page_size(major, clusters[0])

    def run(half: int) -> list[Measurement]:
        return [measure(major, clusters[half], point, fine=fine) for point in points[half::2]]

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            halves = list(pool.map(run, range(2)))
    finally:
        for data in clusters:
            shutil.rmtree(data.parent, ignore_errors=True)
    measured: list[Measurement] = []
    for index in range(count):
        measured.append(halves[index % 2][index // 2])
    return measured


def startable(values: dict[str, int]) -> bool:
    """Whether a server with these derived values writes little enough at start for this machine (its buffer
    pages and min_dynamic_shared_memory are mapped, not written)."""
    return values["shared_memory_structures"] - PAGE * values["shared_buffer_pages"] <= STARTED_MAX_WRITTEN


@contextmanager
def engine() -> Iterator[Callable[[int, dict[str, str]], dict[str, int]]]:
    """pgvet's derived facts for settings written in a postgresql.conf (a temporary host per call)."""
    from pgvet.engine.derived import derived_values
    from pgvet.engine.loader import load_pack
    from pgvet.snapshot.load import load_host

    pack = load_pack()
    with tempfile.TemporaryDirectory(prefix="pgvet-shmem-") as scratch:
        def evaluate(major: int, settings: dict[str, str], huge_page_size: str | None = None) -> dict[str, int]:
            host = Path(tempfile.mkdtemp(dir=scratch))
            lines = [f"{name} = '{value}'\n" for name, value in settings.items()]
            if huge_page_size:
                lines.append(f"huge_page_size = '{huge_page_size}'\n")
            (host / "postgresql.conf").write_text("".join(lines))
            (host / "host.yaml").write_text(f"pg_version: {major}\n")
            values = derived_values(pack, load_host(host))
            return {name.removeprefix("derived."): int(fact.value) for name, fact in values.items()
                    if isinstance(fact.value, int | float) and not isinstance(fact.value, bool)}

        yield evaluate


def fixed_part_interval(major: int, measured: list[Measurement],
                        evaluate: Callable[[int, dict[str, str]], dict[str, int]]) -> tuple[int, int]:
    """The values of the fixed part for which the estimate equals every exact measurement (or, read in MB,
    is not below any): PostgreSQL's size is (floor(total / 8 kB) + 1) × 8 kB, so total lies in
    [size − 8 kB, size − 1]."""
    low, high = -(10**18), 10**18
    lacking = status_slots_lacking(major)
    for point in measured:
        values = evaluate(major, point.settings)
        dynamic = int(pg_size(point.settings.get("min_dynamic_shared_memory", "0")))
        structures = values["shared_memory_structures"] - unmeasured_status(values, lacking)
        if point.size is not None:
            low = max(low, point.size - dynamic - PAGE - structures)
            high = min(high, point.size - dynamic - 1 - structures)
        else:  # size in ((size_mb - 1) MB, size_mb MB]
            low = max(low, (point.size_mb - 1) * MB + 1 - dynamic - PAGE - structures)
    return low, high


def measured_build_estimate(values: dict[str, int], lacking: tuple[str, ...]) -> int:
    """The estimate for the build measured: without the status arrays it lacks (``lacking``) and the
    mainstream builds have, rounded as PostgreSQL rounds."""
    total = values["shared_memory_fixed"] + values["shared_memory_structures"]
    dynamic = values["shared_memory_estimate"] - (total // PAGE + 1) * PAGE  # min_dynamic_shared_memory
    return ((total - unmeasured_status(values, lacking)) // PAGE + 1) * PAGE + dynamic


def pg_size(text: str) -> int:
    units = {"kB": KB, "MB": MB, "GB": 1024 * MB}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text.removesuffix(unit)) * factor
    return int(text) * MB  # min_dynamic_shared_memory counts in MB


def relative_error(estimate: int, point: Measurement) -> float:
    """Signed: positive when the estimate is above PostgreSQL's size (bytes, or its megabytes)."""
    if point.size is not None:
        return (estimate - point.size) / point.size
    return (math.ceil(estimate / MB) - point.size_mb) / point.size_mb


# What --per-unit adds to each setting over a default configuration, and the settings it varies.
# Few locks, no hot standby and the shortest query texts: the units added are mostly the setting's own.
PER_UNIT_BASE = {"shared_buffers": "128MB", "max_connections": "100", "max_wal_senders": "10",
                 "max_worker_processes": "8", "autovacuum_max_workers": "3", "max_prepared_transactions": "0",
                 "max_replication_slots": "10", "max_logical_replication_workers": "4",
                 "max_locks_per_transaction": "10", "max_pred_locks_per_transaction": "10", "hot_standby": "off",
                 "track_activity_query_size": "100"}
PER_UNIT_VARIED = ("max_connections", "max_wal_senders", "max_worker_processes", "autovacuum_max_workers",
                   "max_prepared_transactions", "max_replication_slots", "max_logical_replication_workers")
PER_UNIT_STEP = 40000


def per_unit_bytes(major: int, evaluate: Callable[[int, dict[str, str]], dict[str, int]]) -> dict[str, float]:
    """Per setting: what one more unit adds to the real size, beyond what the model's other terms add (its
    hash tables, MaxBackends' share of the lock tables…) — the number per_setting_shmem holds for it. A
    started server's size is exact to 8 kB, so over PER_UNIT_STEP units to within a byte."""
    data = pgservers.fresh_cluster(major)
    lacking = status_slots_lacking(major)
    try:
        def other_terms(settings: dict[str, str]) -> int:
            values = evaluate(major, settings)
            return values["shared_memory_structures"] - values["per_setting_shmem"] - unmeasured_status(values, lacking)

        base = measure(major, data, PER_UNIT_BASE, fine=True).size or 0
        found: dict[str, float] = {}
        for name in [*PER_UNIT_VARIED, "track_activity_query_size", "pg_stat_statements.max"]:
            settings = dict(PER_UNIT_BASE)
            step = PER_UNIT_STEP
            if name == "track_activity_query_size":
                settings[name], step = str(100 + 100000), 100000
                before = PER_UNIT_BASE
            elif name == "pg_stat_statements.max":
                if not has_pg_stat_statements(major):
                    continue
                before = {**PER_UNIT_BASE, "shared_preload_libraries": "pg_stat_statements",
                          "pg_stat_statements.max": "5000"}
                settings = {**before, name: str(5000 + step)}
            else:
                before = PER_UNIT_BASE
                settings[name] = str(int(PER_UNIT_BASE[name]) + step)
            real = (measure(major, data, settings, fine=True).size or 0) - (
                base if before is PER_UNIT_BASE else measure(major, data, before, fine=True).size or 0)
            found[name] = (real - (other_terms(settings) - other_terms(before))) / step
        return found
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--constants", action="store_true", help="print the fixed part's interval per version")
    parser.add_argument("--seed", type=int, default=2028)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--majors", type=int, nargs="+", default=list(pgservers.SUPPORTED_MAJORS))
    parser.add_argument("--per-unit", type=int, metavar="MAJOR",
                        help="print the bytes each unit of each per-process setting adds on a version started here")
    options = parser.parse_args()
    with engine() as evaluate:
        if options.per_unit:
            for name, bytes_per_unit in per_unit_bytes(options.per_unit, evaluate).items():
                print(f"PostgreSQL {options.per_unit}: {name}: {bytes_per_unit:.2f} B per unit "
                      "beyond the model's other terms")
            return
        for major in options.majors:
            if pgservers.bindir(major) is None:
                print(f"PostgreSQL {major}: not installed, skipped")
                continue
            measured = measure_grid(major, options.seed, options.count)
            if options.constants:
                low, high = fixed_part_interval(major, measured, evaluate)
                print(f"PostgreSQL {major}: fixed part in [{low}, {high}]" + (" — EMPTY" if high < low else ""))
                continue
            lacking = status_slots_lacking(major)
            errors = [relative_error(measured_build_estimate(evaluate(major, point.settings), lacking), point)
                      for point in measured]
            exact = sum(1 for error in errors if error == 0)
            print(f"PostgreSQL {major}: {len(errors)} configurations, {exact} exact, "
                  f"largest error {max(errors) * 100:+.3f} %, smallest {min(errors) * 100:+.3f} %"
                  + ("" if measured[0].size is not None else " (read in MB)"))


if __name__ == "__main__":
    main()
