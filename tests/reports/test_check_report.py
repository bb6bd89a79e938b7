"""`pgvet check`'s report and questions without a server: what its OK rows say, what it asks (issue #30)."""

from __future__ import annotations

from dataclasses import replace

from conftest import FIXTURES
from pgvet.inputs.host_yaml import WORKLOADS
from pgvet.live.check import QUESTIONS, CheckOutcome
from pgvet.report import ReportOptions
from pgvet.report.check import render_check
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions


def test_an_ok_row_says_first_that_the_problem_is_not_there() -> None:
    # `[OK] values — PGV110: <the problem>: no` read as if the problem existed
    result = lint([FIXTURES / "well-tuned"], replace(LintOptions(), record_passes=True))
    text = render_check(CheckOutcome(result, FIXTURES / "well-tuned", kept=True), ReportOptions(color=False,
                                                                                                width=200))
    rows = [line for line in text.splitlines() if line.startswith("[OK]")]
    assert rows and all(" not the case: " in row for row in rows)
    title = result.rules["PGV110"].title
    [row] = [row for row in rows if "PGV110" in row]
    assert row.startswith(f"[OK]     PGV110 not the case: {title} — ")
    assert ": no" not in row


def test_the_workload_question_offers_every_workload_host_yaml_accepts() -> None:
    [workload] = [question for question in QUESTIONS if question.key == "workload"]
    assert workload.choices == WORKLOADS and "desktop" in workload.choices
