"""A finding: what a rule found on a host, with the numbers it computed and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

from pgvet.inputs.documents import document_kind, yaml_parameter
from pgvet.provenance import Source
from pgvet.snapshot.facts import FactValue, HostFacts

if TYPE_CHECKING:
    from pgvet.engine.planner import Target

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"info": 1, "warning": 2, "error": 3}


class Evidence(NamedTuple):
    """A fact the rule used, with its value and where it was read.

    A named tuple, as Fact is: a finding has several, and a frozen dataclass's __init__ costs most of
    gathering them.
    """

    fact: str
    value: FactValue | None
    source: Source | None


@dataclass(slots=True)
class Fix:
    """The change that resolves a finding, with computed values already filled in."""

    sysctl: dict[str, str] = field(default_factory=dict)
    postgresql: dict[str, str] = field(default_factory=dict)
    text: str | None = None

    def alter_system(self) -> list[str]:
        return [f"ALTER SYSTEM SET {name} = {quote_sql(value)};" for name, value in self.postgresql.items()]

    def is_empty(self) -> bool:
        return not (self.sysctl or self.postgresql or self.text)

    def postgresql_lines(self, declared_by: Source | None, kind: str | None = None, form: str | None = None,
                         ) -> list[str]:
        """The PostgreSQL changes as a report shows them: postgresql.conf lines and their ALTER SYSTEM, or, for a
        host a configuration document declares (``declared_by``, of ``kind``, its parameters in ``form``), that
        document's parameters as it writes them (its tool writes postgresql.conf; ALTER SYSTEM would be overwritten
        or refused), a line each of the lines one takes (two items of a block list)."""
        if declared_by is not None:
            parameter = yaml_parameter if kind is None else document_kind(kind).writes_parameter(form)
            return [f"{declared_by.path}: {line}" for name, value in self.postgresql.items()
                    for line in parameter(name, value).split("\n")]
        return [*(f"postgresql.conf: {name} = {value}" for name, value in self.postgresql.items()),
                *(f"or in SQL: {statement}" for statement in self.alter_system())]


def quote_sql(value: str) -> str:
    """A value as ALTER SYSTEM reads it, a SQL string constant: a quote doubled; one holding a backslash written as an
    escape string (E'…', its backslashes doubled), which reads the same whatever standard_conforming_strings says."""
    if "\\" in value:
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    return "'" + value.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """A role or database name as SQL writes it: bare when PostgreSQL reads it back unchanged, else quoted."""
    if name.isascii() and (name[:1].isalpha() or name[:1] == "_") and name == name.lower() and \
            all(char.isalnum() or char in "_$" for char in name):
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(slots=True)
class Finding:
    rule_id: str
    rule_name: str
    severity: Severity
    title: str
    message: str
    host: str
    fingerprint: str
    tags: tuple[str, ...] = ()
    subject: str | None = None
    path: str | None = None
    line: int | None = None
    values: dict[str, FactValue | None] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    fix: Fix = field(default_factory=Fix)
    help: str = ""
    references: list[str] = field(default_factory=list)
    suppressed: str | None = None  # the reason, when a suppression matched
    baseline: bool = False  # present in the baseline given with --baseline

    @property
    def rank(self) -> int:
        return SEVERITY_RANK[self.severity]


class RuleMeta(NamedTuple):
    """What outputs need to know about a rule (SARIF rule metadata, help pages)."""

    id: str
    name: str
    title: str
    severity: Severity
    tags: tuple[str, ...] = ()
    why: str = ""
    references: tuple[str, ...] = ()


class NotEvaluated(NamedTuple):
    """A rule that was not evaluated on a host because facts it needs are missing."""

    rule_id: str
    rule_name: str
    missing: tuple[str, ...]
    subject: str | None = None
    reason: str | None = None  # a runtime error instead of missing facts (a text where a number was expected)


class Passed(NamedTuple):
    """A rule that was evaluated and did not fire, with the values it computed (for `pgvet check`)."""

    rule_id: str
    rule_name: str
    subject: str | None
    values: dict[str, FactValue | None]


@dataclass(slots=True, eq=False, repr=False)
class HostResult:
    """The outcome of linting one host. ``passed`` is None unless passes were asked for."""

    host_facts: HostFacts
    findings: list[Finding] = field(default_factory=list)
    not_evaluated: list[NotEvaluated] = field(default_factory=list)
    passed: list[Passed] | None = None
    target: Target | None = None  # the host's target configuration (engine/planner/), once worked out
    # an earlier host of the run had this name and another directory (the run decides: run/lint.py); reports
    # that key by host name tell this one apart by its directory
    namesake: bool = False

    @property
    def declared_by(self) -> tuple[Source, str, str | None] | None:
        """Where the configuration document that declares the host declares it (inputs/documents/), its kind, and
        the form its parameters are written in (``host.parameter_form``, None for the kind's one form); None for a
        host of files."""
        declared = self.host_facts.facts.get("host.orchestrator")
        if declared is None:
            return None
        form = self.host_facts.facts.get("host.parameter_form")
        return declared.source, str(declared.value), None if form is None else str(form.value)


class HostError(NamedTuple):
    """A host that could not be linted (its inputs are unreadable); the others go on."""

    host: str
    message: str
    source: Source | None = None  # relative to the host directory, as findings' paths are
    root: str | None = None  # the host directory as given, to show the source from where the run is
    namesake: bool = False  # as HostResult's


@dataclass(slots=True, eq=False, repr=False)
class LintResult:
    """Everything one run produced, handed to the reporters."""

    hosts: list[HostResult]
    rules: dict[str, RuleMeta]
    tool_version: str
    pack_version: str
    errors: list[HostError] = field(default_factory=list)
    compared_with_baseline: bool = False  # a baseline was given: a finding not in it is new
    notices: list[str] = field(default_factory=list)  # e.g. unused or expired suppressions
