"""pgvet's shared memory estimate against real PostgreSQL servers.

``postgres -C`` computes PostgreSQL's whole shared memory without starting a server. Where the build lets us
choose ``huge_page_size`` (15, 17 and 18 here), ``shared_memory_size_in_huge_pages`` with 1 kB "huge pages"
gives the size to the byte: PostgreSQL reports size / page size + 1, and its size is a multiple of 8 kB.
Otherwise (16's wheel) ``shared_memory_size`` gives it in megabytes, rounded up.

The estimate is the derived fact ``derived.shared_memory_estimate`` of rules/hugepages.yaml, evaluated by
pgvet's engine on a host whose postgresql.conf holds the settings: this script holds no model of its own. It
draws random settings (every setting that sizes shared memory varies), measures them and

    python scripts/calibrate_shmem.py                    # prints the error table of docs/calibration.md
    python scripts/calibrate_shmem.py --constants        # the fixed part consistent with every measurement
    python scripts/calibrate_shmem.py --seed 7 --count 60

``--constants`` prints, per version, the interval of ``derived.shared_memory_fixed`` (the structures no
setting sizes) within which the estimate equals every measurement: rules/hugepages.yaml carries its top,
so that the estimate errs high when it errs. An empty interval means a term of the model is wrong.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
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


def random_settings(major: int, rng: random.Random, *, pg_stat_statements: bool) -> dict[str, str]:
    """One configuration: every setting that feeds the shared memory size, drawn at random."""
    settings = {
        "shared_buffers": f"{_log_uniform(rng, 128 * KB, 200 * MB) // 8 * 8}kB",  # 128 MB … 200 GB
        "max_connections": str(_log_uniform(rng, 5, 5000)),
        "max_locks_per_transaction": str(rng.choice([10, 32, 64, 64, 128, 256, 1000, 4000])),
        "max_pred_locks_per_transaction": str(rng.choice([10, 32, 64, 64, 128, 500, 2000])),
        "max_prepared_transactions": str(rng.choice([0, 0, 1, 10, 100, 1000])),
        "wal_buffers": rng.choice(["-1", "-1", "32kB", "1MB", "16MB", "64MB", "512MB"]),
        "max_wal_senders": str(rng.choice([0, 3, 10, 50])),
        "max_replication_slots": str(rng.choice([0, 10, 100, 1000])),
        "max_worker_processes": str(rng.choice([0, 8, 16, 64, 300])),
        "autovacuum_max_workers": str(rng.choice([1, 3, 5, 10])),
        "track_activity_query_size": str(_log_uniform(rng, 100, 1024 * 1024)),
        "track_commit_timestamp": rng.choice(["on", "off"]),
        "hot_standby": rng.choice(["on", "on", "off"]),
        "max_logical_replication_workers": str(rng.choice([0, 4, 4, 40])),
        "min_dynamic_shared_memory": rng.choice(["0", "0", "64MB", "1GB"]),
    }
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
    done = pgservers.run(major, "pg_config", ["--pkglibdir"])
    return done.returncode == 0 and (Path(done.stdout.strip()) / "pg_stat_statements.so").is_file()


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


def measure(major: int, data: Path, settings: dict[str, str], *, fine: bool) -> Measurement:
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
    points = [random_settings(major, rng, pg_stat_statements=preload) for _ in range(count)]
    clusters = [pgservers.fresh_cluster(major), pgservers.fresh_cluster(major)]
    fine = accepts_huge_page_size(major, clusters[0])

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


@contextmanager
def engine() -> Iterator[Callable[[int, dict[str, str]], dict[str, int]]]:
    """pgvet's derived facts for settings written in a postgresql.conf (a temporary host per call)."""
    from pgvet.engine.derived import derived_values
    from pgvet.engine.loader import load_pack
    from pgvet.snapshot import load_host

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
    for point in measured:
        values = evaluate(major, point.settings)
        dynamic = int(pg_size(point.settings.get("min_dynamic_shared_memory", "0")))
        structures = values["shared_memory_structures"]
        if point.size is not None:
            low = max(low, point.size - dynamic - PAGE - structures)
            high = min(high, point.size - dynamic - 1 - structures)
        else:  # size in ((size_mb - 1) MB, size_mb MB]
            low = max(low, (point.size_mb - 1) * MB + 1 - dynamic - PAGE - structures)
    return low, high


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--constants", action="store_true", help="print the fixed part's interval per version")
    parser.add_argument("--seed", type=int, default=2028)
    parser.add_argument("--count", type=int, default=60)
    options = parser.parse_args()
    with engine() as evaluate:
        for major in pgservers.SUPPORTED_MAJORS:
            if pgservers.bindir(major) is None:
                print(f"PostgreSQL {major}: not installed, skipped")
                continue
            measured = measure_grid(major, options.seed, options.count)
            if options.constants:
                low, high = fixed_part_interval(major, measured, evaluate)
                print(f"PostgreSQL {major}: fixed part in [{low}, {high}]" + (" — EMPTY" if high < low else ""))
                continue
            errors = [relative_error(evaluate(major, point.settings)["shared_memory_estimate"], point)
                      for point in measured]
            exact = sum(1 for error in errors if error == 0)
            print(f"PostgreSQL {major}: {len(errors)} configurations, {exact} exact, "
                  f"largest error {max(errors) * 100:+.3f} %, smallest {min(errors) * 100:+.3f} %"
                  + ("" if measured[0].size is not None else " (read in MB)"))


if __name__ == "__main__":
    main()
