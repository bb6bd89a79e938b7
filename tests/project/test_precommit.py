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


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This working tree (committed or not) as a hook repository: a git repository with the hook definition
    committed, and its revision."""
    if shutil.which("pre-commit") is None or shutil.which("git") is None:
        pytest.skip("pre-commit or git is not installed")
    hook_repo = tmp_path_factory.mktemp("hooks") / "hook-repo"
    shutil.copytree(PROJECT, hook_repo, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info",
                                                                        ".mypy_cache", ".pytest_cache", ".ruff_cache"))
    git(hook_repo, "init", "-q")
    git(hook_repo, "add", "-A")
    assert git(hook_repo, "commit", "-qm", "snapshot").returncode == 0
    return hook_repo, git(hook_repo, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook's environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def config_repo(path: Path, hook_repo: tuple[Path, str], args: str = "[--fail-on, error]") -> Path:
    """A git repository using the pgvet hook of ``hook_repo`` with ``args``."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo[0]}\n    rev: {hook_repo[1]}\n    hooks:\n      - id: pgvet\n"
        f"        args: {args}\n"
    )
    return path


def pre_commit(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    git(repo, "add", "-A")
    return subprocess.run(["pre-commit", "run", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "PRE_COMMIT_HOME": str(home)}, check=False, timeout=900)


@pytest.mark.slow
def test_pre_commit_blocks_a_broken_configuration(tmp_path: Path, hook_repo: tuple[Path, str],
                                                  pre_commit_home: Path) -> None:
    repo = config_repo(tmp_path / "config-repo", hook_repo)
    (repo / "db").mkdir()
    (repo / "db" / "host.yaml").write_text("pg_version: 16\n")
    (repo / "db" / "postgresql.conf").write_text("max_connections = 100\nshared_buffer = 1GB\n")
    blocked = pre_commit(repo, pre_commit_home, "--all-files")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "db/postgresql.conf:2: ERROR PGV401 unknown-parameter" in blocked.stdout
    assert "shared_buffers" in blocked.stdout

    (repo / "db" / "postgresql.conf").write_text("max_connections = 100\nshared_buffers = 1GB\n")
    passed = pre_commit(repo, pre_commit_home, "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr


@pytest.mark.slow
def test_pre_commit_blocks_an_unreadable_host_committed_with_another(tmp_path: Path, hook_repo: tuple[Path, str],
                                                                     pre_commit_home: Path) -> None:
    # pre-commit passes the files of every host changed together: a host that cannot be read must block
    # the commit whatever else is committed with it (a fleet run would only report it).
    repo = config_repo(tmp_path / "config-repo", hook_repo)
    for host in ("a", "b"):
        (repo / host).mkdir()
        (repo / host / "postgresql.conf").write_text("max_connections = 100\n")
    (repo / "a" / "host.yaml").write_text("pg_version: [16\n")
    (repo / "b" / "host.yaml").write_text("pg_version: 16\n")
    blocked = pre_commit(repo, pre_commit_home, "--all-files")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "exit code: 2" in blocked.stdout
    assert "invalid YAML" in blocked.stdout


@pytest.mark.slow
def test_pre_commit_lints_a_patroni_file_and_leaves_other_yaml_alone(tmp_path: Path, hook_repo: tuple[Path, str],
                                                                      pre_commit_home: Path) -> None:
    # the hook's pattern takes every YAML file (configuration documents have any name): the repository's own
    # .pre-commit-config.yaml and a CI workflow are passed too, and must not block the commit
    repo = config_repo(tmp_path / "config-repo", hook_repo)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    (repo / "patroni").mkdir()
    member = "scope: main\nname: pg-1\nrestapi:\n  listen: :8008\npostgresql:\n  parameters:\n    wal_levle: replica\n"
    (repo / "patroni" / "pg-1.yml").write_text(member)
    blocked = pre_commit(repo, pre_commit_home, "--all-files")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "patroni/pg-1.yml:7: ERROR PGV401 unknown-parameter" in blocked.stdout
    assert "exit code: 2" not in blocked.stdout

    (repo / "patroni" / "pg-1.yml").write_text(member.replace("wal_levle", "wal_level"))
    passed = pre_commit(repo, pre_commit_home, "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr
