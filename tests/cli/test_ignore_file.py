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
    # the third names another host: not checked, rather than unused
    assert any(".pgvet-ignore.yaml: 1 ignore entry not checked: its host or rule is not in this run (line 3)" in n
               for n in result.notices), result.notices
    assert not any("unused" in notice for notice in result.notices)


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
    assert not any(str(outside) in notice for notice in result.notices)  # where it leads is the linting machine's
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


def _fleet(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two hosts, alpha and bravo, and an ignore file shared by them (a configuration repository's)."""
    hosts = []
    for name in ("alpha", "bravo"):
        host = tmp_path / "hosts" / name
        shutil.copytree(FIXTURES / "small-vm", host)
        (host / "host.yaml").write_text((host / "host.yaml").read_text().replace("name: web-db-01", f"name: {name}"))
        hosts.append(host)
    shared = tmp_path / "pgvet-ignore.yaml"
    shared.write_text(
        "- {host: alpha, rule: PGV130, reason: the image pins swappiness}\n"
        "- {host: bravo, rule: PGV139, reason: THP handled by the next image}\n"
        "- {host: '*', rule: PGV101, subject: nothing, reason: fires on neither}\n"
        "- {host: 'gone-*', rule: PGV101, reason: a decommissioned host}\n"
        "- {host: '*', rule: PGV139, reason: alpha uses it; bravo the second entry}\n"
    )
    return hosts[0], hosts[1], shared


def test_a_shared_file_calls_unused_only_what_a_host_of_the_run_could_have_used(tmp_path: Path) -> None:
    # linting alpha alone called bravo's entries unused, and the other way round: a fleet's shared file then
    # always listed other hosts' entries as stale
    alpha, bravo, shared = _fleet(tmp_path)
    both = lint([alpha, bravo], LintOptions(ignore_file=shared))
    assert [notice.removeprefix(f"{shared}") for notice in both.notices] == [
        ":3: unused ignore entry (PGV101)",
        ": 1 ignore entry not checked: its host or rule is not in this run (line 4)"]
    only_alpha = lint([alpha], LintOptions(ignore_file=shared))
    assert {finding.rule_id for finding in only_alpha.hosts[0].findings if finding.suppressed} == {"PGV130", "PGV139"}
    assert [notice.removeprefix(f"{shared}") for notice in only_alpha.notices] == [
        ":3: unused ignore entry (PGV101)",
        ": 2 ignore entries not checked: their hosts or rules are not in this run (lines 2, 4)"]
    only_bravo = lint([bravo], LintOptions(ignore_file=shared))
    assert [notice.removeprefix(f"{shared}") for notice in only_bravo.notices] == [
        ":3: unused ignore entry (PGV101)",
        ":5: unused ignore entry (PGV139)",  # bravo, the one host it names here, was silenced by the second
        ": 2 ignore entries not checked: their hosts or rules are not in this run (lines 1, 4)"]
    selected = lint([alpha, bravo], LintOptions(ignore_file=shared, select=["PGV130"]))
    assert selected.notices == [f"{shared}: 4 ignore entries not checked: their hosts or rules are not in this run "
                                "(lines 2, 3, 4, 5)"]  # PGV101 and PGV139 were not evaluated


def test_a_directory_of_several_hosts_judges_its_own_file_once_for_them_all(tmp_path: Path) -> None:
    # each host of a directory's documents was judged alone against the directory's .pgvet-ignore.yaml: the
    # other's entries were "unused", once per host
    directory = tmp_path / "k8s"
    directory.mkdir()
    cluster = (FIXTURES / "documents-repo" / "cnpg" / "cluster.yaml").read_text()
    for name in ("pg-east", "pg-west"):
        (directory / f"{name}.yaml").write_text(cluster.replace("name: cluster-example-full", f"name: {name}"))
    (directory / ".pgvet-ignore.yaml").write_text(
        "- {host: pg-east, rule: PGV302, reason: east runs on two CPUs by design}\n"
        "- {host: pg-west, rule: PGV605, reason: west's checkpoints are reviewed}\n"
        "- {host: '*', rule: PGV807, reason: lock waits are traced elsewhere}\n"
        "- {host: '*', rule: PGV101, reason: a pod has no vm.overcommit_memory of its own}\n"
    )
    result = lint([directory], LintOptions())
    assert [host.host_facts.name for host in result.hosts] == ["pg-east", "pg-west"]
    assert result.notices == [f"{directory / '.pgvet-ignore.yaml'}:4: unused ignore entry (PGV101)"]
    selected = lint([directory], LintOptions(select=["PGV302"]))
    assert selected.notices == [f"{directory / '.pgvet-ignore.yaml'}: 3 ignore entries not checked: their hosts or "
                                "rules are not in this run (lines 2, 3, 4)"]
