"""A repository's symbolic link does not choose the host pgvet reads or writes: a host directory given inside a
repository (the nearest directory above it holding .git) that resolves outside it is refused, as an include, an
input or a configuration's path that leads out is. ``pgvet lint repo/*`` or ``pgvet fix --write repo/db`` run as
root on a database host would otherwise read /var/lib/postgresql's files into a CI log, or rewrite /etc's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app

runner = CliRunner()
OUTSIDE_CONF = "shared_buffers = 100GB\nwork_mem = 'OutsideValue'\n"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository with a host of its own, a link to it, and links (one named as a YAML document) to a host
    directory outside it."""
    outside = tmp_path / "etc-postgresql"
    outside.mkdir()
    (outside / "postgresql.conf").write_text(OUTSIDE_CONF)
    (outside / "host.yaml").write_text("ram: 8GB\npg_version: 16\n")
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "db").mkdir()
    (repository / "db" / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    (repository / "same-db").symlink_to("db")
    (repository / "prod").symlink_to(outside)
    (repository / "evil.yaml").symlink_to(outside)
    other = tmp_path / "etc"  # a repository of its own (etckeeper's /etc): still not this one
    (other / ".git").mkdir(parents=True)
    shutil.copytree(outside, other / "postgresql")
    (repository / "etc").symlink_to(other)
    (repository / "hosts").mkdir()
    (repository / "hosts" / "db").symlink_to(other / "postgresql")
    return repository


@pytest.mark.parametrize("given", ["prod", "evil.yaml", "prod/postgresql.conf", "db/../prod", "etc/postgresql",
                                   "hosts/db", "same-db/../prod"])
def test_a_host_a_repository_link_leads_out_to_is_not_read(repository: Path, monkeypatch: pytest.MonkeyPatch,
                                                            given: str) -> None:
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["lint", "-f", "json", given, "db"])
    assert result.exit_code == 2, result.output
    assert "OutsideValue" not in result.output
    report = json.loads(result.stdout)
    assert {finding["host"] for finding in report["findings"]} == {"db"}
    error = " ".join(str(each) for each in report["errors"])
    assert "leads out of its repository" in error, error
    if given.endswith(".conf"):
        return  # facts and fix take a directory
    for command in (["facts", given], ["fix", given]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "leads out of its repository" in result.stderr, result.output
        assert "OutsideValue" not in result.output


def test_a_repository_link_out_says_nothing_of_what_is_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pre-commit passes a link the repository commits as a file: a link out to nothing, or to a file, was "not a
    # directory", one to a directory "leads out of its repository" (the link's check came after the directory's), so
    # the error told whether the runner had a directory where it leads (/home/runner/.ssh).
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    target = tmp_path / "target"
    (repository / "lnk").symlink_to(target)
    monkeypatch.chdir(repository)
    outputs = []
    for there in ("nothing", "file", "directory"):
        if there == "file":
            target.write_text("")
        elif there == "directory":
            target.unlink()
            target.mkdir()
        for command in (["lint", "--format", "concise", "lnk"], ["facts", "lnk"], ["fix", "lnk"]):
            result = runner.invoke(app, command)
            outputs.append((there, command[0], result.exit_code, result.output))
    for command in ("lint", "facts", "fix"):
        shown = {(code, output) for there, name, code, output in outputs if name == command}
        assert len(shown) == 1, shown
        [(code, output)] = shown
        assert code == 2 and "leads out of its repository" in output, output


def test_fix_write_does_not_write_through_a_repository_link(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repository)
    outside = repository.parent / "etc-postgresql"
    before = sorted(path.name for path in outside.iterdir())
    result = runner.invoke(app, ["fix", "--write", "prod"])
    assert result.exit_code == 2, result.output
    assert sorted(path.name for path in outside.iterdir()) == before
    assert (outside / "postgresql.conf").read_text() == OUTSIDE_CONF


def test_links_within_the_repository_and_outside_any_repository_are_followed(repository: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["lint", "-f", "json", "same-db"])
    assert result.exit_code in (0, 1), result.output
    fleet = tmp_path / "fleet"  # the user's own directory of snapshots, in no repository
    fleet.mkdir()
    (fleet / "prod").symlink_to(tmp_path / "etc-postgresql")
    result = runner.invoke(app, ["lint", "-f", "json", str(fleet / "prod")])
    assert result.exit_code == 1 and "OutsideValue" in result.stdout, result.output


def test_no_output_is_written_through_a_repository_link(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pgvet lint . -o reports/pgvet.sarif` in a CI template, on a repository whose `reports` links to
    /etc/cron.d: the report went there, as root."""
    monkeypatch.chdir(repository)
    elsewhere = repository.parent / "cron.d"
    elsewhere.mkdir()
    (repository / "reports").symlink_to(elsewhere)
    for command in (["lint", "db", "-f", "sarif", "-o", "reports/pgvet.sarif"],
                    ["baseline", "create", "db", "-o", "reports/baseline.json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "leads out of its repository" in result.stderr, result.stderr
    assert list(elsewhere.iterdir()) == []


OUTSIDE_CLUSTER = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: orders\nspec:\n  postgresql:\n"
                   "    parameters:\n      application_name: OutsideValue\n")


@pytest.mark.parametrize("component", ["../../../component", "../../linked", "{outside}"])
def test_a_kustomize_component_out_of_the_repository_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 component: str) -> None:
    """An overlay's components are read with it, inside its repository: one that leads out of it (``../``, a link
    of the repository, an absolute path) is refused at its line, and nothing of it is read."""
    outside = tmp_path / "component"
    outside.mkdir()
    (outside / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                                "patches:\n  - path: cluster.yaml\n")
    (outside / "cluster.yaml").write_text(OUTSIDE_CLUSTER)
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "linked").symlink_to(outside)
    overlay = repository / "overlays" / "prod"
    overlay.mkdir(parents=True)
    entry = component.format(outside=outside)
    (overlay / "kustomization.yaml").write_text(f"resources:\n  - ../../base\ncomponents:\n  - {entry}\n")
    refused = f"component {entry}: refused, it lies outside the repository: pgvet reads"
    monkeypatch.chdir(repository)
    # nothing else to lint: the directory holds no input (exit 2), and says why; and nothing where the component
    # leads is looked up (it was resolved with os.path.realpath: an automounter's /net/HOST mounts from that host)
    looked_up: list[str] = []
    lstat = os.lstat

    def recorded(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if kwargs.get("dir_fd") is None:
            looked_up.append(os.fspath(path))
        return lstat(path, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "lstat", recorded)
        alone = runner.invoke(app, ["lint", "overlays/prod", "--format", "concise"])
    assert not [path for path in looked_up if path.startswith(str(outside))], looked_up
    assert alone.exit_code == 2 and "OutsideValue" not in alone.output, alone.output
    assert f"no inputs found (kustomization.yaml:4: {refused}" in alone.output, alone.output
    if "{" not in component:  # where a relative path or a link resolves, outside, is not said
        assert str(outside) not in alone.output, alone.output
    # beside a document of its own, the overlay is linted without it: a warning at the component's line
    with (overlay / "kustomization.yaml").open("a") as kustomization:
        kustomization.write("patches:\n  - path: own.yaml\n")
    (overlay / "own.yaml").write_text(OUTSIDE_CLUSTER.replace("OutsideValue", "orders"))
    result = runner.invoke(app, ["lint", ".", "--format", "concise"])
    assert result.exit_code == 0 and "OutsideValue" not in result.output, result.output
    assert f"overlays/prod/kustomization.yaml:4: WARNING input: {refused}" in result.output, result.output


def test_a_file_whose_name_reads_as_an_option_is_linted_not_obeyed(tmp_path: Path) -> None:
    """pre-commit passes a repository's files after the hook's options, without `--`: a directory `-o` made
    `-o/…/settings.yaml` an --output, and pgvet's report replaced a file of the user's outside the repository;
    `--config=/…` gave pgvet a configuration it trusts, whose paths may leave the repository."""
    victim = tmp_path / "home" / "settings.yaml"
    victim.parent.mkdir()
    victim.write_text("the user's\n")
    (tmp_path / "pgvet.yaml").write_text('ignore = ["PGV"]\n')  # TOML all the same, named as the hook's files
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    shutil.copytree(FIXTURES / "small-vm", repository / "db")
    passed = [f"-o{victim}", f"--output={victim}", f"--config={tmp_path / 'pgvet.yaml'}"]
    for name in passed:
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        (repository / name).write_text("name: x\n")  # a YAML file, as the hook's `files` pattern takes
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "--format", "concise", *passed, "db/postgresql.conf"],
                          cwd=repository, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PRE_COMMIT": "1"})
    assert done.returncode == 1, done.stdout + done.stderr  # the host's findings, none ignored
    assert "PGV" in done.stdout
    assert victim.read_text() == "the user's\n"
    for name in passed:
        assert f"notice: {name}: not linted" in done.stdout, done.stdout  # a YAML file that is no document
    # options are still options, `-` and `--` what they are
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "-f", "concise", "-o", "-", "--", "db"],
                          cwd=repository, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "PGV" in done.stdout, done.stderr


def test_the_default_baseline_is_not_read_through_a_link_out_of_the_repository(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`pgvet baseline update db` reads pgvet-baseline.json, named by no one: the repository's link to a JSON file
    outside was read (as root: a file only root may read), its errors telling what it holds."""
    outside = tmp_path / "secret.json"
    outside.write_text('{"format": 1, "findings": {}}\n')
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    shutil.copytree(FIXTURES / "small-vm", repository / "db")
    (repository / "pgvet-baseline.json").symlink_to(outside)
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["baseline", "update", "db"])
    assert result.exit_code == 2
    assert (f"pgvet-baseline.json: a symbolic link that leads out of its repository {repository}: "
            "not read") in result.stderr
    (repository / "pgvet-baseline.json").unlink()
    (repository / "baselines").mkdir()
    (repository / "baselines" / "b.json").write_text('{"format": 1, "findings": {}}\n')
    (repository / "pgvet-baseline.json").symlink_to("baselines/b.json")  # inside: read; written? never through a link
    result = runner.invoke(app, ["baseline", "update", "db"])
    assert result.exit_code == 2 and "a symbolic link: pgvet writes no file through a link" in result.stderr
    assert runner.invoke(app, ["baseline", "update", "db", "-o", str(outside)]).exit_code == 0  # named: the user's


GIT_CONFIG = ('[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic '
              'c2VjcmV0VE9LRU4=\n')


@pytest.mark.parametrize("how", ["include", "dotdot", "link", "absolute-link", "include-dir-link"])
def test_no_file_of_git_itself_is_read_as_a_host_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       how: str) -> None:
    """A repository linted from its root (pre-commit's host directory when postgresql.conf lies there) chose to
    read `.git/config`, where actions/checkout keeps the job's token: `include '.git/config'` had the text
    report quote `extraheader = AUTHORIZATION: basic …` in a syntax error. A clone brings no file of .git."""
    repository = tmp_path / "repo"
    shutil.copytree(FIXTURES / "small-vm", repository)
    (repository / ".git").mkdir()
    (repository / ".git" / "config").write_text(GIT_CONFIG)
    conf = repository / "postgresql.conf"
    (repository / "conf.d").mkdir()
    if how == "include":
        conf.write_text(conf.read_text() + "include '.git/config'\n")
    elif how == "dotdot":
        conf.write_text(conf.read_text() + "include 'conf.d/../.git/config'\n")
    elif how == "link":
        (repository / "conf.d" / "git.conf").symlink_to("../.git/config")
        conf.write_text(conf.read_text() + "include 'conf.d/git.conf'\n")
    elif how == "absolute-link":
        (repository / "conf.d" / "git.conf").symlink_to(repository / ".git" / "config")
        conf.write_text(conf.read_text() + "include 'conf.d/git.conf'\n")
    else:
        (repository / "conf.d" / "git.conf").symlink_to("../.git/config")
        conf.write_text(conf.read_text() + "include_dir 'conf.d'\n")
    monkeypatch.chdir(repository)
    for report in ("text", "html", "json"):
        result = runner.invoke(app, ["lint", "-f", report, "."])
        assert "c2VjcmV0VE9LRU4" not in result.output and "extraheader" not in result.output, result.output
        assert "Traceback" not in result.output
    result = runner.invoke(app, ["lint", "-f", "json", "."])
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    assert any("in a git directory" in finding["message"] for finding in findings), findings
