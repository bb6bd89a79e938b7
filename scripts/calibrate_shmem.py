"""Calibrate pgvet's estimate of PostgreSQL's shared memory against real servers.

For each installed major version, ``postgres -C`` (PostgreSQL computes its whole shared memory without
starting) is run over a grid of the settings that drive the size. Where the build lets us choose
``huge_page_size`` (15, 17 and 18 here), ``shared_memory_size_in_huge_pages`` with 1 kB "huge pages"
reads the size to the kilobyte; otherwise ``shared_memory_size`` reads it to the megabyte (rounded up).

A model with PostgreSQL's own structure (CalculateShmemSize) is fitted by least squares on three quarters
of the grid and checked on the rest. Writes scripts/data/shmem/pgNN.csv and prints the coefficients that
rules/hugepages.yaml carries.

    python scripts/calibrate_shmem.py            # measure on every installed major, write the CSVs, fit
    python scripts/calibrate_shmem.py --fit-only # refit from the committed CSVs
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgservers

DATA = Path(__file__).resolve().parent / "data" / "shmem"
KB = 1024
MB = 1024 * KB
BLOCK = 8192

# Settings in the CSV, in the unit PostgreSQL is given them with (-c name=value): sizes in kB, -1 = auto.
COMMON = ("shared_buffers_kb", "max_connections", "autovacuum_max_workers", "max_worker_processes",
          "max_wal_senders", "max_prepared_transactions", "max_locks_per_transaction",
          "max_pred_locks_per_transaction", "wal_buffers_kb", "max_replication_slots", "track_activity_query_size")
# 17 sizes its SLRU caches with GUCs (in blocks, 0 = auto from shared_buffers, multiples of 16).
SLRU = ("transaction_buffers", "subtransaction_buffers", "commit_timestamp_buffers", "multixact_member_buffers",
        "multixact_offset_buffers", "notify_buffers", "serializable_buffers")
SLRU_DEFAULTS = {"transaction_buffers": 0, "subtransaction_buffers": 0, "commit_timestamp_buffers": 0,
                 "multixact_member_buffers": 32, "multixact_offset_buffers": 16, "notify_buffers": 16,
                 "serializable_buffers": 32}
# 18: autovacuum slots reserved at start, asynchronous I/O handles per process (-1 = auto) and their size.
AIO = ("autovacuum_worker_slots", "io_max_concurrency", "io_max_combine_limit_kb")
AIO_DEFAULTS = {"autovacuum_worker_slots": 16, "io_max_concurrency": -1, "io_max_combine_limit_kb": 128}
DEFAULTS = {"max_connections": 100, "autovacuum_max_workers": 3, "max_worker_processes": 8, "max_wal_senders": 10,
            "max_prepared_transactions": 0, "max_locks_per_transaction": 64, "max_pred_locks_per_transaction": 64,
            "wal_buffers_kb": -1, "max_replication_slots": 10, "track_activity_query_size": 1024,
            **SLRU_DEFAULTS, **AIO_DEFAULTS}
# 18: auxiliary processes with a PGPROC (6 + 32 possible I/O workers), counted in the AIO processes.
AUXILIARY_PROCS_18 = 38


def drivers(major: int) -> tuple[str, ...]:
    return COMMON + (SLRU if major >= 17 else ()) + (AIO if major >= 18 else ())


def grid(major: int, seed: int = 2024) -> list[dict[str, int]]:
    """shared_buffers 128 MB … 256 GB × max_connections 20 … 5000 at defaults, then random combinations."""
    rng = random.Random(seed * 100 + major)
    names = drivers(major)
    base = {name: DEFAULTS[name] for name in names[1:]}
    buffers_mb = [128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3000, 4096, 6144, 8192, 12000, 16384,
                  24576, 32768, 49152, 65536, 98304, 141312, 196608, 262144]
    points = [{"shared_buffers_kb": mb * 1024, **base, "max_connections": connections}
              for mb in buffers_mb for connections in (20, 100, 300, 1000, 5000)]
    for _ in range(400):
        point = {"shared_buffers_kb": int(math.exp(rng.uniform(math.log(128 * 1024), math.log(256 * 1024 * 1024))))
                 // 8 * 8, **base}
        point["max_connections"] = int(math.exp(rng.uniform(math.log(20), math.log(5000))))
        point["autovacuum_max_workers"] = rng.choice([1, 3, 3, 5, 10, 16])
        point["max_worker_processes"] = rng.choice([8, 8, 16, 32, 64, 128])
        point["max_wal_senders"] = rng.choice([0, 10, 10, 20, 50])
        point["max_prepared_transactions"] = rng.choice([0, 0, 0, 50, 200, 1000])
        point["max_locks_per_transaction"] = rng.choice([64, 64, 64, 10, 128, 256, 1024, 2048])
        point["max_pred_locks_per_transaction"] = rng.choice([64, 64, 64, 10, 128, 256, 1024])
        point["wal_buffers_kb"] = rng.choice([-1, -1, -1, 64, 1024, 16384, 65536, 262144])
        point["max_replication_slots"] = rng.choice([0, 10, 10, 50, 500])
        point["track_activity_query_size"] = rng.choice([1024, 1024, 1024, 4096, 32768])
        if major >= 17:
            for name in SLRU:
                if rng.random() < 0.15:
                    point[name] = 16 * rng.choice([1, 4, 16, 64, 256, 1024])
        if major >= 18:
            point["autovacuum_worker_slots"] = max(point["autovacuum_max_workers"], rng.choice([16, 16, 32, 64]))
            point["io_max_concurrency"] = rng.choice([-1, -1, -1, 1, 16, 64, 256])
            point["io_max_combine_limit_kb"] = rng.choice([128, 128, 128, 8, 256, 1024])
        points.append(point)
    return points


def settings(point: dict[str, int]) -> list[str]:
    args = []
    for name, value in point.items():
        if name.endswith("_kb"):
            args += ["-c", f"{name.removesuffix('_kb')}={value if value < 0 else f'{value}kB'}"]
        else:
            args += ["-c", f"{name}={value}"]
    return args


def fine_reading(major: int) -> bool:
    """Whether the build accepts huge_page_size (then 1 kB "huge pages" count the size to the kilobyte)."""
    done = pgservers.run(major, "postgres", ["-D", str(pgservers.fresh_cluster(major)), "-C",
                                             "shared_memory_size_in_huge_pages", "-c", "huge_page_size=1kB"])
    return done.returncode == 0


def measure(major: int, data: Path, point: dict[str, int], fine: bool) -> int:
    """PostgreSQL's shared memory in bytes, rounded up to the reading's resolution (1 kB or 1 MB)."""
    reading = ["-C", "shared_memory_size_in_huge_pages", "-c", "huge_page_size=1kB"] if fine else \
        ["-C", "shared_memory_size"]
    done = pgservers.run(major, "postgres", ["-D", str(data), *reading, *settings(point)], timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"postgres -C failed for {point}: {done.stderr.strip()}")
    return int(done.stdout.strip()) * (KB if fine else MB)


def next_power_of_2(value: float) -> float:
    """dynahash gives a shared hash table a power-of-two number of buckets (8 bytes each)."""
    return float(2 ** math.ceil(math.log2(max(value, 256))))


def max_backends(point: dict[str, int], major: int) -> int:
    """MaxBackends: 18 reserves autovacuum_worker_slots rather than autovacuum_max_workers, plus the
    autovacuum launcher and the slot sync worker; 15–17 add the launcher only."""
    autovacuum = point["autovacuum_worker_slots"] + 2 if major >= 18 else point["autovacuum_max_workers"] + 1
    return point["max_connections"] + autovacuum + point["max_worker_processes"] + point["max_wal_senders"]


def slru_blocks(point: dict[str, int], major: int) -> tuple[float, float]:
    """SLRU cache blocks: the commit log (which also keeps LSN groups) and the others together.

    15/16: commit log min(128, max(4, NBuffers / 512)), commit timestamps min(256, max(4, NBuffers / 512))
    (fixed caches are in the constant). 17+: a 0 setting means NBuffers / 512 rounded down to a multiple of
    16, between 16 and 1024 blocks.
    """
    buffers = point["shared_buffers_kb"] * KB // BLOCK
    if major < 17:
        return float(min(128, max(4, buffers // 512))), float(min(256, max(4, buffers // 512)))
    auto = min(1024, max(16, buffers // 512 - (buffers // 512) % 16))
    sizes = {name: point[name] or auto for name in SLRU}
    return float(sizes["transaction_buffers"]), float(sum(sizes.values()) - sizes["transaction_buffers"])


def wal_buffer_pages(point: dict[str, int]) -> int:
    """wal_buffers in 8 kB pages; automatic: NBuffers / 32 between 8 pages and a 16 MB segment (2048)."""
    if point["wal_buffers_kb"] > 0:
        return max(4, point["wal_buffers_kb"] * KB // BLOCK)
    return min(2048, max(8, point["shared_buffers_kb"] * KB // BLOCK // 32))


def aio_handles(point: dict[str, int], major: int) -> int:
    """18: I/O handles, io_max_concurrency per process (auto: NBuffers per process, between 1 and 64)."""
    processes = max_backends(point, major) + AUXILIARY_PROCS_18
    concurrency = point["io_max_concurrency"]
    if concurrency < 0:
        concurrency = min(64, max(1, point["shared_buffers_kb"] * KB // BLOCK // processes))
    return processes * concurrency


FEATURES = {
    15: ("constant", "buffers", "buffer_hash_buckets", "wal_pages", "backends", "lock_slots", "lock_hash_buckets",
         "pred_slots", "pred_hash_buckets", "xact_hash_buckets", "prepared", "query_text", "replication_slots",
         "clog_blocks", "slru_blocks"),
}
FEATURES[16] = FEATURES[15]
FEATURES[17] = FEATURES[15]
FEATURES[18] = FEATURES[15] + ("fastpath_groups", "aio_handles", "aio_iovecs")


# Each term as rules/hugepages.yaml writes it, so that --formula prints the derived fact's formula.
TERMS = {
    "constant": "",
    "buffers": "derived.shared_buffer_pages",
    "buffer_hash_buckets": "next_power_of_2(derived.shared_buffer_pages + 128)",
    "wal_pages": "derived.wal_buffer_pages",
    "backends": "derived.max_backends",
    "lock_slots": "derived.lock_slots",
    "lock_hash_buckets": "next_power_of_2(GREATEST(derived.lock_slots, 256))",
    "pred_slots": "derived.predicate_lock_slots",
    "pred_hash_buckets": "next_power_of_2(GREATEST(derived.predicate_lock_slots, 256))",
    "xact_hash_buckets": "next_power_of_2(GREATEST(10 * derived.transaction_slots, 256))",
    "prepared": "pg.max_prepared_transactions",
    "query_text": "pg.track_activity_query_size * derived.max_backends",
    "replication_slots": "pg.max_replication_slots",
    "clog_blocks": "derived.commit_log_buffers",
    "slru_blocks": "derived.slru_buffers",
    "fastpath_groups": "derived.fastpath_lock_groups * derived.max_backends",
    "aio_handles": "derived.aio_handles",
    "aio_iovecs": "derived.aio_handles * floor(COALESCE(pg.io_max_combine_limit, 131072) / 8192)",
}


# Added to the fitted model as it is; the grid keeps it at its default, 0.
EXACT_TERM = "+ COALESCE(pg.min_dynamic_shared_memory, 0)"


def coefficient(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 1e5 else f"{value:.6g}"


def formula(fitted: dict[int, list[float]]) -> str:
    """The CASE over major versions that rules/hugepages.yaml carries as derived.shared_memory_estimate."""
    lines = ["round(CASE"]
    majors = sorted(fitted)
    for major in majors:
        terms = [f"{coefficient(value)} * {TERMS[name]}" if TERMS[name] else coefficient(value)
                 for name, value in zip(FEATURES[major], fitted[major], strict=True)]
        head = "ELSE" if major == majors[-1] else f"WHEN pg.version {'<=' if major == majors[0] else '='} {major} THEN"
        rows = [" + ".join(terms[start:start + 3]) for start in range(0, len(terms), 3)]
        lines.append(f"  {head} " + "\n      + ".join(rows).replace("+ -", "- "))
    lines.append("END)")
    # Not fitted: PostgreSQL adds min_dynamic_shared_memory to the segment as it is (dsm_estimate_size).
    lines.append(EXACT_TERM)
    return "\n".join(lines)


def features(point: dict[str, int], major: int) -> list[float]:
    """The terms of CalculateShmemSize, as rules/hugepages.yaml writes them (see docs/calibration.md)."""
    buffers = point["shared_buffers_kb"] * KB // BLOCK
    backends = max_backends(point, major)
    transactions = backends + point["max_prepared_transactions"]
    lock_slots = point["max_locks_per_transaction"] * transactions
    pred_slots = point["max_pred_locks_per_transaction"] * transactions
    clog, other_slru = slru_blocks(point, major)
    terms = {
        "constant": 1.0,
        "buffers": float(buffers),
        "buffer_hash_buckets": next_power_of_2(buffers + 128),
        "wal_pages": float(wal_buffer_pages(point)),
        "backends": float(backends),
        "lock_slots": float(lock_slots),
        "lock_hash_buckets": next_power_of_2(lock_slots),
        "pred_slots": float(pred_slots),
        "pred_hash_buckets": next_power_of_2(pred_slots),
        "xact_hash_buckets": next_power_of_2(10 * transactions),
        "prepared": float(point["max_prepared_transactions"]),
        "query_text": float(point["track_activity_query_size"] * backends),
        "replication_slots": float(point["max_replication_slots"]),
        "clog_blocks": clog,
        "slru_blocks": other_slru,
    }
    if major >= 18:
        # Fast-path lock groups of 16 slots per backend: max_locks_per_transaction / 16 (at least 1) rounded
        # up to a power of two, at most 1024.
        groups = min(1024, 2 ** math.ceil(math.log2(max(1, point["max_locks_per_transaction"] // 16))))
        handles = aio_handles(point, major)
        terms["fastpath_groups"] = float(groups * backends)
        terms["aio_handles"] = float(handles)
        terms["aio_iovecs"] = float(handles * point["io_max_combine_limit_kb"] * KB // BLOCK)
    return [terms[name] for name in FEATURES[major]]


Row = tuple[dict[str, int], int, int]  # settings, size read (bytes, rounded up), resolution (bytes)


def fit(rows: list[Row], major: int) -> list[float]:
    """Least squares on relative errors (each row divided by its size), aiming at the middle of each
    reading's rounding interval: a 128 MB host counts as much as a 256 GB one."""
    import numpy

    targets = [size - resolution / 2 for _, size, resolution in rows]
    matrix = numpy.array([[term / target for term in features(point, major)]
                          for (point, _, _), target in zip(rows, targets, strict=True)])
    coefficients, *_ = numpy.linalg.lstsq(matrix, numpy.ones(len(rows)), rcond=None)
    return [float(value) for value in coefficients]


def predict(coefficients: list[float], point: dict[str, int], major: int) -> float:
    return sum(c * t for c, t in zip(coefficients, features(point, major), strict=True))


def error(predicted: float, size: int, resolution: int) -> float:
    """Relative distance from the interval the reading allows ((size − resolution, size]); 0 inside."""
    if predicted > size:
        return (predicted - size) / size
    return max(0.0, size - resolution - predicted) / size


def write_csv(major: int, rows: list[Row]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    with (DATA / f"pg{major}.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*drivers(major), "shared_memory_bytes", "resolution_bytes"])
        for point, size, resolution in rows:
            writer.writerow([point[name] for name in drivers(major)] + [size, resolution])


def read_csv(major: int) -> list[Row]:
    with (DATA / f"pg{major}.csv").open() as handle:
        return [({name: int(row[name]) for name in drivers(major)}, int(row["shared_memory_bytes"]),
                 int(row["resolution_bytes"])) for row in csv.DictReader(handle)]


def calibrate(major: int) -> list[Row]:
    """Measure the grid on two clusters in parallel (postgres -C locks its data directory)."""
    fine = fine_reading(major)
    clusters = [pgservers.fresh_cluster(major), pgservers.fresh_cluster(major)]
    points = grid(major)
    halves = [points[0::2], points[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = list(pool.map(lambda half: [measure(major, clusters[half[0]], point, fine) for point in half[1]],
                                 enumerate(halves)))
    sizes = [0] * len(points)
    sizes[0::2], sizes[1::2] = measured
    resolution = KB if fine else MB
    return [(point, size, resolution) for point, size in zip(points, sizes, strict=True)]


def split(rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """Training rows and held-out rows (every fourth)."""
    return [row for index, row in enumerate(rows) if index % 4], rows[0::4]


def evaluate(major: int, rows: list[Row]) -> tuple[list[float], float]:
    """Fit on the training part; the worst relative error on the held-out part."""
    train, held_out = split(rows)
    coefficients = fit(train, major)
    worst = max(error(predict(coefficients, point, major), size, resolution) for point, size, resolution in held_out)
    return coefficients, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit-only", action="store_true", help="refit from the committed CSV files")
    parser.add_argument("--formula", action="store_true", help="also print the formula for rules/hugepages.yaml")
    options = parser.parse_args()
    fitted: dict[int, list[float]] = {}
    for major in pgservers.SUPPORTED_MAJORS:
        if options.fit_only:
            if not (DATA / f"pg{major}.csv").exists():
                continue
            rows = read_csv(major)
        else:
            if pgservers.bindir(major) is None:
                print(f"PostgreSQL {major}: not installed, skipped")
                continue
            started = time.monotonic()
            rows = calibrate(major)
            write_csv(major, rows)
            print(f"PostgreSQL {major}: {len(rows)} points in {time.monotonic() - started:.1f} s "
                  f"(resolution {rows[0][2] // KB} kB)")
        _, worst = evaluate(major, rows)
        shipped = fitted[major] = fit(rows, major)
        print(f"PostgreSQL {major}: held-out worst error {worst * 100:.3f} %; coefficients on the whole grid:")
        for name, value in zip(FEATURES[major], shipped, strict=True):
            print(f"    {name:20} {value:.6g}")
    if options.formula:
        print(formula(fitted))


if __name__ == "__main__":
    main()
