"""SARIF 2.1.0 for code scanning (GitHub and others).

Rules carry their help as text and markdown (what it checks, why it matters, how to fix it); results
point at files relative to the repository root (``uriBaseId: %SRCROOT%``) with a region: GitHub
requires ``startLine`` and displays a result only with a file, so a finding without one points at
the file its evidence was read from, else the host's host.yaml (line 1), else the host directory.
``partialFingerprints`` carry pgvet's stable fingerprint twice: as ``pgvet/v1`` and as
``primaryLocationLineHash``, the only key GitHub reads (without it, upload-sarif hashes the source line,
and an alert would be re-opened whenever the value on that line changes).

Written host by host, straight to the output: what comes before ``results`` (the driver and every rule of
the pack) is known before the first host, and what needs the whole run (the notifications, whether the
execution succeeded) comes after them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pgvet.findings import Finding, HostError, HostResult, LintResult, RuleMeta
from pgvet.report import JsonArray, anchor, error_label, json_text, markdown_text, prose, render_with_writer

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
# GitHub's limits (SARIF support for code scanning): descriptions 1024 characters, names 255, 20 tags per rule
MAX_DESCRIPTION = 1024
MAX_NAME = 255
MAX_TAGS = 20
# and 25 000 results a run: code scanning rejects the whole upload above it ("rejected due to result limits")
MAX_RESULTS = 25_000


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inert(text: str) -> str:
    """A rule's words, on one line, in help.markdown: a rule pack's, which code scanning tools render (GitHub
    sanitises what it renders, others need not): its links, images (fetched from another's server whenever the
    rule is viewed), HTML and emphasis shown as the characters they are (markdown_text); only its code spans
    (```pgvet facts```, as pgvet's own rules write them) are kept, their text rendered as it is."""
    text = " ".join(text.split())
    runs = list(re.finditer("`+", text))
    following: dict[int, list[int]] = {}  # a length of backticks → the runs of that length, in order
    for index, run in enumerate(runs):
        following.setdefault(len(run.group()), []).append(index)
    seen = dict.fromkeys(following, 0)  # how far each length's list was walked: linear on any text
    pieces, position, index = [], 0, 0
    while index < len(runs):
        run = runs[index]
        length = len(run.group())
        same = following[length]
        while seen[length] < len(same) and same[seen[length]] <= index:
            seen[length] += 1
        if seen[length] == len(same):  # never closed: backticks like any other punctuation
            index += 1
            continue
        closing = runs[same[seen[length]]]
        pieces += [markdown_text(text[position:run.start()]), text[run.start():closing.end()]]
        position, index = closing.end(), same[seen[length]] + 1
    pieces.append(markdown_text(text[position:]))
    return "".join(pieces)


def _rule(meta: RuleMeta) -> dict[str, Any]:
    why = " ".join(meta.why.split())
    title = _inert(meta.title)
    sections = [f"## What it does\n\nReports: {title}.", f"## Why it matters\n\n{_inert(why) or title}",
                f"## How to fix\n\nEach result gives the sysctl and postgresql.conf lines (and the ALTER SYSTEM "
                f"statements) with the values computed for that host. `pgvet explain {meta.id}` shows the "
                f"condition, the formulas and the rule's parameters."]
    if meta.references:
        sections.append("## References\n\n" + "\n".join(f"- {_inert(reference)}" for reference in meta.references))
    text = f"{meta.title}. {why}".strip() + f" Run `pgvet explain {meta.id}` for the formulas and the fix."
    return {
        "id": meta.id,
        "name": _clip(meta.name, MAX_NAME),
        "shortDescription": {"text": _clip(meta.title, MAX_DESCRIPTION)},
        "fullDescription": {"text": _clip(why or meta.title, MAX_DESCRIPTION)},
        "help": {"text": text, "markdown": "\n\n".join(sections)},
        "defaultConfiguration": {"level": LEVELS[meta.severity]},
        "properties": {"tags": list(meta.tags)[:MAX_TAGS]},
    }


def _meta_from_finding(finding: Finding) -> RuleMeta:
    """A rule the result set does not describe (an outside pack): what the finding itself knows."""
    return RuleMeta(finding.rule_id, finding.rule_name, finding.title, finding.severity, finding.tags,
                    finding.help, tuple(finding.references))


@lru_cache(maxsize=1024)
def _uri(path: Path, repo_root: Path) -> str:
    """A URI reference, percent-encoded (RFC 3986: upload-sarif refuses a space); the bytes of the file name,
    so that a name that is not UTF-8 is encoded as it is on disk. Once per file of a run (a host's findings point
    at a few files, each many times; a run's files do not move while it reports them): resolving both paths takes a
    system call per directory of each."""
    try:
        relative = path.resolve().relative_to(repo_root.resolve()).as_posix() or "."
    except ValueError:
        return path.resolve().as_uri()
    return quote(os.fsencode(relative))


def _directory_uri(directory: Path) -> str:
    uri = directory.resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"  # a base URI must end with a slash


def _location(finding: Finding, host: HostResult, repo_root: Path) -> dict[str, Any]:
    target, line = anchor(finding, host)
    uri = _uri(target, repo_root)
    # a file outside the repository has an absolute URI, which takes no base (SARIF 3.4.4)
    artifact = {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if target.is_file():
        physical["region"] = {"startLine": line if line and line >= 1 else 1}
    return {"physicalLocation": physical}


def _result(finding: Finding, host: HostResult, rule_index: int, repo_root: Path,
            compared_with_baseline: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ruleId": finding.rule_id,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": prose(finding.message)},
        "locations": [_location(finding, host, repo_root)],
        "partialFingerprints": {"pgvet/v1": finding.fingerprint, "primaryLocationLineHash": f"{finding.fingerprint}:1"},
        "properties": {"host": finding.host, "subject": finding.subject, "values": finding.values,
                       "tags": list(finding.tags)},
    }
    if finding.suppressed is not None:
        # pgvet's suppressions live in its configuration, not in the linted files
        entry["suppressions"] = [{"kind": "external", "justification": finding.suppressed}]
    if compared_with_baseline:  # SARIF 3.27.24: whether the result was in the baseline run
        entry["baselineState"] = "unchanged" if finding.baseline else "new"
    return entry


def too_many_results(count: int) -> str:
    return (f"{count} results in one SARIF run: GitHub code scanning rejects an upload of more than {MAX_RESULTS} "
            f"(lint the hosts in parts, each uploaded with its own category, or leave rules out with --ignore)")


class Writer:
    """The document as ``json.dumps(document, indent=2)`` gives it, its results written as the hosts come.
    A run's findings all come from its pack, whose rules the driver lists before them (``render`` adds the
    rules of a finished result's findings that the result does not describe)."""

    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.out = out
        self.repo_root = options.repo_root or Path.cwd()
        rule_ids = sorted(run.rules)
        self.index = {rule_id: position for position, rule_id in enumerate(rule_ids)}
        self.notifications: list[dict[str, Any]] = []
        self.failed = False
        self.pack_version = run.pack_version
        self.compared_with_baseline = run.compared_with_baseline
        # no informationUri: pgvet has no page of its own to link to (it is not on PyPI: its pgvet is not ours)
        tool = {"driver": {"name": "pgvet", "version": run.tool_version, "semanticVersion": run.tool_version,
                           "rules": [_rule(run.rules[rule_id]) for rule_id in rule_ids]}}
        base = {"%SRCROOT%": {"uri": _directory_uri(self.repo_root)}}
        out.write(f'{{\n  "$schema": {json_text(SCHEMA, 1)},\n  "version": "2.1.0",\n  "runs": [\n    {{\n'
                  f'      "tool": {json_text(tool, 3)},\n      "originalUriBaseIds": {json_text(base, 3)},\n'
                  f'      "results": [')
        self.results = JsonArray(out, 4)

    def host(self, host: HostResult) -> None:
        for finding in host.findings:
            self.results.add(_result(finding, host, self.index[finding.rule_id], self.repo_root,
                                     self.compared_with_baseline))

    def error(self, error: HostError) -> None:
        self.failed = True
        text = f"{error_label(error, self.repo_root)}: {error.message}"
        self.notifications.append({"level": "error", "message": {"text": text}})

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        self.results.close()
        # what the text report ends with (unused or unexplained suppressions, expired ignore entries)
        notifications = self.notifications + [{"level": "warning", "message": {"text": notice}} for notice in notices]
        count = self.results.count
        if count > MAX_RESULTS:  # said on stderr too: the upload fails later, in another step, with less to go on
            notifications.append({"level": "warning", "message": {"text": too_many_results(count)}})
            print(f"pgvet: warning: {too_many_results(count)}", file=sys.stderr)
        invocations = [{"executionSuccessful": not self.failed, "toolExecutionNotifications": notifications}]
        self.out.write(f',\n      "invocations": {json_text(invocations, 3)},\n'
                       f'      "properties": {json_text({"rulePack": self.pack_version}, 3)}\n    }}\n  ]\n}}\n')

    def close(self) -> None:
        """Nothing held: each result went out as it came."""


def render(result: LintResult, options: ReportOptions) -> str:
    metas = dict(result.rules)
    for host in result.hosts:
        for finding in host.findings:
            metas.setdefault(finding.rule_id, _meta_from_finding(finding))
    return render_with_writer(Writer, dataclasses.replace(result, rules=metas), options)
