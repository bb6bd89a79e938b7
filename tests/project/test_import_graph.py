"""pgvet's modules import each other without a cycle, counting the imports inside functions too (issue #27: no
cycle hidden by an import inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pgvet"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The pgvet modules a file imports at run time: at its top or inside a function, not in an
    ``if TYPE_CHECKING:`` block (annotations only); ``from pgvet.cli import lint`` imports the module
    pgvet.cli.lint when there is one."""
    found: set[str] = set()

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pgvet"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("pgvet"))
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(ast.parse(path.read_text()))
    return found


def _graph() -> dict[str, set[str]]:
    files = list(PACKAGE.rglob("*.py"))
    modules = {_module(path) for path in files}
    return {_module(path): _imports(path, modules) - {_module(path)} for path in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        for imported in sorted(graph.get(module, ())):
            if imported in path:
                return [*path[path.index(imported):], imported]
            if imported not in done:
                found = visit(imported, [*path, imported])
                if found:
                    return found
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module, [module])
        if found:
            return found
    return None


def test_no_import_cycle_in_pgvet() -> None:
    assert _cycle(_graph()) is None


def test_the_cycle_check_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
