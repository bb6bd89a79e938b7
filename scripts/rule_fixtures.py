"""Write fixtures/rules/README.md: each fixture host built for one rule, the case it shows, what pgvet says.

    python scripts/rule_fixtures.py > fixtures/rules/README.md

tests/rules/test_rule_fixtures.py checks that the committed README is what this prints, so the table always shows
the findings pgvet gives today, and that each host fires the rule it was built for.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgvet.findings import Finding
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

PROJECT = Path(__file__).resolve().parent.parent
RULE_FIXTURES = PROJECT / "fixtures" / "rules"

HEADER = """\
# Fixture hosts, one per rule

Each directory is a host built to show one rule of the kernel, storage, CPU and consistency families
(catalogue sections A, B, C and L): the fewest input files that make the case, written as the tools
write them (`sysctl -a`, `/proc/meminfo`, `lscpu`, `/proc/mounts`, a sysfs dump, `postgresql.conf`,
`host.yaml`, the `pg_settings.json` of `pgvet collect`). Its `host.yaml` opens with the case in a
comment. Where a host needs a PostgreSQL configuration, the settings that are not the rule's case are
tuned as on `fixtures/well-tuned`, so only the case shows; `fixtures/well-tuned` is the passing example
of every rule (nothing fires there).

    pgvet lint fixtures/rules/PGV110-huge-pages-on-pool-too-small
    pgvet lint fixtures/rules/*/                 # all of them, with the fleet summary

The table below is the output of `python scripts/rule_fixtures.py` (a test keeps it current): the
finding of the rule the host was built for, and any other rule that fires there.

| host | the case | what pgvet says | also fires |
|---|---|---|---|
"""


def case_of(host: Path) -> str:
    """The comment opening host.yaml, without the rule id it starts with."""
    lines = []
    for line in (host / "host.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").rstrip())
    text = " ".join(lines)
    return text.split(": ", 1)[1] if ": " in text else text


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def readme() -> str:
    hosts = sorted(path for path in RULE_FIXTURES.iterdir() if (path / "host.yaml").is_file())
    result = lint(hosts, LintOptions())
    if result.errors:
        raise SystemExit(f"fixture hosts failed to lint: {result.errors}")
    rows = []
    for host, path in zip(result.hosts, hosts, strict=True):
        rule_id = path.name.split("-", 1)[0]
        own: list[Finding] = [finding for finding in host.findings if finding.rule_id == rule_id]
        others = sorted({finding.rule_id for finding in host.findings} - {rule_id})
        said = "<br>".join(cell(f"**{f.rule_id}** {f.severity}: {f.message}") for f in own) or "**does not fire**"
        rows.append(f"| [{path.name}]({path.name}/) | {cell(case_of(path))} | {said} | {', '.join(others) or '—'} |\n")
    return HEADER + "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(readme())
