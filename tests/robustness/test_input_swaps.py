"""What pgvet checks of an input is what it opens: a local user who may write a host directory (pgvet runs as root
on database hosts) and swaps a checked file, or a directory on its path, for a symbolic link to /etc/shadow between
pgvet's check and its open gets nothing read. Every input beneath a host directory is opened from the directory's
descriptor a component at a time without following links (inputs/reading.py, open_input); a link inside the
directory is still read, one leading out is refused.

Each swap here happens exactly between the check and the open of the old design (a wrapped check step, or the
first stat or open of the file), never by a race."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgvet.cli import app
from pgvet.inputs import postgresql_conf
from pgvet.inputs.reading import LeadsOut, NotRegular, read_input
from pgvet.report.text import HostFiles
from pgvet.snapshot import load

runner = CliRunner()
SECRET = "root:$6$Zx9rTq.hash$:19000:0:99999:7:::"  # no word a report holds back as a secret


@pytest.fixture
def shadow(tmp_path: Path) -> Path:
    """A file outside every host directory that pgvet must never read (/etc/shadow), each line a secret, also
    well-formed as the inputs' lines so that a read of it would be judged and shown."""
    outside = tmp_path / "etc"
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_text("".join(f"kernel.shadow_{n} = {SECRET}\n" for n in range(20)))
    return secret


@pytest.fixture
def host(tmp_path: Path) -> Path:
    directory = tmp_path / "host"
    directory.mkdir()
    (directory / "sysctl.txt").write_text("vm.swappiness = 60\nvm.overcommit_memory = 0\n")
    (directory / "sysctl.d").mkdir()
    (directory / "sysctl.d" / "10-pg.conf").write_text("vm.swappiness = 1\n")
    (directory / "host.yaml").write_text("ram: 64GB\npg_version: 16\n")
    return directory


def swap(path: Path, target: Path) -> None:
    """``path`` (a file or a directory) replaced by a symbolic link to ``target``, as another user would."""
    if path.is_dir():
        path.rename(path.with_name(path.name + ".old"))
    else:
        path.unlink()
    path.symlink_to(target)


def swap_after_discovery(monkeypatch: pytest.MonkeyPatch, path: Path, target: Path) -> None:
    """Swap ``path`` the moment the host's inputs have been found and checked (snapshot/discovery.py), before any
    is read."""
    discover = load.discover

    def discovered_then_swapped(*args: object, **kwargs: object) -> object:
        found = discover(*args, **kwargs)  # type: ignore[arg-type]
        swap(path, target)
        return found

    monkeypatch.setattr(load, "discover", discovered_then_swapped)


def lint(host: Path) -> tuple[int, str, dict[str, object]]:
    result = runner.invoke(app, ["lint", "-f", "json", str(host)])
    return result.exit_code, result.output, json.loads(result.stdout)


def test_a_checked_input_swapped_for_a_link_out_is_refused_not_read(host: Path, shadow: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    swap_after_discovery(monkeypatch, host / "sysctl.txt", shadow)
    code, output, report = lint(host)
    assert SECRET not in output
    assert code == 2, output
    error = " ".join(str(each) for each in report["errors"])  # type: ignore[union-attr]
    assert "sysctl.txt" in error and "leads out of the directory" in error, error


def test_a_checked_directory_swapped_for_a_link_out_is_refused_not_read(host: Path, shadow: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = shadow.parent / "sysctl.d"
    elsewhere.mkdir()
    (elsewhere / "10-pg.conf").symlink_to(shadow)
    swap_after_discovery(monkeypatch, host / "sysctl.d", elsewhere)
    code, output, report = lint(host)
    assert SECRET not in output
    assert code == 2, output
    error = " ".join(str(each) for each in report["errors"])  # type: ignore[union-attr]
    # the file is shown as it resolved when it was found (where the link leads): what matters is that it is not read
    assert "leads out of the directory" in error and "sysctl.d" in error, error


def test_an_include_swapped_after_its_check_is_not_read(tmp_path: Path, shadow: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "host"
    (root / "conf.d").mkdir(parents=True)
    (root / "postgresql.conf").write_text("include 'conf.d/memory.conf'\n")
    included = root / "conf.d" / "memory.conf"
    included.write_text("work_mem = '4MB'\n")
    real_path = postgresql_conf._Loader.real_path

    def checked_then_swapped(loader: postgresql_conf._Loader, path: str) -> str:
        real = real_path(loader, path)
        if path == os.fspath(included) and not included.is_symlink():
            swap(included, shadow)
        return real

    monkeypatch.setattr(postgresql_conf._Loader, "real_path", checked_then_swapped)
    result = postgresql_conf.load_conf(root / "postgresql.conf", root=root, display_base=root)
    assert included.is_symlink()  # the swap happened
    assert not any(SECRET in setting.value for setting in result.settings)
    assert [(problem.kind, problem.target) for problem in result.problems] == [("outside-root",
                                                                                 "conf.d/memory.conf")]


@pytest.fixture
def swap_at_first_use(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path, Path], None]]:
    """Swap a file for a link the first time it is stat'ed or opened by name: after every check of its path
    (lstat, realpath), right before the old design's open."""

    def arm(path: Path, target: Path) -> None:
        real_stat, real_open = os.stat, os.open
        swapped: list[Path] = []

        def swapping(call: Callable[..., object]) -> Callable[..., object]:
            def first_use_swaps(name: object, *args: object, **kwargs: object) -> object:
                if (not swapped and isinstance(name, str | os.PathLike)
                        and os.path.basename(os.fspath(name)) == path.name):
                    swapped.append(path)
                    swap(path, target)
                return call(name, *args, **kwargs)
            return first_use_swaps

        monkeypatch.setattr(os, "stat", swapping(real_stat))
        monkeypatch.setattr(os, "open", swapping(real_open))

    yield arm


def test_a_report_quotes_no_line_of_a_file_swapped_after_its_check(host: Path, shadow: Path,
                                                                     swap_at_first_use: Callable[[Path, Path], None],
                                                                     ) -> None:
    files = HostFiles(str(host))
    swap_at_first_use(host / "sysctl.txt", shadow)
    assert files.line("sysctl.txt", 1) is None
    assert (host / "sysctl.txt").is_symlink()  # the swap happened


def test_links_inside_the_directory_are_read_and_links_out_refused(host: Path, shadow: Path) -> None:
    root = os.fspath(host)
    (host / "conf").mkdir()
    (host / "conf" / "real.txt").write_text("inside\n")
    (host / "same.txt").symlink_to("conf/real.txt")  # relative, to a file inside
    (host / "absolute.txt").symlink_to(host / "conf" / "real.txt")  # absolute, to a file inside
    (host / "dir").symlink_to("conf")  # a directory link inside
    (host / "up.txt").symlink_to("conf/../dir/real.txt")  # ``..`` that stays inside
    (host / "chain.txt").symlink_to("same.txt")
    for name in ("same.txt", "absolute.txt", "dir/real.txt", "up.txt", "chain.txt", "conf/../same.txt"):
        assert read_input(os.path.join(root, name), 100, root)[0] == b"inside\n", name
    (host / "out.txt").symlink_to(shadow)  # absolute, out
    (host / "out-relative.txt").symlink_to(os.path.relpath(shadow, host))
    (host / "etc").symlink_to(shadow.parent)  # a directory on the way, out
    (host / "to-out.txt").symlink_to("out.txt")  # a link inside to a link out
    (host / "self.txt").symlink_to(host / ".." / host.name / "conf" / "real.txt")  # as given, but through ``..``
    for name in ("out.txt", "out-relative.txt", "etc/shadow", "to-out.txt", "self.txt", "../etc/shadow"):
        with pytest.raises(LeadsOut):
            read_input(os.path.join(root, name), 100, root)
    (host / "loop").symlink_to("loop")
    with pytest.raises(OSError, match="symbolic links"):
        read_input(os.path.join(root, "loop"), 100, root)


def test_beneath_a_directory_only_a_regular_file_is_opened(host: Path) -> None:
    """A pipe planted under an input's name is no host file (it would keep pgvet waiting, or feed it what its
    writer chooses); a pipe the user names is read (tests/robustness/test_hostile_inputs.py)."""
    os.mkfifo(host / "meminfo.txt")
    with pytest.raises(NotRegular):
        read_input(os.fspath(host / "meminfo.txt"), 100, os.fspath(host))
    with pytest.raises(IsADirectoryError):
        read_input(os.fspath(host / "sysctl.d"), 100, os.fspath(host))


def test_a_host_whose_links_stay_inside_is_linted_as_before(host: Path) -> None:
    (host / "collected").mkdir()
    (host / "sysctl.txt").rename(host / "collected" / "sysctl.txt")
    (host / "sysctl.txt").symlink_to("collected/sysctl.txt")
    (host / "meminfo.txt").symlink_to(host / "collected" / "meminfo")
    (host / "collected" / "meminfo").write_text("MemTotal: 65536000 kB\n")
    result = runner.invoke(app, ["facts", str(host)])
    assert result.exit_code == 0, result.output
    assert "collected/sysctl.txt:1" in result.output and "collected/meminfo:1" in result.output, result.output
