"""A host directory the user cannot read (issue #25, item 9): typer's `readable` check of lint's arguments refused
the whole command line, so the other hosts were not linted. It is reported as that host's error instead."""

from __future__ import annotations

import json
import os
import shutil

from as_user import NOBODY_UID, needs_root, run_as, shared_directory
from conftest import FIXTURES


@needs_root
def test_an_unreadable_host_is_reported_and_the_others_linted() -> None:
    with shared_directory() as shared:
        work = shared / "work"
        shutil.copytree(FIXTURES / "small-vm", work / "readable")
        shutil.copytree(FIXTURES / "well-tuned", work / "unreadable")
        os.chown(work, NOBODY_UID, NOBODY_UID)
        (work / "unreadable").chmod(0)
        env = {"PATH": "/usr/bin:/bin", "PGVET_CACHE_DIR": str(work / "cache")}
        jobs = ["-j1"]
        done = run_as(NOBODY_UID, ["lint", *jobs, "readable", "unreadable", "-f", "json"], work, env)
        assert done.returncode == 2, done.stderr  # a host that cannot be read fails the run
        document = json.loads(done.stdout)
        assert [(error["path"], error["message"]) for error in document["errors"]] == [
            ("unreadable", "cannot read this directory: Permission denied")]
        assert document["summary"]["hosts"] == 1 and document["findings"]
        gaps = run_as(NOBODY_UID, ["lint", *jobs, "readable", "unreadable", "--allow-unreadable", "-f", "concise"],
                      work, env)
        assert gaps.returncode == 1  # the readable host's findings
        alone = run_as(NOBODY_UID, ["lint", *jobs, "unreadable", "-f", "concise"], work, env)
        assert alone.returncode == 2 and alone.stdout.startswith("unreadable: ERROR input: cannot read this directory")
