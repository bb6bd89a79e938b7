"""Calibrate pgvet's estimate of PostgreSQL's shared memory against real servers.

For each installed major version, ``postgres -C shared_memory_size`` (PostgreSQL computes its whole
shared memory without starting, and reports it in MB, rounded up) is run over a grid of the settings that
drive it.
A model with PostgreSQL's own structure is fitted by least squares on three quarters of the grid and
checked on the rest. Writes scripts/data/shmem/pgNN.csv and prints the coefficients that
rules/hugepages.yaml carries.

    python scripts/calibrate_shmem.py            # every installed major
    python scripts/calibrate_shmem.py --fit-only # refit from the committed CSVs
"""

from __future__ import annotations

import argparse
import csv
import itertools
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgservers

DATA = Path(__file__).resolve().parent / "data" / "shmem"
MB = 1024 * 1024
DRIVERS = ("shared_buffers_mb", "max_connections", "autovacuum_max_workers", "max_worker_processes",
           "max_wal_senders", "max_prepared_transactions", "max_locks_per_transaction")


def grid(seed: int = 15) -> list[dict[str, int]]:
    """Shared_buffers 128 MB … 256 GB, max_connections 20 … 5000, and the other drivers around defaults."""
    rng = random.Random(seed)
    buffers = [128, 256, 512, 1024, 2048, 3000, 4096, 8192, 12000, 16384, 32768, 65536, 141312, 262144]
    connections = [20, 100, 200, 500, 1000, 2000, 5000]
    points = [dict(zip(DRIVERS, (sb, mc, 3, 8, 10, 0, 64), strict=True))
              for sb, mc in itertools.product(buffers, connections)]
    for _ in range(60):
        points.append({
            "shared_buffers_mb": rng.choice(buffers) + rng.randrange(0, 100),
            "max_connections": rng.choice(connections) + rng.randrange(0, 50),
            "autovacuum_max_workers": rng.choice([1, 3, 5, 10]),
            "max_worker_processes": rng.choice([8, 16, 64]),
            "max_wal_senders": rng.choice([0, 10, 20]),
            "max_prepared_transactions": rng.choice([0, 0, 100, 500]),
            "max_locks_per_transaction": rng.choice([64, 64, 128, 256]),
        })
    return points


def measure(major: int, data: Path, point: dict[str, int]) -> int:
    """PostgreSQL's own shared memory size in bytes: to 2 MB through huge pages of 2 MB where the build
    allows choosing huge_page_size, else ``shared_memory_size`` (rounded up to 1 MB)."""
    settings = ["-c", f"shared_buffers={point['shared_buffers_mb']}MB"]
    for name in DRIVERS[1:]:
        settings += ["-c", f"{name}={point[name]}"]
    done = pgservers.run(major, "postgres", ["-D", str(data), "-C", "shared_memory_size", *settings], timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"postgres -C failed for {point}: {done.stderr.strip()}")
    return int(done.stdout.strip()) * MB


def max_backends(point: dict[str, int], major: int) -> int:
    """MaxBackends: 18 counts autovacuum_worker_slots (16 by default) rather than autovacuum_max_workers."""
    autovacuum = 16 if major >= 18 else point["autovacuum_max_workers"]
    return point["max_connections"] + autovacuum + 1 + point["max_worker_processes"] + point["max_wal_senders"]


def features(point: dict[str, int], major: int) -> list[float]:
    """The terms of PostgreSQL's shared memory size, as rules/hugepages.yaml writes them.

    buffers: shared_buffers in bytes (pages plus descriptors, I/O locks, mapping hash, checkpoint sort);
    wal_auto: the automatic wal_buffers, shared_buffers/32 capped at 16 MB; backends: PGPROC, the
    per-backend arrays and predicate locks; lock_slots: the lock and proclock tables; prepared: 2PC state;
    17+: SLRU caches sized from shared_buffers (shared_buffers/512, capped at 8 MB each); 18: the I/O
    handles of asynchronous I/O, min(shared_buffers pages, 64 per backend).
    """
    shared_buffers = point["shared_buffers_mb"] * MB
    backends = max_backends(point, major)
    lock_slots = point["max_locks_per_transaction"] * (backends + point["max_prepared_transactions"])
    wal_auto = min(shared_buffers / 32, 16 * MB)
    terms = [1.0, float(shared_buffers), wal_auto, float(backends), float(lock_slots),
             float(point["max_prepared_transactions"])]
    if major >= 17:
        terms.append(min(shared_buffers / 512, 8 * MB))
    if major >= 18:
        terms.append(min(shared_buffers / 8192, 64.0 * backends))
    return terms


def fit(rows: list[tuple[list[float], float]]) -> list[float]:
    """Least squares on relative errors (each row divided by its size): small hosts count as much as big ones."""
    import numpy

    matrix = numpy.array([[term / row[1] for term in row[0]] for row in rows])
    target = numpy.ones(len(rows))
    coefficients, *_ = numpy.linalg.lstsq(matrix, target, rcond=None)
    return [float(value) for value in coefficients]


def predict(coefficients: list[float], terms: list[float]) -> float:
    return sum(c * t for c, t in zip(coefficients, terms, strict=True))


def write_csv(major: int, rows: list[tuple[dict[str, int], int]]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    with (DATA / f"pg{major}.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*DRIVERS, "shared_memory_bytes"])
        for point, size in rows:
            writer.writerow([point[name] for name in DRIVERS] + [size])


def read_csv(major: int) -> list[tuple[dict[str, int], int]]:
    with (DATA / f"pg{major}.csv").open() as handle:
        reader = csv.DictReader(handle)
        return [({name: int(row[name]) for name in DRIVERS}, int(row["shared_memory_bytes"])) for row in reader]


def calibrate(major: int) -> list[tuple[dict[str, int], int]]:
    clusters = [pgservers.fresh_cluster(major), pgservers.fresh_cluster(major)]  # postgres -C locks its data dir
    points = grid()
    halves = [points[0::2], points[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = list(pool.map(lambda half: [measure(major, clusters[half[0]], point) for point in half[1]],
                                 enumerate(halves)))
    sizes = [0] * len(points)
    sizes[0::2], sizes[1::2] = measured
    return list(zip(points, sizes, strict=True))


def evaluate(major: int, rows: list[tuple[dict[str, int], int]]) -> tuple[list[float], float]:
    """Fit on three quarters (every fourth point held out); the worst relative error on the held-out part."""
    train = [(features(point, major), float(size)) for index, (point, size) in enumerate(rows) if index % 4]
    held_out = [(point, size) for index, (point, size) in enumerate(rows) if index % 4 == 0]
    coefficients = fit(train)
    worst = max(abs(predict(coefficients, features(point, major)) - size) / size for point, size in held_out)
    return coefficients, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit-only", action="store_true", help="refit from the committed CSV files")
    options = parser.parse_args()
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
            print(f"PostgreSQL {major}: {len(rows)} points in {time.monotonic() - started:.1f} s")
        coefficients, worst = evaluate(major, rows)
        print(f"PostgreSQL {major}: held-out worst error {worst * 100:.3f} %; coefficients "
              + ", ".join(f"{value:.6g}" for value in coefficients))


if __name__ == "__main__":
    main()
