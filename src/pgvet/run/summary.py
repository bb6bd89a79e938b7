"""What a run adds up to: counts by severity, and for a fleet the hosts with the most findings and the
findings on the most hosts. Kept while hosts stream past (the reports hold no host after writing it),
so its size does not grow with the number of hosts: the host table keeps its first TOP_HOSTS rows only.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from pgvet.findings import SEVERITY_RANK, Finding, HostResult, LintResult

TOP_HOSTS = 20  # rows of the fleet's host table (the rest are counted, not listed)
TOP_RULES = 10  # rows of the text report's most frequent findings (JSON lists every rule that fired)
SEVERITIES = ("error", "warning", "info")


class HostRow(NamedTuple):
    """One host of the fleet table: its counted findings (neither suppressed nor in the baseline)."""

    host: str
    error: int
    warning: int
    info: int


@dataclass(slots=True, eq=False, repr=False)
class RuleRow:
    rule_id: str
    rule_name: str
    severity: str
    hosts: int = 0


@dataclass(slots=True, eq=False, repr=False)
class RunSummary:
    """Counts of a run, fed host by host (``add``, ``add_error``)."""

    hosts: int = 0
    hosts_failed: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # counted findings by severity
    suppressed: int = 0
    baseline: int = 0  # in the baseline, suppressed or not
    baseline_only: int = 0  # in the baseline and not suppressed
    not_evaluated: int = 0
    hosts_by_worst: Counter[str] = field(default_factory=Counter)  # error / warning / info / clean
    rules: dict[str, RuleRow] = field(default_factory=dict)
    _top: list[tuple[int, int, int, int, HostRow]] = field(default_factory=list)  # a heap: the least bad first

    @classmethod
    def of(cls, result: LintResult) -> RunSummary:
        summary = cls()
        for host in result.hosts:
            summary.add(host)
        summary.hosts_failed = len(result.errors)
        return summary

    def add(self, host: HostResult) -> None:
        counts: Counter[str] = Counter()
        fired: dict[str, Finding] = {}  # the first counted finding of each rule
        for finding in host.findings:
            self.baseline += finding.baseline
            if finding.suppressed is not None:
                self.suppressed += 1
            elif finding.baseline:
                self.baseline_only += 1
            else:
                counts[finding.severity] += 1
                if finding.rule_id not in fired:
                    fired[finding.rule_id] = finding
        self.hosts += 1
        self.counts.update(counts)
        self.not_evaluated += len(host.not_evaluated)
        self.hosts_by_worst[next((severity for severity in SEVERITIES if counts[severity]), "clean")] += 1
        for rule_id, finding in fired.items():
            rule = self.rules.get(rule_id)
            if rule is None:  # a row made once a run, not once a finding
                rule = self.rules[rule_id] = RuleRow(rule_id, finding.rule_name, finding.severity)
            rule.hosts += 1
        row = HostRow(host.host_facts.name, counts["error"], counts["warning"], counts["info"])
        # the worst hosts, earlier ones first among equals: keep the TOP_HOSTS largest keys
        heapq.heappush(self._top, (row.error, row.warning, row.info, -self.hosts, row))
        if len(self._top) > TOP_HOSTS:
            heapq.heappop(self._top)

    def add_error(self) -> None:
        self.hosts_failed += 1

    def top_hosts(self) -> list[HostRow]:
        """The hosts with the most errors, then warnings, then info; at most TOP_HOSTS."""
        return [entry[-1] for entry in sorted(self._top, key=lambda entry: entry[:4], reverse=True)]

    def top_rules(self) -> list[RuleRow]:
        """The rules that fired, on the most hosts first (then by severity and id)."""
        return sorted(self.rules.values(), key=lambda row: (-row.hosts, -SEVERITY_RANK[row.severity], row.rule_id))

    def is_fleet(self) -> bool:
        """More than one host linted: the reports add the fleet summary."""
        return self.hosts > 1

    def exit_code(self, fail_on: str, *, allow_unreadable: bool = False) -> int:
        """0: nothing at or above fail_on; 1: findings; 2: a host could not be read (with ``allow_unreadable``,
        only when none could)."""
        if self.hosts_failed and (not allow_unreadable or not self.hosts):
            return 2
        threshold = SEVERITY_RANK[fail_on]
        return 1 if any(self.counts[severity] for severity in SEVERITIES if SEVERITY_RANK[severity] >= threshold) else 0
