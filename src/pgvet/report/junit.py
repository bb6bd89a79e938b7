"""JUnit XML for CI test tabs: one testsuite per host, one failing testcase per finding, and one passing
testcase for a host without findings. Suppressed and baseline findings are skipped testcases; a host
that could not be read is a testsuite with an error. GitLab keeps one testcase per suite name, classname and
name, so each is unique: a second host of a name has its directory after it, a second test case of a name its
place. What XML 1.0 cannot hold, and a terminal must not be sent, is escaped (``visible``) in each text as it
is put in the tree, once: escaping the written XML again doubled the backslashes of the escapes made before.

Written host by host: the root element's counts come before its suites, so each host's suite is held in a
spool (memory, then a temporary file) until the end, as ``ElementTree.indent`` and ``tostring`` would have
written it in the whole tree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import TYPE_CHECKING

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.provenance import Source
from pgvet.report import Spool, error_place, host_file_path, one_line, prose, relative_path, render_with_writer, visible

if TYPE_CHECKING:
    from pathlib import Path

    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

COUNTS = ("tests", "failures", "errors", "skipped")


def _place(finding: Finding, host: HostResult, options: ReportOptions) -> str:
    if not finding.path:
        return relative_path(".", host.host_facts.root, options.repo_root)
    place = host_file_path(finding.path, host, options.repo_root)
    return f"{place}:{finding.line}" if finding.line else place


def _details(finding: Finding, place: str, declared_by: tuple[Source, str, str | None] | None) -> str:
    lines = [f"at {place}"]
    lines += [f"value {name} = {value}" for name, value in finding.values.items()]
    lines += [f"fix: sysctl {key} = {value}" for key, value in finding.fix.sysctl.items()]
    if declared_by is None:
        lines += [f"fix: postgresql.conf {key} = {value}" for key, value in finding.fix.postgresql.items()]
    else:
        lines += [f"fix: {line}" for line in finding.fix.postgresql_lines(*declared_by)]
    shown = [prose(finding.message), *map(one_line, lines)]
    if finding.fix.text:
        shown.append("fix: " + prose(finding.fix.text))
    return "\n".join(shown)


def _suite(host: HostResult, options: ReportOptions, suite_name: str) -> ElementTree.Element:
    """``suite_name``: the host's name, or with its directory when an earlier host had that name, escaped."""
    suite = ElementTree.Element("testsuite", name=suite_name)
    failures = skipped = 0
    names: set[str] = set()
    for finding in sorted(host.findings, key=lambda item: (-item.rank, item.rule_id, item.subject or "")):
        place = _place(finding, host, options)
        name = f"{finding.rule_id} {finding.rule_name}" + (f" [{finding.subject}]" if finding.subject else "")
        # GitLab keeps one test case per suite, classname and name: a rule firing for one subject on two lines
        # (an unknown parameter set twice) is told apart by its place, else by its fingerprint
        for candidate in (name, f"{name} at {place}", f"{name} {finding.fingerprint}"):
            if candidate not in names:
                break
        names.add(candidate)
        case = ElementTree.SubElement(suite, "testcase", name=visible(candidate), classname=f"pgvet.{suite_name}")
        if finding.path:
            case.set("file", visible(place.rsplit(":", 1)[0] if finding.line else place))
        if finding.path and finding.line:
            case.set("line", str(finding.line))
        if finding.suppressed is not None or finding.baseline:
            why = f"suppressed: {finding.suppressed}" if finding.suppressed is not None else "in the baseline"
            ElementTree.SubElement(case, "skipped", message=visible(why))
            skipped += 1
            continue
        failure = ElementTree.SubElement(case, "failure", message=prose(finding.message),
                                         type=finding.severity)
        failure.text = _details(finding, place, host.declared_by)
        failures += 1
    if not host.findings:
        ElementTree.SubElement(suite, "testcase", name="pgvet", classname=f"pgvet.{suite_name}")
    suite.set("tests", str(max(1, len(host.findings))))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return suite


def _error_suite(error: HostError, repo_root: Path | None, suite_name: str) -> ElementTree.Element:
    suite = ElementTree.Element("testsuite", name=suite_name, tests="1", failures="0", errors="1", skipped="0")
    case = ElementTree.SubElement(suite, "testcase", name="read inputs", classname=f"pgvet.{suite_name}")
    problem = ElementTree.SubElement(case, "error", message=visible(error.message), type="input")
    shown = error_place(error, repo_root)
    problem.text = visible(f"{shown}: {error.message}" if shown else error.message)
    return suite


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.options = options
        self.suites = Spool()
        self.totals = dict.fromkeys(COUNTS, 0)
        self.errors: list[HostError] = []  # a few lines each, and their suites follow the hosts'

    def _add(self, suite: ElementTree.Element) -> str:
        """The suite's text as a child of the indented root (its tail, the indentation before the next
        child or the root's end tag, is the caller's)."""
        for key in COUNTS:
            self.totals[key] += int(suite.get(key, "0"))
        ElementTree.indent(suite, level=1)
        return "\n  " + ElementTree.tostring(suite, encoding="unicode")

    def _suite_name(self, name: str, root: str, namesake: bool) -> str:
        """The host's name; with its directory after it for a namesake of an earlier host (prod/db, staging/db);
        escaped."""
        return visible(f"{name} ({relative_path('.', root, self.options.repo_root)})" if namesake else name)

    def host(self, host: HostResult) -> None:
        suite_name = self._suite_name(host.host_facts.name, host.host_facts.root, host.namesake)
        self.suites.write(self._add(_suite(host, self.options, suite_name)))

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        tail = "".join(self._add(_error_suite(error, self.options.repo_root, self._suite_name(
            error.host, error.root or (error.source.path if error.source else ""), error.namesake)))
            for error in self.errors)
        root = ElementTree.Element("testsuites", name="pgvet")
        for key, total in self.totals.items():
            root.set(key, str(total))
        head = ElementTree.tostring(root, encoding="unicode", xml_declaration=True)
        if not self.totals["tests"]:  # no suite: the empty element
            self.out.write(head + "\n")
            return
        self.out.write(head.removesuffix(" />") + ">")
        self.suites.copy_to(self.out)
        self.out.write(tail + "\n</testsuites>\n")

    def close(self) -> None:
        self.suites.close()


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
