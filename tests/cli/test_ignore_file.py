"""The ignore file for captured inputs: host glob, rule, subject, reason, expiry; unused and expired reported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from pgvet.errors import InputError
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions


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


def test_an_ignore_entry_naming_no_rule_says_so(tmp_path: Path) -> None:
    # was "unused ignore entry (swapiness-too-high)": the typo, not the finding, was what to fix
    host = tmp_path / "vm"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / ".pgvet-ignore.yaml").write_text("- {host: '*', rule: swapiness-too-high, reason: pinned by the image}\n")
    result = lint([host], LintOptions())
    assert any(".pgvet-ignore.yaml:1: ignore entry names no rule: swapiness-too-high (did you mean "
               "swappiness-too-high?)" in notice for notice in result.notices), result.notices
    shared = tmp_path / "ignore.yaml"
    shared.write_text("- {host: '*', rule: PGV13, reason: a prefix is no rule here}\n")
    result = lint([host], LintOptions(ignore_file=shared))
    assert any("ignore.yaml:1: ignore entry names no rule: PGV13 (see 'pgvet rules')" in notice
               for notice in result.notices), result.notices


def test_ignore_entry_needs_a_reason(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.yaml"
    ignore.write_text("- {host: '*', rule: PGV130}\n")
    with pytest.raises(InputError, match="needs a rule and a reason"):
        lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))


def _alias_bomb() -> str:
    """Entries whose subjects alias lists of lists: 10**9 items once written out (str() took minutes and GBs)."""
    lines = ["- {rule: r, reason: r, subject: &l0 [x, x, x, x, x, x, x, x, x, x]}"]
    lines += [f"- {{rule: r, reason: r, subject: &l{level} [{', '.join([f'*l{level - 1}'] * 10)}]}}"
              for level in range(1, 9)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("content", "says"), [
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "ignore.yaml:1: invalid YAML: brackets nested more than 100 deep"),
    (_alias_bomb().encode(), "ignore.yaml:4: invalid YAML: aliases expand to more than 10000 values"),
    (b"- {rule: r, reason: r, subject: &l [x, y]}\n", "ignore.yaml:1: 'subject' must be a single value"),
    (b"- {host: '*', rule: PGV130, reason: ok}\n- [\n", "ignore.yaml:3: invalid YAML"),
    (b"- {host: '*', rule: PGV130, reason: \xff}\n", "ignore.yaml:1: ignore file is not valid UTF-8"),
], ids=["deep-brackets", "alias-bomb", "a-list", "unclosed-list", "invalid-utf8"])
def test_hostile_ignore_file(tmp_path: Path, content: bytes, says: str) -> None:
    # were a RecursionError, minutes and gigabytes, a message without its line
    ignore = tmp_path / "ignore.yaml"
    ignore.write_bytes(content)
    with pytest.raises(InputError) as raised:
        lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))
    assert says in str(raised.value)


def test_huge_ignore_file_is_not_read(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.yaml"
    with ignore.open("wb") as handle:
        handle.truncate(1024**3)  # sparse: it was read whole (3 GB of memory, 7 s)
    with pytest.raises(InputError, match="more than pgvet reads"):
        lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))


def test_host_ignore_file_linked_out_of_the_host_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("- {host: '*', rule: PGV130, reason: read from outside the host}\n")
    host = tmp_path / "vm"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / ".pgvet-ignore.yaml").symlink_to(outside)
    result = lint([host], LintOptions())
    by_rule = {finding.rule_id: finding for finding in result.hosts[0].findings}
    assert by_rule["PGV130"].suppressed is None
    assert any(".pgvet-ignore.yaml: refused, it resolves outside the host directory" in n for n in result.notices)
    (host / ".pgvet-ignore.yaml").unlink()
    os.mkfifo(host / ".pgvet-ignore.yaml")  # nor a pipe: silently skipped before
    result = lint([host], LintOptions())
    assert any(".pgvet-ignore.yaml: refused, it is not a regular file" in n for n in result.notices)


@pytest.mark.parametrize("expires", ["tomorrow", "27-01-2027", "'2026-9-1'", "2027-02-30", "[2027, 1, 5]", "2027"])
def test_an_expiry_that_is_no_date_is_an_error(tmp_path: Path, expires: str) -> None:
    # each was taken as text and compared with today's date as text: "tomorrow" and "27-01-2027" never expired,
    # "2026-9-1" expired in 2027
    ignore = tmp_path / "ignore.yaml"
    ignore.write_text(f"- {{host: '*', rule: PGV130, reason: pinned by the image, expires: {expires}}}\n")
    with pytest.raises(InputError, match=r"ignore.yaml:1: .*(expires|month|day)"):
        lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))


def test_an_expiry_may_be_quoted_or_a_timestamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_TODAY", "2026-11-22")
    ignore = tmp_path / "ignore.yaml"
    ignore.write_text("- {host: '*', rule: PGV130, reason: pinned, expires: '2026-11-21'}\n"
                      "- {host: '*', rule: PGV130, reason: pinned, expires: 2026-11-23T08:00:00}\n")
    result = lint([FIXTURES / "small-vm"], LintOptions(ignore_file=ignore))
    assert [finding.suppressed for finding in result.hosts[0].findings if finding.rule_id == "PGV130"] == ["pinned"]
    assert any("ignore.yaml:1: expired ignore entry (PGV130, 2026-11-21)" in notice for notice in result.notices)
