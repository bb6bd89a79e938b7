"""Values whose acceptance depends on build options (issue #28, part 2), against real builds.

pgvet judges them as the mainstream builds (PGDG, Debian, Red Hat) accept them: never a startup error, an
info naming the option those builds have (PGV421), a warning for one they lack (PGV422). The servers here
differ: Debian's 15 has lz4 and zstd, the 16 and 18 wheels have neither (nor SSL), 18's has no liburing.
Each build-dependent value of each installed version is started for real: where the build accepts it the
server starts; where it refuses it, PostgreSQL names the parameter; and in both cases pgvet says the same
thing, with the option PostgreSQL's refusal comes from.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require_postgres
from pgvet.pgparams import BUILD_OPTIONS, load_param_table
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from validity_support.harness import OVERRIDES, Case, Judge, accepts, build_dependent_values


@pytest.fixture
def judge_keeping_build_lines(pg_major: int) -> Iterator[Judge]:
    """A judge that keeps the lines of values its build lacks (the differential tests take them out), and
    does not set ssl off on the command line (a build without SSL would then not check the file's ssl = on)."""
    worker = Judge(pg_major, 6, {name: value for name, value in OVERRIDES.items() if name != "ssl"})
    worker.lacking = frozenset(feature for feature in worker.lacking if feature in ("timezone", "localtime"))
    yield worker
    worker.close()


def _findings(host: Path) -> list[tuple[str, str, dict[str, object]]]:
    result = lint([host], LintOptions(select=["validity"]))
    assert not result.errors
    return [(finding.rule_id, finding.severity, dict(finding.values)) for finding in result.hosts[0].findings]


def test_every_build_dependent_value_is_judged_as_mainstream_builds_do(
        judge_keeping_build_lines: Judge, pg_major: int, tmp_path: Path) -> None:
    values = build_dependent_values(pg_major)
    assert values, f"the parameter table of {pg_major} records no build-dependent value"
    for number, (name, value, option) in enumerate(values):
        tree = tmp_path / f"case-{number}"
        tree.mkdir()
        (tree / "postgresql.conf").write_text(f"{name} = '{value}'\n")
        verdict = judge_keeping_build_lines.judge(Case(f"{name}={value}", tree, "postgresql.conf"))
        (tree / "PG_VERSION").write_text(f"{pg_major}\n")
        built_with = accepts(pg_major, name, value)
        # with SSL, ssl = on is accepted, then the server looks for its certificate, which this test has not
        started = verdict.started or "could not load server certificate file" in verdict.log
        assert started == built_with, verdict.describe()
        if not built_with:  # refused by the build: PostgreSQL names the parameter
            assert name.lower() in verdict.invalid or "not supported by this build" in verdict.log, verdict.describe()
        assert verdict.startup == [], verdict.describe()  # never a startup error
        found = [(rule, severity, found_values) for rule, severity, found_values in _findings(tree)
                 if rule in ("PGV421", "PGV422")]
        if option == "ssl":  # every distribution's build has SSL: not worth an info on every host
            assert found == []
            continue
        expected = "PGV421" if BUILD_OPTIONS[option].mainstream else "PGV422"
        assert [(rule, found_values["option"]) for rule, _, found_values in found] == [(expected, option)], found
        assert found[0][1] == ("info" if expected == "PGV421" else "warning")


def test_lz4_and_zstd_start_debian_15_are_refused_by_a_wheel_and_pgvet_accepts_them_on_both(tmp_path: Path) -> None:
    """The proof the issue asks for: a build that has lz4 and zstd (Debian's 15) and one that has not (the
    16 wheel); pgvet judges the same line the same way on both, as the mainstream builds accept it."""
    require_postgres(15)
    require_postgres(16)
    for compression in ("lz4", "zstd"):
        assert accepts(15, "wal_compression", compression)
        assert not accepts(16, "wal_compression", compression)
    assert accepts(15, "default_toast_compression", "lz4") and not accepts(16, "default_toast_compression", "lz4")
    for major in (15, 16):
        host = tmp_path / str(major)
        host.mkdir()
        (host / "postgresql.conf").write_text("wal_compression = zstd\ndefault_toast_compression = 'lz4'\n")
        (host / "PG_VERSION").write_text(f"{major}\n")
        found = _findings(host)
        assert [(rule, values["option"]) for rule, _, values in found if rule.startswith("PGV42")] == [
            ("PGV421", "zstd"), ("PGV421", "lz4")]
        assert not [rule for rule, severity, _ in found if severity == "error"]


@pytest.mark.parametrize("major", [16, 17, 18])
def test_param_tables_list_build_dependent_values_whatever_build_made_them(major: int) -> None:
    """16's and 18's parameter tables come from builds without lz4 and zstd, yet list them where PostgreSQL's own
    builds with the options do (after pglz), as 15's and 17's (built with them) do."""
    wal_compression = load_param_table(major).params["wal_compression"]
    assert wal_compression.enumvals == load_param_table(15).params["wal_compression"].enumvals == (
        "pglz", "lz4", "zstd", "on", "off")
    assert dict(wal_compression.build_options) == {"lz4": "lz4", "zstd": "zstd"}
    assert dict(load_param_table(major).params["ssl"].build_options) == {"on": "ssl"}
    assert load_param_table(major).params["ssl"].build_option(True) == "ssl"
    assert load_param_table(major).params["ssl"].build_option(False) is None
    if major == 18:
        assert load_param_table(18).params["io_method"].enumvals == ("sync", "worker", "io_uring")
