"""pgvet's own rule files: one id block each, as docs/rule-authoring.md lists them, rules in id order."""

from __future__ import annotations

from pathlib import Path

from conftest import PROJECT
from pgvet.engine.loader import builtin_rules_dir, load_pack

# The blocks that hold two files, split at the first id of their second sub-family.
SPLIT_BLOCKS = {"pgv1xx-kernel-tuning.yaml": 130, "pgv9xx-live.yaml": 950}


def test_each_rule_is_in_its_id_blocks_file() -> None:
    for rule in load_pack().rules:
        name = Path(rule.file).name
        number = int(rule.id.removeprefix("PGV"))
        assert name.startswith(f"pgv{number // 100}xx-"), f"{rule.id} is in {name}"
        for split_file, first in SPLIT_BLOCKS.items():
            if split_file.startswith(name[:6]):
                assert (name == split_file) == (number >= first), f"{rule.id} is in {name}"


def test_pack_evaluates_rules_in_id_order() -> None:
    ids = [rule.id for rule in load_pack().rules]
    assert ids == sorted(ids, key=lambda rule_id: int(rule_id.removeprefix("PGV")))


def test_rule_authoring_lists_every_rule_file() -> None:
    documented = (PROJECT / "docs" / "rule-authoring.md").read_text(encoding="utf-8")
    for path in sorted(builtin_rules_dir().glob("pgv*.yaml")):
        assert f"`{path.name}`" in documented, path.name
