"""What a target is made of: the settings a fix writes, the changes and by-hand steps of a host's target,
and a pin (a setting the target must leave as it is)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

from pgvet.findings import Finding

if TYPE_CHECKING:
    from pgvet.engine.planner.world import World

Kind = Literal["sysctl", "postgresql"]
_PREFIXES: tuple[tuple[str, Kind], ...] = (("sysctl.", "sysctl"), ("sysctl_conf.", "sysctl"), ("pg.", "postgresql"),
                                           ("pg_conf.", "postgresql"))


class Setting(NamedTuple):
    """A value a fix writes: a kernel key (sysctl.d) or a PostgreSQL parameter (postgresql.conf). A named tuple:
    sets of them are intersected for every rule of every host."""

    kind: Kind
    name: str

    @property
    def fact(self) -> str:
        return f"{'sysctl' if self.kind == 'sysctl' else 'pg'}.{self.name}"

    @property
    def declared_fact(self) -> str:
        return f"{'sysctl_conf' if self.kind == 'sysctl' else 'pg_conf'}.{self.name}"

    def __str__(self) -> str:
        return self.name


def setting_of(fact: str) -> Setting | None:
    """The setting a fact name reads (``pg.work_mem``, ``sysctl_conf.vm.swappiness``), or None."""
    for prefix, kind in _PREFIXES:
        if fact.startswith(prefix):
            return Setting(kind, fact[len(prefix):])
    return None


@dataclass(slots=True)
class Change:
    """One setting of the target that differs from the host: what it is, what it becomes, and who asks."""

    setting: Setting
    current: str | None  # as the host has it (None: not set anywhere pgvet read)
    target: str  # as the fix writes it
    rules: list[str]  # "PGV110 huge-pages-on-pool-too-small", the most severe first
    why: str  # the first rule's title


@dataclass(slots=True)
class HandStep:
    """What the target leaves to a person: a setting pgvet will not change (pinned), or a rule's text fix."""

    text: str
    rules: list[str] = field(default_factory=list)
    setting: Setting | None = None


@dataclass(slots=True)
class Target:
    """A host's target configuration: the changes in the order they were decided, what is left by hand, and
    which findings still fire once it is applied (rule id, subject)."""

    changes: list[Change] = field(default_factory=list)
    # kernel values the host's own files declare and it does not run yet: `sysctl --system` or a reboot applies
    # them (with the changes), and the changes are worked out on the host as they make it
    declared_not_applied: list[Change] = field(default_factory=list)
    # the pins, then (Planner.fix_findings) the text fixes of the findings still firing, then what a running system
    # needs besides the document's edit for the changes to take effect (DocumentKind.running_steps)
    by_hand: list[HandStep] = field(default_factory=list)
    firing: frozenset[tuple[str, str | None]] = frozenset()
    # of those, the host's findings whose rules cannot be judged on the target (an evaluation error, a fact missing
    # there), with why: not known to be resolved, so counted as firing
    unjudged: dict[tuple[str, str | None], str] = field(default_factory=dict)
    # what fires only once the host's files are applied and its suppressions silence: a suppression used there is
    # used (judged again with the report's, which see the host as it runs)
    suppressed_once_booted: list[Finding] = field(default_factory=list)
    # the errors and warnings that fire only there, unsuppressed: the host's findings too (run/hosts.py adds them)
    found_once_booted: list[Finding] = field(default_factory=list)
    # the findings whose rules propose nothing on this host (suppressed, as it runs or once its files are applied)
    silenced: frozenset[tuple[str, str | None]] = frozenset()
    # the host as the target makes it, to render the findings' fixes on (Planner.fix_findings lets go of it)
    world: World | None = None

    def change(self, setting: Setting) -> Change | None:
        return next((change for change in self.changes if change.setting == setting), None)

    def pinned(self, setting: Setting) -> HandStep | None:
        return next((step for step in self.by_hand if step.setting == setting), None)


@dataclass(slots=True, eq=False, repr=False)
class Proposal:
    value: str
    rules: list[str]
    why: str


class Pin(Exception):
    """A setting the target must leave as it is, and why (raised while a target is worked out)."""

    def __init__(self, setting: Setting, reason: str) -> None:
        super().__init__(reason)
        self.setting = setting
        self.reason = reason


def label(finding: Finding) -> str:
    return f"{finding.rule_id} {finding.rule_name}"


def fix_settings(finding: Finding) -> Iterator[tuple[Setting, str]]:
    """The settings a finding's fix writes, with their values."""
    for name, value in finding.fix.sysctl.items():
        yield Setting("sysctl", name), value
    for name, value in finding.fix.postgresql.items():
        yield Setting("postgresql", name), value
