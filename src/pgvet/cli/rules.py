"""`pgvet rules`: list the rules, or test a rule pack's examples."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from pgvet.cli.errors import reports_errors
from pgvet.cli.options import RulePacksOpt
from pgvet.engine.examples import run_examples
from pgvet.engine.loader import load_pack
from pgvet.errors import UsageError
from pgvet.report import visible, without_commands
from pgvet.report.rules import render_rules

app = typer.Typer(help="List the rules, or test a rule pack's examples.", invoke_without_command=True)


@app.callback()
@reports_errors
def rules_list(
    ctx: typer.Context,
    output_format: Annotated[str, typer.Option("--format", "-f", help="text, json or markdown.")] = "text",
    rules: RulePacksOpt = None,
) -> None:
    """List the rules (text, json, or the markdown rule reference)."""
    if ctx.invoked_subcommand is not None:
        return

    if output_format not in ("text", "json", "markdown"):
        raise UsageError(f"--format must be text, json or markdown, not {output_format!r}")
    sys.stdout.write(without_commands(render_rules(load_pack(list(rules or [])), output_format)))


@app.command("test")
@reports_errors
def rules_test(
    directories: Annotated[list[Path], typer.Argument(help="Rule pack directories whose examples to run.")],
) -> None:
    """Run every example of the rules in a pack; exit 1 when one fails."""
    pack = load_pack(directories, builtin=True)
    own = {rule.id for rule in pack.rules if any(_is_within(rule.file, directory) for directory in directories)}
    failures = [failure for failure in run_examples(pack) if failure.rule_id in own]
    examples = sum(len(rule.examples) for rule in pack.rules if rule.id in own)
    for failure in failures:
        typer.echo(without_commands(visible(str(failure))))
    typer.echo(f"{examples - len(failures)} passed, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


def _is_within(file: str, directory: Path) -> bool:
    try:
        Path(file).resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True
