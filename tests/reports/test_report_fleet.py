"""The fleet summary (text and JSON) and the host-by-host run that feeds it without keeping the hosts."""

from __future__ import annotations

import gc
import io
import json
import tempfile
import tracemalloc
import weakref
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

import bench  # scripts/ is on the path (tests/conftest.py)
from conftest import FIXTURES
from pgvet.findings import Finding, HostError, HostResult, LintResult, RuleMeta
from pgvet.report import ReportOptions, Spool
from pgvet.report.json_report import Writer as JsonWriter
from pgvet.report.json_report import render as render_json
from pgvet.report.jsonl import Writer as JsonLinesWriter
from pgvet.report.text import render as render_text
from pgvet.run.lint import LintRun, write_reports
from pgvet.run.options import LintOptions
from pgvet.run.paths import host_directories
from pgvet.run.summary import TOP_HOSTS, RunSummary
from pgvet.run.workers import BATCH_GC_THRESHOLD
from pgvet.snapshot.facts import HostFacts

RULES = {
    "PGV1": RuleMeta("PGV1", "one-error", "An error", "error"),
    "PGV2": RuleMeta("PGV2", "two-warning", "A warning", "warning"),
    "PGV3": RuleMeta("PGV3", "three-info", "An info", "info"),
}


def finding(rule_id: str, host: str, subject: str = "", *, suppressed: str | None = None,
            baseline: bool = False) -> Finding:
    meta = RULES[rule_id]
    return Finding(rule_id=rule_id, rule_name=meta.name, severity=meta.severity, title=meta.title,
                   message=meta.title, host=host, fingerprint=f"{rule_id}-{host}-{subject}", subject=subject or None,
                   suppressed=suppressed, baseline=baseline)


def host(name: str, *rule_ids: str, quiet: tuple[Finding, ...] = ()) -> HostResult:
    findings = [finding(rule_id, name, str(index)) for index, rule_id in enumerate(rule_ids)]
    return HostResult(host_facts=HostFacts(name=name, root=f"/fleet/{name}"), findings=[*findings, *quiet])


def fleet() -> LintResult:
    """25 hosts: h00 2 errors; h01 1 error 3 warnings; h02 1 error 1 warning; h03-h07 a warning and an info;
    h08-h11 an info only; h12-h24 nothing, but h12 has a suppressed error and h13 a baseline error."""
    hosts = [host("h00", "PGV1", "PGV1"), host("h01", "PGV1", "PGV2", "PGV2", "PGV2"), host("h02", "PGV2", "PGV1")]
    hosts += [host(f"h{number:02d}", "PGV3", "PGV2") for number in range(3, 8)]
    hosts += [host(f"h{number:02d}", "PGV3") for number in range(8, 12)]
    hosts += [host("h12", quiet=(finding("PGV1", "h12", suppressed="known"),)),
              host("h13", quiet=(finding("PGV1", "h13", baseline=True),))]
    hosts += [host(f"h{number:02d}") for number in range(14, 25)]
    return LintResult(hosts=hosts, rules=RULES, tool_version="0.1.0", pack_version="test",
                      errors=[HostError("broken", "permission denied")])


def test_summary_ranks_hosts_by_errors_then_warnings_then_info() -> None:
    summary = RunSummary.of(fleet())
    top = summary.top_hosts()
    assert len(top) == TOP_HOSTS == 20
    assert [(row.host, row.error, row.warning, row.info) for row in top[:4]] == [
        ("h00", 2, 0, 0), ("h01", 1, 3, 0), ("h02", 1, 1, 0), ("h03", 0, 1, 1)]
    assert [row.host for row in top[3:12]] == [f"h{number:02d}" for number in range(3, 12)]
    assert [row.host for row in top[12:]] == [f"h{number:02d}" for number in range(12, 20)]  # input order
    assert dict(summary.hosts_by_worst) == {"error": 3, "warning": 5, "info": 4, "clean": 13}
    assert [(row.rule_id, row.hosts) for row in summary.top_rules()] == [("PGV3", 9), ("PGV2", 7), ("PGV1", 3)]
    assert (summary.hosts, summary.hosts_failed, summary.suppressed, summary.baseline) == (25, 1, 1, 1)
    assert summary.counts == {"error": 4, "warning": 9, "info": 9}


def test_the_table_keeps_the_worst_hosts_whatever_their_order() -> None:
    result = fleet()
    result.hosts.reverse()
    assert [row.host for row in RunSummary.of(result).top_hosts()[:3]] == ["h00", "h01", "h02"]


def test_text_report_shows_the_fleet_tables() -> None:
    output = render_text(fleet(), ReportOptions(color=False, width=100))
    section = output[output.index("Fleet: "):].splitlines()
    assert section[:5] == [
        "Fleet: 25 hosts (and 1 that could not be read)",  # the table's counts were taken for the whole fleet
        "3 with errors, 5 with warnings (no error), 4 with info only, 13 without findings",
        "",
        "host  errors  warnings  info",
        "h00        2         0     0",
    ]
    assert section[5:7] == ["h01        1         3     0", "h02        1         1     0"]
    assert "h19        0         0     0" in section and "h20        0         0     0" not in section
    assert "… and 5 more" in section
    rules = section[section.index("Most frequent findings"):]
    assert rules[1:5] == ["rule              severity  hosts", "PGV3 three-info   info          9",
                          "PGV2 two-warning  warning       7", "PGV1 one-error    error         3"]
    assert section[-2:] == ["4 errors, 9 warnings, 9 info on 25 hosts; 1 host could not be read",
                            "not counted: 1 suppressed, 1 in the baseline"]


def test_json_summary_has_the_fleet() -> None:
    document = json.loads(render_json(fleet(), ReportOptions()))
    fleet_summary = document["summary"]["fleet"]
    assert fleet_summary["top_hosts"][:2] == [{"host": "h00", "error": 2, "warning": 0, "info": 0},
                                              {"host": "h01", "error": 1, "warning": 3, "info": 0}]
    assert len(fleet_summary["top_hosts"]) == 20 and fleet_summary["hosts_not_listed"] == 5
    assert (fleet_summary["hosts_with_errors"], fleet_summary["hosts_with_warnings"], fleet_summary["hosts_with_info"],
            fleet_summary["hosts_without_findings"]) == (3, 5, 4, 13)
    assert fleet_summary["rules"] == [
        {"rule_id": "PGV3", "rule_name": "three-info", "severity": "info", "hosts": 9},
        {"rule_id": "PGV2", "rule_name": "two-warning", "severity": "warning", "hosts": 7},
        {"rule_id": "PGV1", "rule_name": "one-error", "severity": "error", "hosts": 3},
    ]


def test_one_host_has_no_fleet_summary() -> None:
    one = LintResult(hosts=[host("h00", "PGV1")], rules=RULES, tool_version="0.1.0", pack_version="test")
    assert "fleet" not in json.loads(render_json(one, ReportOptions()))["summary"]
    assert "Fleet:" not in render_text(one, ReportOptions(color=False))


def test_the_json_written_host_by_host_holds_a_record_per_line() -> None:
    result = fleet()
    output = render_json(result, ReportOptions())
    document = json.loads(output)
    assert [item["name"] for item in document["hosts"]] == [item.host_facts.name for item in result.hosts]
    assert document["findings"]
    # the document as json.dumps indents it, but each record of its arrays on one line
    records = {key: document[key] for key in ("hosts", "findings", "not_evaluated")}
    expected = json.dumps({**document, **{key: f"@{key}@" for key in records}}, indent=2, ensure_ascii=False) + "\n"
    for key, items in records.items():
        lines = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in items)
        expected = expected.replace(f'"@{key}@"', f"[\n{lines}\n  ]" if items else "[]")
    assert output == expected


class _Tracked(dict[str, object]):
    """A host's facts that can be watched (a weak reference tells when nothing holds them any more)."""


def test_a_run_keeps_no_host_once_it_is_written(tmp_path: Path) -> None:
    """What makes memory flat: neither the run nor a writer holds a host after it was handed on."""
    run = LintRun([FIXTURES / "small-vm", FIXTURES / "big-server", tmp_path], LintOptions())
    writer = JsonWriter(run, ReportOptions(), io.StringIO())
    watched: list[weakref.ref[_Tracked]] = []
    errors = 0
    for outcome in run.outcomes():
        if isinstance(outcome, HostError):
            errors += 1
            writer.error(outcome)
            continue
        gc.collect()
        assert all(earlier() is None for earlier in watched)  # (the run's generator holds the host it yields)
        facts = _Tracked(outcome.host_facts.facts)
        outcome.host_facts.facts = facts  # type: ignore[assignment]
        watched.append(weakref.ref(facts))
        writer.host(outcome)
        del outcome, facts
    gc.collect()
    assert all(earlier() is None for earlier in watched)
    assert (len(watched), errors, run.summary.hosts, run.summary.hosts_failed) == (2, 1, 2, 1)


def test_a_lint_keeps_no_hosts_objects_in_a_reference_cycle(synthetic_hosts: list[Path]) -> None:
    """Why the cycle collector may run seldom during a lint (run.workers.BATCH_GC_THRESHOLD): a host's facts,
    items and results are freed by their reference counts. A recursive nested function makes a cycle (it refers to
    itself) that keeps what it holds until a collection: one per rule not evaluated kept the host's facts, one in
    derived.expand kept its names, and with collections seldom those cycles reached the oldest generation and
    grew a run's memory by a kilobyte a host. A run makes a few cycles of its own (its planner), as many for 10
    hosts as for 40; the synthetic hosts vary as a fleet does, so that different rules fire."""

    def objects_in_cycles(directories: list[Path]) -> int:
        gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds stays in gc.garbage, to be counted
        try:
            run = LintRun(directories, LintOptions())
            writer = JsonLinesWriter(run, ReportOptions(), io.StringIO())
            for outcome in run.outcomes():
                assert not isinstance(outcome, HostError)
                writer.host(outcome)
            del run, writer, outcome
            gc.collect()
            return len(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if enabled:
                gc.enable()

    objects_in_cycles(synthetic_hosts[:4])  # what a first lint makes once (imports, caches) is no host's
    assert objects_in_cycles(synthetic_hosts[:40]) == objects_in_cycles(synthetic_hosts[:10])


@pytest.fixture(scope="module")
def synthetic_hosts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return bench.make_hosts(tmp_path_factory.mktemp("fleet"), 50)


@pytest.mark.parametrize("enabled", [True, False], ids=["library", "command line"])
def test_a_lint_runs_the_cycle_collector_for_its_batches_and_gives_its_setting_back(
        enabled: bool, synthetic_hosts: list[Path]) -> None:
    """The command line turns the collector off from its start (pgvet.__main__); a lint's batches turn it on, with
    passes far apart, what existed before frozen out of them; a program calling pgvet gets its setting back."""
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    seen: list[tuple[bool, tuple[int, int, int]]] = []
    (gc.enable if enabled else gc.disable)()
    try:
        run = LintRun(synthetic_hosts[:2], LintOptions())
        for _ in run.outcomes():
            seen.append((gc.isenabled(), gc.get_threshold()))
        assert seen == [(True, BATCH_GC_THRESHOLD)] * 2
        assert gc.isenabled() is enabled
        assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
    finally:
        gc.enable()


def test_a_fleets_hosts_given_one_by_one_are_held_once(synthetic_hosts: list[Path]) -> None:
    """`pgvet lint hosts/*`: each host is the path given, not a second Path of it (memory flat: a Path is a few
    hundred bytes a host, for the whole run)."""
    given = host_directories(synthetic_hosts[:5])
    assert all(host is path for host, path in zip(given.hosts, synthetic_hosts[:5], strict=True))


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit", "gitlab"])
def test_a_report_that_needs_the_end_of_the_run_does_not_grow_with_its_hosts(
        fmt: str, synthetic_hosts: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory flat (issue #8): what these formats write after the last host (counts, rules, notifications) does
    not make them keep the hosts. Keeping them costs some 40 kB a host."""
    from pgvet.report import github, sarif

    monkeypatch.setattr(Spool, "SPOOL_MEMORY", 0)  # a spool in memory would grow up to its limit
    monkeypatch.setattr(sarif, "MAX_RESULTS", 10)
    monkeypatch.setattr(github, "SUMMARY_LIMIT", 4000)  # the rows kept for the step summary stop growing
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    alive: list[int] = []
    outcomes = LintRun.outcomes

    def watched(run: LintRun) -> Iterator[HostResult | HostError]:
        for number, outcome in enumerate(outcomes(run), 1):
            yield outcome
            if number in (10, 50):  # the reports have taken the host
                gc.collect()
                alive.append(tracemalloc.get_traced_memory()[0])

    monkeypatch.setattr(LintRun, "outcomes", watched)
    report = tmp_path / "report"
    tracemalloc.start()
    try:
        write_reports(LintRun(synthetic_hosts, LintOptions()), formats=[fmt], outputs=[report], verbose=False,
                      color=None)
    finally:
        tracemalloc.stop()
    assert (alive[1] - alive[0]) / 40 < 8000  # bytes a host (caches of paths and names fill as the hosts come)
    if fmt == "sarif":
        notifications = json.loads(report.read_text())["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        assert "results in one SARIF run" in notifications[-1]["message"]["text"]
    elif fmt == "github":
        assert "more findings do not fit in the step summary" in (tmp_path / "summary.md").read_text()
    elif fmt == "junit":
        assert ElementTree.parse(report).getroot().get("tests") == str(sum(
            int(suite.get("tests", "0")) for suite in ElementTree.parse(report).getroot()))
    else:
        assert len(json.loads(report.read_text())) > 50


@pytest.mark.parametrize("fmt", ["junit", "json", "text", "concise"])
def test_a_failed_run_leaves_no_spool_behind(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a report holds until the end (junit's suites, json's findings) is closed when the run fails, and
    was never a file of the temporary directory."""
    spools: list[IO[Any]] = []
    make = tempfile.TemporaryFile

    def recorded(*args: Any, **kwargs: Any) -> IO[Any]:
        spools.append(make(*args, **kwargs))
        return spools[-1]

    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(Spool, "SPOOL_MEMORY", 0)
    outcomes = LintRun.outcomes

    def interrupted(run: LintRun) -> Iterator[HostResult | HostError]:
        for number, outcome in enumerate(outcomes(run)):
            if number == 2:
                raise KeyboardInterrupt
            yield outcome

    monkeypatch.setattr(LintRun, "outcomes", interrupted)
    hosts = [FIXTURES / "small-vm", FIXTURES / "big-server", FIXTURES / "config-repo"]
    with pytest.raises(KeyboardInterrupt):  # (its traceback holds the run's frames, and so the writer)
        write_reports(LintRun(hosts, LintOptions()), formats=[fmt], outputs=[tmp_path / "report"], verbose=False,
                      color=None)
    assert spools and all(spool.closed for spool in spools)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_reports_and_suppressions_ask_nothing_the_listing_answered(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's directory is listed once as it is read: the reports resolve the files it showed as regular
    files (no links) without an lstat each, and a host whose listing holds no .pgvet-ignore.yaml is not asked
    for one. What they write is what asking gives (a host's files linked elsewhere are still resolved)."""
    import os

    from pgvet import report
    from pgvet.report import jsonl

    report._relative_path.cache_clear()  # what earlier tests resolved would not be asked again either
    report._real.cache_clear()
    linked = tmp_path / "linked"
    linked.mkdir()
    for source in (FIXTURES / "big-server").iterdir():
        if source.is_file():
            (linked / source.name).write_bytes(source.read_bytes())
    (linked / "conf").mkdir()
    (linked / "postgresql.conf").rename(linked / "conf" / "main.conf")
    (linked / "postgresql.conf").symlink_to("conf/main.conf")

    def lines(**patched: object) -> list[str]:
        run = LintRun([FIXTURES / "big-server", FIXTURES / "small-vm", linked], LintOptions())
        outcomes = [outcome for outcome in run.outcomes()]  # read (and the ignore files looked for) unpatched
        out = io.StringIO()
        writer = jsonl.Writer(run, ReportOptions(), out)
        with monkeypatch.context() as context:
            for name, replacement in patched.items():
                context.setattr(os.path, name, replacement)
            for outcome in outcomes:
                assert isinstance(outcome, HostResult)
                assert outcome.host_facts.regular_files
                writer.host(outcome)
        return out.getvalue().splitlines()

    asked: list[str] = []
    real_islink = os.path.islink

    def counting_islink(path: Any) -> bool:
        asked.append(os.fspath(path))
        return real_islink(path)

    written = lines(islink=counting_islink)
    assert written == lines()
    assert str(linked / "postgresql.conf") in asked  # a link: resolved as before
    assert not [path for path in asked if os.path.dirname(path) in
                (str((FIXTURES / host).resolve()) for host in ("big-server", "small-vm"))]

    from pgvet.run import suppress

    looked: list[str] = []
    real_lstat = Path.lstat

    def counting_lstat(self: Path) -> os.stat_result:
        looked.append(self.name)
        return real_lstat(self)

    monkeypatch.setattr(Path, "lstat", counting_lstat)
    list(LintRun([FIXTURES / "big-server"], LintOptions()).outcomes())
    assert suppress.IGNORE_FILE not in looked
