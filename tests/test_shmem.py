"""PostgreSQL's shared memory: the calibrated derived formula against real servers and the catalogue."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import calibrate_shmem
import pgservers
from conftest import FIXTURES
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.lint import LintOptions, lint
from pgvet.snapshot import load_host

MB = 1024 * 1024
# Held-out error allowed per version: the target is 1 %; the model reaches 0.4 % (docs/calibration.md).
TOLERANCE = {15: 0.005, 16: 0.005, 17: 0.005, 18: 0.005}


def estimate(tmp_path: Path, major: int, settings: dict[str, str]) -> tuple[float, int]:
    """derived.shared_memory_size (bytes) and derived.hugepages_needed, evaluated by the engine."""
    host = tmp_path / f"host-{major}-{abs(hash(tuple(settings.items())))}"
    host.mkdir()
    (host / "postgresql.conf").write_text("".join(f"{name} = '{value}'\n" for name, value in settings.items()))
    (host / "host.yaml").write_text(f"pg_version: {major}\n")
    values = derived_values(load_pack(), load_host(host))
    return float(values["derived.shared_memory_size"].value), int(values["derived.hugepages_needed"].value)


def real_size(major: int, data: Path, settings: dict[str, str], parameter: str = "shared_memory_size") -> int:
    args = ["-D", str(data), "-C", parameter]
    for name, value in settings.items():
        args += ["-c", f"{name}={value}"]
    done = pgservers.run(major, "postgres", args, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


@pytest.mark.parametrize("major", [15, 16, 17, 18])
def test_committed_grid_held_out_error(major: int) -> None:
    if not (calibrate_shmem.DATA / f"pg{major}.csv").exists():
        pytest.skip(f"no calibration data for {major}")
    _, worst = calibrate_shmem.evaluate(major, calibrate_shmem.read_csv(major))
    assert worst <= TOLERANCE[major]


@pytest.mark.parametrize("major", [15, 16, 17, 18])
def test_rules_carry_the_fitted_model(tmp_path: Path, major: int) -> None:
    """The formula in rules/hugepages.yaml gives what the calibration's fit predicts, on every kind of point."""
    if not (calibrate_shmem.DATA / f"pg{major}.csv").exists():
        pytest.skip(f"no calibration data for {major}")
    rows = calibrate_shmem.read_csv(major)
    coefficients = calibrate_shmem.fit(rows, major)
    for point, size, resolution in rows[::20]:
        args = calibrate_shmem.settings(point)
        settings = dict(arg.split("=", 1) for arg in args[1::2])
        engine, _ = estimate(tmp_path, major, settings)
        assert engine == pytest.approx(calibrate_shmem.predict(coefficients, point, major), rel=1e-5), point
        assert calibrate_shmem.error(engine, size, resolution) < TOLERANCE[major]


CATALOGUE = [  # (shared_buffers, max_connections) → the real shared_memory_size in MB per version (15, 16, 17, 18)
    ("8GB", "100", (8399, 8399, 8436, 8443)),
    ("4GB", "200", (4218, 4218, 4251, 4260)),
]


@pytest.mark.parametrize("shared_buffers, max_connections, expected", CATALOGUE)
def test_catalogue_figures(tmp_path: Path, shared_buffers: str, max_connections: str,
                           expected: tuple[int, int, int, int]) -> None:
    for major, real_mb in zip((15, 16, 17, 18), expected, strict=True):
        size, _ = estimate(tmp_path, major, {"shared_buffers": shared_buffers, "max_connections": max_connections})
        assert abs(size / MB - real_mb) / real_mb < 0.002, (major, size / MB, real_mb)


def test_percona_sized_host_is_about_144_gb(tmp_path: Path) -> None:
    size, _ = estimate(tmp_path, 16, {"shared_buffers": "138GB", "max_connections": "1000"})
    assert abs(size / MB - 144300) / 144300 < 0.005


def test_random_settings_against_the_real_server(pg_major: int, tmp_path: Path) -> None:
    rng = random.Random(pg_major)
    data = pgservers.fresh_cluster(pg_major)
    for _ in range(6):
        settings = {
            "shared_buffers": f"{rng.choice([192, 700, 3000, 20000, 90000])}MB",
            "max_connections": str(rng.choice([30, 150, 800, 3000])),
            "max_worker_processes": str(rng.choice([8, 24])),
            "max_locks_per_transaction": str(rng.choice([64, 200])),
            "max_prepared_transactions": str(rng.choice([0, 50])),
        }
        real = real_size(pg_major, data, settings) * MB
        size, needed = estimate(tmp_path, pg_major, settings)
        assert abs(size - real) / real <= TOLERANCE[pg_major], (settings, size / MB, real / MB)
        real_pages = real_size(pg_major, data, settings, "shared_memory_size_in_huge_pages")
        if real_pages > 0:
            assert abs(needed - real_pages) / real_pages <= TOLERANCE[pg_major]


@pytest.mark.parametrize("min_dynamic_shared_memory", ["256MB", "1GB", "4GB"])
def test_min_dynamic_shared_memory_against_the_real_server(pg_major: int, tmp_path: Path,
                                                           min_dynamic_shared_memory: str) -> None:
    """PostgreSQL reserves min_dynamic_shared_memory in its main segment (dsm_estimate_size)."""
    data = pgservers.fresh_cluster(pg_major)
    settings = {"shared_buffers": "20GB", "min_dynamic_shared_memory": min_dynamic_shared_memory}
    real = real_size(pg_major, data, settings) * MB
    size, needed = estimate(tmp_path, pg_major, settings)
    without, _ = estimate(tmp_path, pg_major, {"shared_buffers": "20GB"})
    assert size > without
    assert abs(size - real) / real <= TOLERANCE[pg_major], (settings, size / MB, real / MB)
    real_pages = real_size(pg_major, data, settings, "shared_memory_size_in_huge_pages")
    if real_pages > 0:
        assert abs(needed - real_pages) / real_pages <= TOLERANCE[pg_major], (needed, real_pages)


def test_big_server_fixture_needs_what_postgresql_17_says(tmp_path: Path) -> None:
    pgservers_major = 17
    if pgservers.bindir(pgservers_major) is None:
        pytest.skip("PostgreSQL 17 is not installed")
    settings = {"shared_buffers": "138GB", "max_connections": "1000", "max_worker_processes": "8",
                "max_wal_senders": "10"}
    real_pages = real_size(17, pgservers.fresh_cluster(17), settings, "shared_memory_size_in_huge_pages")
    result = lint([FIXTURES / "big-server"], LintOptions(select=["PGV110"]))
    [finding] = result.hosts[0].findings
    assert finding.severity == "error" and "startup" in finding.tags
    assert finding.values["available"] == 52000
    needed = finding.values["needed"]
    assert isinstance(needed, int)
    assert abs(needed - real_pages) / real_pages < 0.005
    # the pool it needs would take CommitLimit below what the host already commits: the target keeps it, by hand
    assert "vm.nr_hugepages" not in finding.fix.sysctl
    assert "CommitLimit would be" in (finding.fix.text or "")


def test_page_tables_percona_example() -> None:
    pack = load_pack()
    [example] = [ex for ex in pack.rule("PGV120").examples if ex.expect == "fire"]  # type: ignore[union-attr]
    # 138 GB / 512 × 80 processes = 21.6 GB, the catalogue's estimate for the Percona host.
    assert example.values == {"page_tables_estimate": 138 * 1024**3 // 512 * 80}
    assert round(138 * 1024**3 / 512 * 80 / 1024**3, 1) == 21.6


def test_estimate_is_whole_bytes(tmp_path: Path) -> None:
    """Sizes are integer bytes (docs/facts.md), in derived facts and in the values findings carry."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "postgresql.conf").write_text("shared_buffers = '16GB'\nhuge_pages = off\n")
    (host / "host.yaml").write_text("pg_version: 15\nram: 64GB\n")
    values = derived_values(load_pack(), load_host(host))
    for name in ("shared_memory_estimate", "shared_memory_size", "shared_memory_outside_huge_pages", "pg_memory_peak"):
        assert type(values[f"derived.{name}"].value) is int, name
