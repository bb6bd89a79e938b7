"""The ignore file for captured inputs: host glob, rule, subject, reason, expiry; unused and expired reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from pgvet.errors import InputError
from pgvet.lint import LintOptions, lint


def test_ignore_file_suppresses_and_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_TODAY", "2026-11-22")
    host = tmp_path / "vm"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / ".pgvet-ignore.yaml").write_text(
        "- {host: 'web-*', rule: swappiness-too-high, reason: the hypervisor image pins it, expires: 2027-01-31}\n"
        "- {host: '*', rule: PGV139, reason: THP handled by the next image, expires: 2026-01-01}\n"
        "- {host: 'db-*', rule: PGV101, reason: other hosts only}\n"
    )
    result = lint([host], LintOptions())
    by_rule = {finding.rule_id: finding for finding in result.hosts[0].findings}
    assert by_rule["PGV130"].suppressed == "the hypervisor image pins it"
    assert by_rule["PGV139"].suppressed is None  # expired
    assert by_rule["PGV101"].suppressed is None  # another host
    assert any(".pgvet-ignore.yaml:2: expired ignore entry (PGV139, 2026-01-01)" in n for n in result.notices)
    assert any(".pgvet-ignore.yaml:3: unused ignore entry (PGV101)" in n for n in result.notices)


def test_ignore_entry_needs_a_reason(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.yaml"
    ignore.write_text("- {host: '*', rule: PGV130}\n")
    with pytest.raises(InputError, match="needs a rule and a reason"):
        lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))
