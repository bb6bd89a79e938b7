"""JUnit XML for CI test tabs: one testsuite per host, one failing testcase per finding, and one passing
testcase for a host without findings. Suppressed and baseline findings are skipped testcases; a host
that could not be read is a testsuite with an error.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import TYPE_CHECKING

from pgvet.findings import Finding, HostResult, LintResult

if TYPE_CHECKING:
    from pgvet.report import ReportOptions


def _place(finding: Finding, host: HostResult, options: ReportOptions) -> str:
    from pgvet.report import relative_path

    if not finding.path:
        return relative_path(".", host.host.root, options.repo_root)
    place = relative_path(finding.path, host.host.root, options.repo_root)
    return f"{place}:{finding.line}" if finding.line else place


def _details(finding: Finding, place: str) -> str:
    lines = [" ".join(finding.message.split()), f"at {place}"]
    lines += [f"value {name} = {value}" for name, value in finding.values.items()]
    lines += [f"fix: sysctl {key} = {value}" for key, value in finding.fix.sysctl.items()]
    lines += [f"fix: postgresql.conf {key} = {value}" for key, value in finding.fix.postgresql.items()]
    if finding.fix.text:
        lines.append("fix: " + " ".join(finding.fix.text.split()))
    return "\n".join(lines)


def _suite(host: HostResult, options: ReportOptions) -> ElementTree.Element:
    suite = ElementTree.Element("testsuite", name=host.host.name)
    failures = skipped = 0
    for finding in sorted(host.findings, key=lambda item: (-item.rank, item.rule_id, item.subject or "")):
        name = f"{finding.rule_id} {finding.rule_name}" + (f" [{finding.subject}]" if finding.subject else "")
        case = ElementTree.SubElement(suite, "testcase", name=name, classname=f"pgvet.{host.host.name}")
        place = _place(finding, host, options)
        if finding.path:
            case.set("file", place.rsplit(":", 1)[0] if finding.line else place)
        if finding.path and finding.line:
            case.set("line", str(finding.line))
        if finding.suppressed is not None or finding.baseline:
            why = f"suppressed: {finding.suppressed}" if finding.suppressed is not None else "in the baseline"
            ElementTree.SubElement(case, "skipped", message=why)
            skipped += 1
            continue
        failure = ElementTree.SubElement(case, "failure", message=" ".join(finding.message.split()),
                                         type=finding.severity)
        failure.text = _details(finding, place)
        failures += 1
    if not host.findings:
        ElementTree.SubElement(suite, "testcase", name="pgvet", classname=f"pgvet.{host.host.name}")
    suite.set("tests", str(max(1, len(host.findings))))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return suite


def render(result: LintResult, options: ReportOptions) -> str:
    root = ElementTree.Element("testsuites", name="pgvet")
    for host in result.hosts:
        root.append(_suite(host, options))
    for error in result.errors:
        suite = ElementTree.SubElement(root, "testsuite", name=error.host, tests="1", failures="0", errors="1",
                                       skipped="0")
        case = ElementTree.SubElement(suite, "testcase", name="read inputs", classname=f"pgvet.{error.host}")
        problem = ElementTree.SubElement(case, "error", message=error.message, type="input")
        problem.text = f"{error.source}: {error.message}" if error.source else error.message
    totals = {key: sum(int(suite.get(key, "0")) for suite in root) for key in ("tests", "failures", "errors",
                                                                             "skipped")}
    for key, total in totals.items():
        root.set(key, str(total))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
