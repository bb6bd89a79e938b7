"""The target configuration on real PostgreSQL servers: once a host is fixed, its configuration starts, and
huge_pages = on comes with a pool that holds what PostgreSQL itself counts (shared_memory_size_in_huge_pages).

Started with the validity harness (memory, huge pages and the machine's own settings given on the command line:
tests/validity_support/harness.py); the huge page count asked of `postgres -C` with the host's own settings.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import calibrate_shmem
import kernelsim
import pgservers
from conftest import FIXTURES
from hostgen import Host, hosts
from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.fix.writer import fix_host
from pgvet.pgparams import load_param_table
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host
from validity_support.harness import Case, Judge

pytestmark = pytest.mark.postgres

WITH_POSTGRESQL_CONF = sorted(path.parent for path in FIXTURES.rglob("postgresql.conf"))


def _shared_memory_settings(host: Path) -> dict[str, str]:
    """The settings of the host's files that size PostgreSQL's shared memory, as written."""
    pack = load_pack()
    inputs = pack.derived_by_name["shared_memory_estimate"].inputs
    facts = load_host(host).facts
    param_table = load_param_table(int(facts["pg.catalog_version"].value))
    wanted = {name.removeprefix("pg.") for name in inputs if name.startswith("pg.")}
    found: dict[str, str] = {}
    for name in sorted(wanted):
        param = param_table.get(name)
        fact = facts.get(f"pg.{name}")
        if param is None or param.context == "internal":
            continue
        if fact is None or fact.source.path.startswith("<"):
            continue
        raw = fact.raw if fact.raw is not None else str(fact.value)
        found[name] = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == "'" else raw
    if not calibrate_shmem.has_pg_stat_statements(int(facts["pg.version"].value)):
        found.pop("shared_preload_libraries", None)  # this build lacks it: PostgreSQL then counts less, not more
    return found


def _ask(major: int, data: Path, parameter: str, settings_given: dict[str, str]) -> int:
    arguments = ["-C", parameter, "-D", str(data)]
    for name, value in settings_given.items():
        arguments += ["-c", f"{name}={value}"]
    result = pgservers.run(major, "postgres", arguments, timeout=120)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip())


def _pages_postgresql_counts(major: int, data: Path, settings_given: dict[str, str], page_size: int) -> int:
    """shared_memory_size_in_huge_pages for pages of ``page_size`` bytes (the host's, not this machine's); from
    shared_memory_size, read in MB, where the build refuses huge_page_size (an upper bound: size / page + 1)."""
    if calibrate_shmem.accepts_huge_page_size(major, data):
        return _ask(major, data, "shared_memory_size_in_huge_pages",
                    {**settings_given, "huge_page_size": f"{page_size // 1024}kB"})
    megabytes = _ask(major, data, "shared_memory_size", settings_given)
    return megabytes * 1024 * 1024 // page_size + 1


def _case(host: Path) -> Case:
    auto_conf = (host / "postgresql.auto.conf").read_text() if (host / "postgresql.auto.conf").is_file() else ""
    return Case(host.name, host, "postgresql.conf", auto_conf)


def check_target_starts(host: Path) -> None:
    facts = load_host(host).facts
    major = facts["pg.version"].value if "pg.version" in facts else None
    if not isinstance(major, int) or pgservers.bindir(major) is None:
        pytest.skip(f"PostgreSQL {major} is not installed")
    judge = Judge(major, 9)
    try:
        before = judge.judge(_case(host))
        consolidated, _ = fix_host(host, LintOptions(), write_files=True)
        kernelsim.apply_and_reboot(host)
        after = judge.judge(_case(host))
    finally:
        judge.close()
    # a host that started still starts; one that did not (a typo the fix leaves by hand) fails on no new line
    assert after.started or not before.started, after.describe()
    assert after.named <= before.named and after.invalid <= before.invalid, after.describe()
    fixed = load_host(host).facts
    # where the fix reserves the pool or turns huge pages on, PostgreSQL fits in the pool
    if ({"huge_pages", "vm.nr_hugepages"} & {*consolidated.sysctl, *consolidated.postgresql}
            and fixed["pg.huge_pages"].value == "on"):
        derived = derived_values(load_pack(), load_host(host), {
            "derived.hugepage_size", "derived.default_hugepage_size", "derived.hugepages_available"})
        page_size = int(derived["derived.hugepage_size"].value)
        data = pgservers.fresh_cluster(major)
        try:
            pages = _pages_postgresql_counts(major, data, _shared_memory_settings(host), page_size)
        finally:
            shutil.rmtree(data.parent, ignore_errors=True)
        instances = fixed["host.pg_instances"].value if "host.pg_instances" in fixed else 1
        if page_size == derived["derived.default_hugepage_size"].value:
            # the persistent pool and the surplus a dynamic pool lets PostgreSQL take (vm.nr_overcommit_hugepages)
            pool = sum(int(fact.value) for key in ("vm.nr_hugepages", "vm.nr_overcommit_hugepages")
                       if (fact := fixed.get(f"sysctl_conf.{key}") or fixed.get(f"sysctl.{key}")) is not None)
        else:  # huge_page_size of another size than the default: its pool is no sysctl, meminfo's Hugetlb shows it
            pool = int(derived["derived.hugepages_available"].value or 0)
        assert pool >= pages * instances, f"huge_pages = on with {pool} pages where PostgreSQL counts {pages}"


@pytest.mark.parametrize("bundled", WITH_POSTGRESQL_CONF, ids=lambda path: path.name)
def test_the_target_of_every_bundled_host_starts(bundled: Path, tmp_path: Path) -> None:
    host = tmp_path / bundled.name
    shutil.copytree(bundled, host)
    check_target_starts(host)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hosts())
def test_the_target_of_any_host_starts(generated: Host) -> None:
    with tempfile.TemporaryDirectory() as directory:
        host = Path(directory) / "host"
        host.mkdir()
        for name, text in generated.files.items():
            (host / name).parent.mkdir(exist_ok=True)
            (host / name).write_text(text)
        try:
            check_target_starts(host)
        except AssertionError as error:
            raise AssertionError(f"{error}\nhost: {generated.description}") from None
