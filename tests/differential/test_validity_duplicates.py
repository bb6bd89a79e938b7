"""Repeated names, judged by real servers: PostgreSQL skips a line that a later line repeats under exactly the
same name (through includes and postgresql.auto.conf) without checking its value, and applies every other
line. pgvet must refuse exactly when PostgreSQL does, and name a skipped invalid value as an info (PGV405).
"""

from __future__ import annotations

import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest

from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from validity_support.harness import Case, Verdict, judge_all

# name → (files of the tree, lines appended to postgresql.auto.conf, the startup rules pgvet must report:
# none when PostgreSQL starts)
DUPLICATES: dict[str, tuple[dict[str, str], str, list[str]]] = {
    # the three cases of issue #28: the invalid earlier line is skipped
    "work-mem": ({"postgresql.conf": "work_mem = 'bogus'\nwork_mem = '4MB'\n"}, "", []),
    "shared-buffers-unit": ({"postgresql.conf": "shared_buffers = 8gb\nshared_buffers = 8GB\n"}, "", []),
    "password-encryption": ({"postgresql.conf": "password_encryption = on\npassword_encryption = 'scram-sha-256'\n"},
                            "", []),
    "range": ({"postgresql.conf": "max_connections = 0\nmax_connections = 100\n"}, "", []),
    # across files: an include read before the main file's later line, and postgresql.auto.conf
    "in-include": ({"postgresql.conf": "include 'a.conf'\nwork_mem = '4MB'\n", "a.conf": "work_mem = 'bogus'\n"},
                   "", []),
    "in-auto-conf": ({"postgresql.conf": "work_mem = 'bogus'\n"}, "work_mem = '4MB'\n", []),
    # the same name as written, compared case-sensitively: another spelling is another line, applied
    "other-case-later": ({"postgresql.conf": "work_mem = 'bogus'\nWORK_MEM = '4MB'\n"}, "", ["PGV403"]),
    "other-case-first": ({"postgresql.conf": "WORK_MEM = 'bogus'\nwork_mem = '4MB'\n"}, "", ["PGV403"]),
    "other-case-in-auto-conf": ({"postgresql.conf": "work_mem = 'bogus'\n"}, "Work_mem = '4MB'\n", ["PGV403"]),
    "same-case-around-another": ({"postgresql.conf": "work_mem = 'bogus'\nWork_Mem = '1MB'\nwork_mem = '4MB'\n"},
                                 "", []),
    # an old alias is another name too
    "alias-first": ({"postgresql.conf": "sort_mem = 'bogus'\nwork_mem = '4MB'\n"}, "", ["PGV403"]),
    # the last line is applied: its value counts
    "invalid-last": ({"postgresql.conf": "work_mem = '4MB'\nwork_mem = 'bogus'\n"}, "", ["PGV403"]),
    "internal-twice": ({"postgresql.conf": "wal_segment_size = 32MB\nwal_segment_size = 16MB\n"}, "", ["PGV420"]),
    # names are checked on every line, skipped or not
    "unknown-twice": ({"postgresql.conf": "foo_bar = 1\nfoo_bar = 2\n"}, "", ["PGV401", "PGV401"]),
}


@cache
def duplicate_verdicts(major: int) -> dict[str, Verdict]:
    root = Path(tempfile.mkdtemp(prefix=f"pgvet-duplicates-{major}-"))
    try:
        cases = []
        for name, (files, auto_conf, _) in DUPLICATES.items():
            for file, text in files.items():
                (root / name).mkdir(exist_ok=True)
                (root / name / file).write_text(text)
            cases.append(Case(name, root / name, "postgresql.conf", auto_conf))
        verdicts = judge_all(major, cases)
    finally:
        shutil.rmtree(root)
    return {verdict.case: verdict for verdict in verdicts}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_repeated_names_match_postgresql(pg_major: int, name: str) -> None:
    verdict = duplicate_verdicts(pg_major)[name]
    expected = DUPLICATES[name][2]
    assert verdict.started == (not expected), verdict.describe()
    assert verdict.rules() == expected, verdict.describe()
    if name == "alias-first":  # 18 names the parameter (work_mem) where 15–17 name the line's sort_mem
        assert [place for _, *place in verdict.startup] == [["postgresql.conf", 1]], verdict.describe()
    else:
        assert verdict.points_where_postgresql_does(), verdict.describe()


def test_a_skipped_invalid_value_is_named_by_the_duplicate_info(tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").write_text("include 'a.conf'\nshared_buffers = 8GB\n")
    (tmp_path / "a.conf").write_text("shared_buffers = 8gb\n")
    (tmp_path / "PG_VERSION").write_text("17\n")
    findings = lint([tmp_path], LintOptions()).hosts[0].findings
    assert not [finding for finding in findings if "startup" in finding.tags]
    [duplicate] = [finding for finding in findings if finding.rule_id == "PGV405"]
    assert duplicate.severity == "info" and (duplicate.path, duplicate.line) == ("postgresql.conf", 2)
    skipped = "shared_buffers = 8gb at a.conf:1 (invalid value for parameter \"shared_buffers\": \"8gb\")"
    assert duplicate.values["skipped_invalid"] == skipped
    assert duplicate.message.endswith(f"so it starts although one is invalid: {skipped}")


def test_a_duplicate_without_invalid_lines_says_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "postgresql.conf").write_text("work_mem = '1MB'\nwork_mem = '4MB'\n")
    [duplicate] = lint([tmp_path], LintOptions(select=["PGV405"])).hosts[0].findings
    assert duplicate.message.endswith("The earlier lines have no effect.")
    assert duplicate.values["skipped_invalid"] is None
