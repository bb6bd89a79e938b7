"""JSON Lines for streams: one finding object per line (as in the JSON report), then a summary line.

Written host by host: each host's findings go out as soon as it is linted; the lines of hosts that
could not be read follow the findings, then the summary.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from json.encoder import encode_basestring  # the C function behind json.dumps(..., ensure_ascii=False)
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgvet.findings import Finding, HostError, HostResult, LintResult
from pgvet.report import error_path, host_file_path, render_with_writer

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary

_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
# The C encoder JSONEncoder.encode makes at every call, made once (a finding has a few dicts and lists to
# encode); no circular check: findings hold plain values. CPython's private constructor, called as
# JSONEncoder.iterencode calls it: where it is missing or takes other arguments, _encode does the work.
_c_encoder: Callable[[object, int], tuple[str, ...]] | None = None
with contextlib.suppress(AttributeError, TypeError):
    _c_encoder = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, str, encode_basestring, None, ": ", ", ", False, False, True)

_INFINITY = float("inf")
# the encoder's texts for numbers, bound once: ``int.__repr__`` looks the method up on every call
_int_text, _float_text = int.__repr__, float.__repr__


def _json(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``, with the common scalars spared the encoder."""
    if value is None:
        return "null"
    if type(value) is str:
        return encode_basestring(value)
    if type(value) is int:
        return _int_text(value)
    if not value and (type(value) is dict or type(value) is list):
        return "{}" if type(value) is dict else "[]"
    return "".join(_c_encoder(value, 0)) if _c_encoder is not None else _encode(value)


# What a finding line repeats from its rule (the help text is most of a line), encoded once per rule:
# rule id → (the fields it was encoded from, the text after the fingerprint, the title, help and references).
_RuleParts = tuple[tuple[object, ...], str, str, str]
_rule_parts: dict[str, _RuleParts] = {}


def _parts(finding: Finding) -> _RuleParts:
    fields = (finding.rule_name, finding.severity, finding.tags, finding.title, finding.help, finding.references)
    known = _rule_parts.get(finding.rule_id)
    if known is not None and known[0] == fields:
        return known
    head = (f'"rule_id": {_json(finding.rule_id)}, "rule_name": {_json(finding.rule_name)}, '
            f'"severity": {_json(finding.severity)}, "tags": {_json(list(finding.tags))}')
    tail = f'"help": {_json(finding.help)}, "references": {_json(list(finding.references))}'
    parts = _rule_parts[finding.rule_id] = (fields, head, _json(finding.title), tail)
    return parts



def _scalar(value: Any) -> str:
    """``_json(value)`` for an evidence or fix value, the common types first and without the encoder."""
    kind = type(value)
    if kind is int:
        return _int_text(value)
    if kind is str:
        return encode_basestring(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is float and -_INFINITY < value < _INFINITY:
        return _float_text(value)  # as the encoder writes finite floats
    return _json(value)


# The evidence objects' beginnings by fact name, and their path parts by file (or <derived>): the same few
# hundred in every finding of a run, escaped once (escaping costs more per character than a look-up in all).
_evidence_starts: dict[str, str] = {}
_evidence_paths: dict[str, str] = {}
_KEPT_LIMIT = 4096  # a bound for runs of many distinct names (users' rules, hosts' own file paths)


def _kept(kept: dict[str, str], text: str, encoded: str) -> str:
    if len(kept) >= _KEPT_LIMIT:
        kept.clear()
    kept[text] = encoded
    return encoded


_NO_FIX = '{"sysctl": {}, "postgresql": {}, "alter_system": [], "text": null}'


def finding_line(finding: Finding, host: HostResult, repo_root: Path | None, cwd: str | None = None,
                 written: dict[int, str] | None = None) -> str:
    """The bytes of ``json.dumps({"type": "finding", **finding_json(...)}, ensure_ascii=False, default=str)``
    (a test holds them equal), written without building the dictionary: a host has tens of findings.
    NULLs, integers and texts are written here rather than by ``_json``: a call per field costs more than
    the field. ``written``: the evidence entries of the host's findings written so far, by the entry's id —
    its findings share the entries of host-wide facts (engine/derived.py, evidence), which are then written
    once; only for findings that the host holds while the dictionary lives (ids are not reused meanwhile)."""
    _, head, title, tail = _parts(finding)
    path = host_file_path(finding.path, host, repo_root, cwd) if finding.path else None
    values, fix, line, subject = finding.values, finding.fix, finding.line, finding.subject
    expected, actual = values.get("expected"), values.get("actual")
    evidence: list[str] = []
    append = evidence.append
    written = {} if written is None else written
    for entry in finding.evidence:  # a finding has several: no frame per entry
        text = written.get(id(entry))
        if text is None:
            fact, value, source = entry
            encoded = _int_text(value) if type(value) is int else _scalar(value)
            start = (_evidence_starts.get(fact)
                     or _kept(_evidence_starts, fact, f'{{"fact": {encode_basestring(fact)}, "value": '))
            if source is None:
                text = f'{start}{encoded}, "path": null, "line": null}}'
            else:
                file = source.path
                place = (_evidence_paths.get(file)
                         or _kept(_evidence_paths, file, f', "path": {encode_basestring(file)}, "line": '))
                text = f'{start}{encoded}{place}{"null" if source.line is None else _int_text(source.line)}}}'
            written[id(entry)] = text
        append(text)
    if fix.sysctl or fix.postgresql or fix.text is not None:
        # a fix's settings are texts by name: written here rather than by the encoder (a call and its setting
        # up per dict cost more than the one or two pairs they hold)
        sysctl = ", ".join([f"{encode_basestring(name)}: {encode_basestring(value)}"
                            for name, value in fix.sysctl.items()])
        postgresql = ", ".join([f"{encode_basestring(name)}: {encode_basestring(value)}"
                                for name, value in fix.postgresql.items()])
        statements = ", ".join([encode_basestring(statement) for statement in fix.alter_system()])
        fix_json = (f'{{"sysctl": {{{sysctl}}}, "postgresql": {{{postgresql}}}, "alter_system": [{statements}], '
                    f'"text": {"null" if fix.text is None else encode_basestring(fix.text)}}}')
    else:
        fix_json = _NO_FIX
    return (f'{{"type": "finding", "fingerprint": {encode_basestring(finding.fingerprint)}, {head}, '
            f'"host": {encode_basestring(finding.host)}, '
            f'"path": {"null" if path is None else encode_basestring(path)}, '
            f'"line": {"null" if line is None else _int_text(line)}, '
            f'"subject": {"null" if subject is None else encode_basestring(subject)}, "title": {title}, '
            f'"message": {encode_basestring(finding.message)}, "values": {_json(values)}, '
            f'"expected": {"null" if expected is None else _json(expected)}, '
            f'"actual": {"null" if actual is None else _json(actual)}, "fix": {fix_json}, {tail}, '
            f'"evidence": [{", ".join(evidence)}], '
            f'"suppressed": {_json(finding.suppressed)}, '
            f'"baseline": {"true" if finding.baseline else "false"}}}')


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.run = run
        self.out = out
        self.repo_root = options.repo_root
        self.errors: list[HostError] = []

    def host(self, host: HostResult) -> None:
        if host.findings:
            cwd = os.getcwd()  # once a host, not once a finding
            written: dict[int, str] = {}
            self.out.write("".join([finding_line(finding, host, self.repo_root, cwd, written) + "\n"
                                    for finding in host.findings]))

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        from pgvet.report.json_report import SCHEMA_VERSION, summary_json

        for error in self.errors:
            self.out.write(json.dumps({"type": "error", "host": error.host, "message": error.message,
                                       "path": error_path(error, self.repo_root),
                                       "line": error.source.line if error.source else None},
                                      ensure_ascii=False) + "\n")
        self.out.write(json.dumps({"type": "summary", "schema_version": SCHEMA_VERSION,
                                   "tool_version": self.run.tool_version, "rule_pack": self.run.pack_version,
                                   **summary_json(summary)}) + "\n")

    def close(self) -> None:
        """Nothing held: each line went out as it came."""


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)
