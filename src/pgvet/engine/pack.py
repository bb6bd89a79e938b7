"""The compiled rule pack: plain picklable objects, what the hot path and the cache hold (no pydantic)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from pgvet.engine.interpreter import Compiled
from pgvet.engine.ir import Value
from pgvet.findings import RuleMeta, Severity
from pgvet.snapshot.facts import FactValue

# The largest rule file read: far above pgvet's own, and below the sizes YAML's parser takes seconds over.
MAX_RULE_FILE_CHARS = 1024 * 1024


class PackSource(NamedTuple):
    """One pack file: its path as shown, its text, and whether it belongs to pgvet's own pack."""

    path: str
    text: str
    builtin: bool = False


# A message or fix template: literal text and (expression, format) holes.
Template = tuple["str | tuple[Compiled, str | None]", ...]


class ParamSpec(NamedTuple):
    default: FactValue
    description: str = ""


class FixSpec(NamedTuple):
    """The fix as written (templates unrendered), for `pgvet explain` and the rule reference."""

    sysctl: dict[str, str]
    postgresql: dict[str, str]
    text: str | None


class FixTemplates(NamedTuple):
    sysctl: tuple[tuple[str, Template], ...] = ()
    postgresql: tuple[tuple[str, Template], ...] = ()
    text: Template | None = None


class Example(NamedTuple):
    facts: dict[str, FactValue | None]
    expect: str  # fire | pass | skip
    values: dict[str, FactValue | None] | None = None
    params: dict[str, FactValue] | None = None
    item: dict[str, FactValue | None] | None = None
    line: int | None = None
    fix: dict[str, str | None] | None = None  # settings the rule's own fix writes (None: not computed)


@dataclass(slots=True, eq=False, repr=False)
class DerivedFormula:
    name: str
    formula: str
    description: str
    unit: str
    file: str
    line: int | None
    compiled: Compiled
    item_scope: str | None = None  # the item scope it reads (directly or through other derived facts)
    inputs: tuple[str, ...] = ()  # every fact it reads, other derived facts expanded, first-read order
    params: dict[str, ParamSpec] = field(default_factory=dict)
    param_values: Mapping[str, Value] = field(default_factory=dict)  # the defaults, or the configuration's
    predicts: str | None = None  # the measured fact it stands for once a fix changes its inputs (the planner's)
    as_captured: bool = False  # kept as computed on the host as captured, in every world the planner makes


@dataclass(slots=True, eq=False, repr=False)
class Rule:
    id: str
    name: str
    title: str
    severity: Severity
    tags: tuple[str, ...]
    scope: str
    applies: str | None
    when: str
    message: str
    values: dict[str, str]
    params: dict[str, ParamSpec]
    param_defaults: dict[str, Value]  # '4GB' already in bytes
    fix: FixSpec | None
    subject: str | None
    location: str | None
    why: str
    references: tuple[str, ...]
    examples: tuple[Example, ...]
    file: str
    line: int | None
    applies_expr: Compiled | None
    when_expr: Compiled
    value_exprs: tuple[tuple[str, Compiled], ...]
    message_template: Template
    fix_templates: FixTemplates | None
    subject_template: Template | None
    evidence_names: tuple[str, ...]  # every fact read anywhere in the rule, derived facts then their inputs
    location_names: tuple[str, ...]  # where the finding points: `location`, else the facts `when` reads
    # a finding's help text, stripped once per rule rather than per finding (and pickled with the rule)
    help: str = field(init=False)

    def __post_init__(self) -> None:
        self.help = self.why.strip()

    def meta(self) -> RuleMeta:
        return RuleMeta(id=self.id, name=self.name, title=self.title, severity=self.severity, tags=self.tags,
                        why=self.why, references=self.references)


@dataclass(slots=True, eq=False, repr=False)
class RulePack:
    rules: list[Rule]
    derived: list[DerivedFormula]
    version: str  # hash of the pack files' contents
    files: tuple[str, ...] = ()
    derived_by_name: dict[str, DerivedFormula] = field(default_factory=dict)
    by_key: dict[str, Rule] = field(default_factory=dict)  # by id and by name

    def __post_init__(self) -> None:
        self.derived_by_name = {formula.name: formula for formula in self.derived}
        self.by_key = {key: rule for rule in self.rules for key in (rule.id, rule.name)}

    def meta(self) -> dict[str, RuleMeta]:
        return {rule.id: rule.meta() for rule in self.rules}

    def with_derived_params(self, values: Mapping[str, Mapping[str, Value]]) -> RulePack:
        """The pack with these derived formulas' parameters (by derived name; validated by the caller): a new
        pack sharing the rules, so that a pack loaded once is never changed by one run's configuration."""
        if not values:
            return self
        derived = [replace(formula, param_values={**formula.param_values, **values[formula.name]})
                   if formula.name in values else formula for formula in self.derived]
        return replace(self, derived=derived)

    def rule(self, key: str) -> Rule | None:
        """A rule by id (any case) or name."""
        return self.by_key.get(key) or self.by_key.get(key.upper())
