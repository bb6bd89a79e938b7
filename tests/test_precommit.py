"""The real pre-commit, in a temporary git repository using this project as its hook repository:
a configuration PostgreSQL would refuse blocks the commit with file:line, the fixed one passes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PROJECT


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False, timeout=600)


@pytest.mark.slow
def test_pre_commit_blocks_a_broken_configuration(tmp_path: Path) -> None:
    if shutil.which("pre-commit") is None or shutil.which("git") is None:
        pytest.skip("pre-commit or git is not installed")
    # The hook repository must be a git repository with the hook definition committed: snapshot this
    # working tree (committed or not) into one.
    hook_repo = tmp_path / "hook-repo"
    shutil.copytree(PROJECT, hook_repo, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info",
                                                                        ".mypy_cache", ".pytest_cache", ".ruff_cache"))
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    assert git(hook_repo, "commit", "-qm", "snapshot").returncode == 0
    revision = git(hook_repo, "rev-parse", "HEAD").stdout.strip()

    repo = tmp_path / "config-repo"
    (repo / "db").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {revision}\n    hooks:\n      - id: pgvet\n"
        f"        args: [--fail-on, error]\n"
    )
    (repo / "db" / "host.yaml").write_text("pg_version: 16\n")
    (repo / "db" / "postgresql.conf").write_text("max_connections = 100\nshared_buffer = 1GB\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    git(repo, "add", "-A")
    blocked = subprocess.run(["pre-commit", "run", "--all-files"], cwd=repo, capture_output=True, text=True,
                             env=env, check=False, timeout=900)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "db/postgresql.conf:2: ERROR PGV401 unknown-parameter" in blocked.stdout
    assert "shared_buffers" in blocked.stdout

    (repo / "db" / "postgresql.conf").write_text("max_connections = 100\nshared_buffers = 1GB\n")
    git(repo, "add", "-A")
    passed = subprocess.run(["pre-commit", "run", "--all-files"], cwd=repo, capture_output=True, text=True,
                            env=env, check=False, timeout=900)
    assert passed.returncode == 0, passed.stdout + passed.stderr
