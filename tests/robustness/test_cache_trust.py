"""The cache directory holds code (the pickled rule pack) and what decides how `pgvet lint` reads its command
line: pgvet uses it only when no other user could have written it (issue #25, item 3)."""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from as_user import NOBODY_UID, needs_root, run_as, shared_directory
from conftest import FIXTURES
from pgvet import cache, trust
from pgvet.engine.loader import load_pack


class _Planted:
    """A pickle that, loaded, creates a file: what another user would plant to run code as the one who lints."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test says its refusals again (a process says each once)."""
    monkeypatch.setattr(cache, "_said", set())
    monkeypatch.setattr(cache, "_quiet", False)


@pytest.fixture
def warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory holding the compiled built-in pack."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("PGVET_CACHE_DIR", str(directory))
    load_pack()
    return directory


def plant(cache_directory: Path, marker: Path) -> Path:
    (pack,) = cache_directory.glob("rules-*.pickle")
    pack.write_bytes(pickle.dumps(_Planted(marker)))
    return pack


def test_the_planted_pickle_runs_from_ones_own_cache(warm: Path, tmp_path: Path) -> None:
    """The attack's setup is sound: a pickle loaded from the cache runs (the cache is trusted when it is one's own;
    the tests below show it is not otherwise)."""
    marker = tmp_path / "ran"
    plant(warm, marker)
    assert load_pack().rules
    assert marker.exists()


@needs_root
@pytest.mark.parametrize("where", ["file", "directory"])
def test_a_pickle_another_user_owns_does_not_run(warm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 where: str) -> None:
    marker = tmp_path / "ran"
    pack = plant(warm, marker)
    os.chown(pack if where == "file" else warm, NOBODY_UID, NOBODY_UID)
    assert load_pack().rules  # compiled instead
    assert not marker.exists()
    named = pack if where == "file" else warm
    kind = "cache file" if where == "file" else "cache directory"
    assert capsys.readouterr().err == (f"pgvet: notice: {kind} {named} not used: owned by uid {NOBODY_UID}, not by "
                                       f"you (uid 0); the rule pack is compiled each time until it is fixed\n")


@pytest.mark.parametrize(("mode", "said"), [(0o777, "writable by other users (mode 0777)"),
                                            (0o1777, "writable by other users (mode 1777)"),
                                            (0o770, "writable by other users (mode 0770)")])
def test_a_cache_directory_others_may_write_to_is_not_used(warm: Path, tmp_path: Path, mode: int, said: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    plant(warm, marker)
    if mode == 0o770:  # group-writable by a group that is not one's own private group (no such group: not private)
        os.chown(warm, os.geteuid(), 54321)
    warm.chmod(mode)
    assert load_pack().rules and not marker.exists()
    assert said in capsys.readouterr().err
    assert not list(warm.glob(".rules-*"))  # nor written to


def test_a_group_another_user_has_as_primary_group_is_not_private(warm: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``useradd -g alice mallory``: alice's group lists no member, yet mallory writes what it may write. A
    group-writable file of alice's (umask 002), filled by mallory and hard linked over her pack, ran as alice
    (/tmp/a4/repro/private_group.py did it with two real users)."""
    import grp
    import pwd

    user = pwd.getpwuid(os.geteuid())
    if grp.getgrgid(user.pw_gid).gr_name != user.pw_name or set(grp.getgrgid(user.pw_gid).gr_mem) - {user.pw_name}:
        pytest.skip("the user running the tests has no private group")
    marker = tmp_path / "ran"
    pack = plant(warm, marker)
    os.chown(warm, os.geteuid(), user.pw_gid)
    os.chown(pack, os.geteuid(), user.pw_gid)
    warm.chmod(0o770)
    pack.chmod(0o660)
    trust._private_group.cache_clear()
    assert load_pack().rules and marker.exists()  # one's own private group: one's own
    plant(warm, marker).chmod(0o660)
    marker.unlink()
    mallory = pwd.struct_passwd(("mallory", "x", 54321, user.pw_gid, "", "/nonexistent", "/bin/sh"))
    listed = pwd.getpwall()
    monkeypatch.setattr(pwd, "getpwall", lambda: [*listed, mallory])
    trust._private_group.cache_clear()
    assert load_pack().rules and not marker.exists()
    assert f"cache directory {warm} not used: writable by other users (mode 0770)" in capsys.readouterr().err
    trust._private_group.cache_clear()


def test_a_cache_in_a_repository_is_not_used_wherever_pgvet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A CI pointing PGVET_CACHE_DIR into its checkout (GitLab caches only paths inside the project): a merge
    request adding .cache/pgvet/rules-<key>.pickle (the key: what the same install computes) had it cloned as the
    CI user's own 0644 file, and it ran; refused when pgvet ran in the checkout, it still ran when pgvet ran from
    the directory above it, or through a link into it."""
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "made"))
    load_pack()  # made elsewhere: the attacker's own run, with the same install
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    cache_directory = checkout / ".cache" / "pgvet"
    cache_directory.parent.mkdir()
    (tmp_path / "made").rename(cache_directory)
    marker = tmp_path / "ran"
    plant(cache_directory, marker).chmod(0o644)
    cache_directory.chmod(0o755)
    (tmp_path / "link").symlink_to(cache_directory)
    for where, named in ((checkout / ".cache", cache_directory), (tmp_path, cache_directory),
                         (tmp_path, tmp_path / "link")):
        monkeypatch.chdir(where)
        monkeypatch.setenv("PGVET_CACHE_DIR", str(named))
        assert load_pack().rules and not marker.exists()
        assert capsys.readouterr().err == (
            f"pgvet: notice: cache directory {named} not used: it lies in the repository {checkout}, whose commits "
            "may hold a file of its name (give PGVET_CACHE_DIR outside it); the rule pack is compiled each time until "
            "it is fixed\n")
        cache._said.clear()


def test_a_cache_whose_way_others_may_change_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The cache directory was checked, not the directories above it: a user who may write one of them renames the
    cache away and puts a link of theirs in its place (to a clone of the user's, whose files are the user's own),
    and the pickle there ran. A sticky directory (/tmp) keeps what the user made in it the user's."""
    shared = tmp_path / "shared"
    cache_directory = shared / "pgvet"
    monkeypatch.setenv("PGVET_CACHE_DIR", str(cache_directory))
    load_pack()
    marker = tmp_path / "ran"
    plant(cache_directory, marker)
    shared.chmod(0o777)
    assert load_pack().rules and not marker.exists()
    assert capsys.readouterr().err == (
        f"pgvet: notice: cache directory {cache_directory} not used: the directory {shared} on the way to it is "
        "writable by other users (mode 0777); the rule pack is compiled each time until it is fixed\n")
    shared.chmod(0o1777)
    load_pack()
    assert marker.exists()  # the planted pickle of the setup: the user's own cache, used
    marker.unlink()
    plant(cache_directory, marker)
    (tmp_path / "link").symlink_to(cache_directory)
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "link" / "."))
    load_pack()
    assert marker.exists()  # a link of the user's, in a directory of theirs: followed
    shared.chmod(0o755)


@needs_root
def test_a_cache_reached_through_what_another_user_owns_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    shared = tmp_path / "shared"
    cache_directory = shared / "pgvet"
    monkeypatch.setenv("PGVET_CACHE_DIR", str(cache_directory))
    load_pack()
    marker = tmp_path / "ran"
    plant(cache_directory, marker)
    os.chown(shared, NOBODY_UID, NOBODY_UID)
    assert load_pack().rules and not marker.exists()
    assert f"the directory {shared} on the way to it is owned by uid {NOBODY_UID}" in capsys.readouterr().err
    os.chown(shared, 0, 0)
    shared.chmod(0o1777)
    os.chown(cache_directory, NOBODY_UID, NOBODY_UID)  # theirs in a sticky directory: refused as before
    assert load_pack().rules and not marker.exists()
    os.chown(cache_directory, 0, 0)
    link = tmp_path / "link"
    link.symlink_to(cache_directory)
    os.lchown(link, NOBODY_UID, NOBODY_UID)  # a link of another user's, in a directory of one's own
    monkeypatch.setenv("PGVET_CACHE_DIR", str(link / "."))
    assert load_pack().rules and not marker.exists()
    assert f"the link {link} on the way to it is owned by uid {NOBODY_UID}" in capsys.readouterr().err
    monkeypatch.setenv("PGVET_CACHE_DIR", str(cache_directory))
    load_pack()
    assert marker.exists()


def test_the_cache_files_are_made_private(warm: Path) -> None:
    assert stat.S_IMODE(warm.stat().st_mode) == 0o700
    assert [stat.S_IMODE(path.stat().st_mode) for path in warm.iterdir()] == [0o600]


def test_the_directories_made_on_the_way_are_private_whatever_the_umask(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Path.mkdir(parents=True) makes the parents with the umask's mode: under umask 000 (a service's UMask=0000)
    ~/.cache was made 0777, for any user to fill with what the user's other programs read."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.delenv("PGVET_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    previous = os.umask(0)
    try:
        load_pack()
    finally:
        os.umask(previous)
    assert [stat.S_IMODE(path.stat().st_mode) for path in (home / ".cache", home / ".cache" / "pgvet")] == [0o700] * 2
    assert len(list((home / ".cache" / "pgvet").glob("rules-*.pickle"))) == 1


def test_a_link_in_the_cache_is_not_followed(warm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "ran"
    pack = plant(warm, marker)
    elsewhere = tmp_path / "elsewhere.pickle"
    pack.rename(elsewhere)
    pack.symlink_to(elsewhere)
    assert load_pack().rules and not marker.exists()
    assert f"cache file {pack} not used: a symbolic link" in capsys.readouterr().err


def test_a_refused_cache_is_said_once_by_a_run_with_workers(tmp_path: Path) -> None:
    """One line, by the process that loads the pack first, not by each worker (which compile the pack again)."""
    shared = tmp_path / "cache"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    hosts = []
    for number in range(4):
        shutil.copytree(FIXTURES / "small-vm", tmp_path / f"h{number}")
        hosts.append(str(tmp_path / f"h{number}"))
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", *hosts, "--jobs", "2", "-f", "concise"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PGVET_CACHE_DIR": str(shared)})
    assert done.returncode == 1, done.stderr
    said = [line for line in done.stderr.splitlines() if "not used" in line]
    assert said == [f"pgvet: notice: cache directory {shared} not used: writable by other users (mode 0777); the "
                    "rule pack is compiled each time until it is fixed"]
    assert os.listdir(shared) == []


def test_without_home_the_cache_is_a_private_directory_of_the_temporary_one(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """No HOME and no passwd entry (a container's arbitrary uid): Path.home() raised, a traceback on every command."""
    import pwd
    import tempfile

    for name in ("PGVET_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cache.cache_dir() == tmp_path / f"pgvet-cache-{os.geteuid()}"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored, as the XDG specification says
    assert cache.cache_dir() == tmp_path / f"pgvet-cache-{os.geteuid()}"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "pgvet"


@needs_root
def test_every_command_runs_for_a_uid_without_home_nor_passwd_entry() -> None:
    """`docker run --user 12345`: a traceback on every command. The cache goes to a directory of the uid's own
    under the temporary directory (here TMPDIR), made 0700."""
    with shared_directory() as shared:
        work = shared / "work"
        shutil.copytree(FIXTURES / "small-vm", work / "host")
        (work / "tmp").mkdir()
        for path in (work, work / "tmp"):
            os.chown(path, NOBODY_UID, NOBODY_UID)
        env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(work / "tmp")}
        for argv in (["lint", "host", "-f", "concise"], ["rules"], ["facts", "host"], ["explain", "PGV101", "host"],
                     ["fix", "host"], ["baseline", "create", "host", "-o", "baseline.json"]):
            done = run_as(NOBODY_UID, argv, work, env)
            assert "Traceback" not in done.stderr and done.returncode in (0, 1), (argv, done.stderr[-3000:])
            assert done.stdout, argv
        kept = work / "tmp" / f"pgvet-cache-{NOBODY_UID}"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o700 and kept.stat().st_uid == NOBODY_UID
        assert len(list(kept.glob("rules-*.pickle"))) == 1


def test_a_cache_directory_whose_acl_lets_another_user_write_is_not_used(warm: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """0700 in the owner's private group, and an ACL entry `user:12345:rwx`: the mode shows the ACL's mask as the
    group's bits (0770), and the private group let it pass — that user could plant the pack."""
    setfacl = shutil.which("setfacl")
    if setfacl is None:
        pytest.skip("setfacl (Debian's acl package) is not installed")
    import grp
    import pwd

    user = pwd.getpwuid(os.geteuid())
    if grp.getgrgid(user.pw_gid).gr_name != user.pw_name:
        pytest.skip("the user running the tests has no private group")
    marker = tmp_path / "ran"
    plant(warm, marker)
    os.chown(warm, os.geteuid(), user.pw_gid)
    warm.chmod(0o700)
    if subprocess.run([setfacl, "-m", f"u:{NOBODY_UID}:rwx", str(warm)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem keeps no ACL")
    trust._private_group.cache_clear()
    assert load_pack().rules and not marker.exists()
    assert (f"cache directory {warm} not used: writable by other users (mode 0770, whose ACL gives them write)"
            in capsys.readouterr().err)
    subprocess.run([setfacl, "-m", f"u:{NOBODY_UID}:r-x", str(warm)], check=True)  # read only: still one's own
    assert load_pack().rules and marker.exists()
