"""Configuration documents hold passwords beside PostgreSQL's parameters (a compose service's POSTGRES_PASSWORD,
a Patroni member's authentication, a Kubernetes Secret) and in them (a conninfo, a command, a custom setting):
nothing pgvet prints or writes of a repository carries one, not even where a finding quotes the line that holds
both (a flow mapping on one line), nor `pgvet facts`, which shows these parameters as a collection writes them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SECRETS = ("S3cretCompose", "S3cretEnvList", "S3cretSuper", "S3cretRest", "S3cretStringData", "UzNjcmV0RGF0YQ==",
           "S3cretUri", "S3cretCnpgEnv",
           "S3cretArchive", "S3cretConninfo", "S3cretCustom", "S3cretRestore")

PARAMETERS = "{track_io_timing: 'off', shared_buffers: 64TB}"
COMPOSE = """services:
  db: {image: postgres:16, environment: {POSTGRES_PASSWORD: S3cretCompose}, command: postgres -c track_io_timing=off}
  replica:
    image: postgres:16
    environment: [POSTGRES_PASSWORD=S3cretEnvList, "DATABASE_URL=postgres://app:S3cretUri@db/app"]
    command: ["postgres", "-c", "track_io_timing=off", "-c", "archive_command=curl -u app:S3cretArchive x"]
  standby:
    image: postgres:16
    command:
      - postgres
      - -c
      - primary_conninfo=host=db password=S3cretConninfo
      - -c
      - myext.api_key=S3cretCustom
      - -c
      - restore_command=curl -u app:S3cretRestore x
"""
PATRONI = """scope: s
name: member1
restapi: {authentication: {username: a, password: S3cretRest}}
postgresql: {authentication: {superuser: {username: postgres, password: S3cretSuper}}, parameters: @}
""".replace("@", PARAMETERS)
CNPG = """apiVersion: v1
kind: Secret
metadata: {name: app}
data: {password: UzNjcmV0RGF0YQ==}
stringData: {password: S3cretStringData}
---
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg}
spec: {instances: 1, env: [{name: PGPASSWORD, value: S3cretCnpgEnv}], postgresql: {parameters: @}}
""".replace("@", PARAMETERS)


def run(*arguments: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "pgvet", *arguments], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400"})
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-2000:]
    return output


def test_no_password_of_a_document_is_printed_or_written(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    for directory, name, text in (("compose", "docker-compose.yml", COMPOSE), ("patroni", "patroni.yml", PATRONI),
                                  ("cnpg", "cluster.yaml", CNPG)):
        (repository / directory).mkdir(parents=True)
        (repository / directory / name).write_text(text)
    outputs = []
    for report in ("text", "concise", "json", "jsonl", "sarif", "github", "junit", "gitlab", "html"):
        outputs.append(run("lint", "--format", report, "--output", str(tmp_path / f"report.{report}"), "repo",
                           cwd=tmp_path))
        outputs.append((tmp_path / f"report.{report}").read_text())
    outputs.append(run("lint", "repo", cwd=tmp_path))
    # the lines quoted are those findings point at: these hold the parameters beside the passwords
    assert all(place in outputs[-1] for place in ("compose/docker-compose.yml:2", "patroni/patroni.yml:4",
                                                  "cnpg/cluster.yaml:10")), outputs[-1]
    for directory in ("compose", "patroni", "cnpg"):
        outputs.append(run("facts", f"repo/{directory}", cwd=tmp_path))
        outputs.append(run("facts", "--format", "json", f"repo/{directory}", cwd=tmp_path))
        outputs.append(run("fix", f"repo/{directory}", cwd=tmp_path))
    outputs.append(run("baseline", "create", "repo", cwd=tmp_path))
    outputs.extend(file.read_text(errors="replace") for file in tmp_path.iterdir() if file.is_file())
    for output in outputs:
        for secret in SECRETS:
            assert secret not in output, [line for line in output.splitlines() if secret in line][:2]


def test_no_password_a_configuration_file_sets_is_in_a_finding(tmp_path: Path) -> None:
    """The validity rules quote the line that sets a parameter (set twice, overridden by ALTER SYSTEM, needing a
    restart): the value of one that may hold a secret is quoted as a collection writes it, and the text and HTML
    reports do not quote its line (a custom setting's, whatever its name)."""
    host = tmp_path / "repo" / "db"
    host.mkdir(parents=True)
    (host / "host.yaml").write_text("pg_version: 12\n")
    (host / "postgresql.conf").write_text(
        "primary_conninfo = 'host=a password=S3cretFirst'\n"
        "primary_conninfo = 'host=b password=S3cretLast'\n"
        "archive_command = 'curl -u app:S3cretArchive x'\n"
        "myext.api_key = 'S3cretCustom'\n"
        "myext.api_key = S3cretBare\n"
        "myext.auth = 'S3cretNamedPlainly'\n"
        "myext.auth = 'S3cretNamedPlainlyAgain'\n")
    (host / "postgresql.auto.conf").write_text(
        "archive_command = 'curl -u app:S3cretAltered x'\n"
        "primary_conninfo = 'password=S3cretAuto host=c'\n")
    compose = tmp_path / "repo" / "compose"
    compose.mkdir()
    (compose / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n    command: [postgres, -c, 'primary_conninfo=password=S3cretDoc',"
        " -c, 'primary_conninfo=password=S3cretDocAgain']\n")
    outputs = []
    for report in ("text", "concise", "json", "jsonl", "sarif", "github", "junit", "gitlab", "html"):
        outputs.append(run("lint", "--format", report, "--output", str(tmp_path / f"report.{report}"), "repo",
                           cwd=tmp_path))
        outputs.append((tmp_path / f"report.{report}").read_text())
    outputs.append(run("lint", "--verbose", "repo", cwd=tmp_path))
    # the findings that quote the lines are there, with what is not secret
    assert "primary_conninfo = 'host=b password=***'" in outputs[-1], outputs[-1]
    assert "archive_command = '***'" in outputs[-1], outputs[-1]
    for directory in ("db", "compose"):
        outputs.append(run("facts", "--format", "json", f"repo/{directory}", cwd=tmp_path))
        outputs.append(run("fix", f"repo/{directory}", cwd=tmp_path))
    outputs.append(run("baseline", "create", "repo", cwd=tmp_path))
    outputs.extend(file.read_text(errors="replace") for file in tmp_path.iterdir() if file.is_file())
    for output in outputs:
        assert "S3cret" not in output, [line for line in output.splitlines() if "S3cret" in line][:2]


def test_no_http_credential_beside_the_parameters_is_quoted(tmp_path: Path) -> None:
    """A flow mapping puts a healthcheck's or a label's HTTP credential on the line a finding points at: an
    Authorization header (Bearer, Basic), an API key header or a cookie is no word the other secrets are spelt
    with."""
    compose = tmp_path / "repo" / "compose"
    compose.mkdir(parents=True)
    services = {"bearer": "test: \"curl -H 'Authorization: Bearer S3cretBearer' http://x/\"",
                "basic": "x: \"authorization: Basic UzNjcmV0QmFzaWM=\"",
                "alone": "x: \"bearer S3cretBearerAlone\"",
                "apikey": "x: \"X-Api-Key: S3cretApiKey\"",
                "cookie": "x: \"Cookie: session=S3cretCookie\""}
    (compose / "docker-compose.yml").write_text("services:\n" + "".join(
        f"  {name}: {{labels: {{{label}}}, image: postgres:16, command: postgres -c track_io_timing=off}}\n"
        for name, label in services.items()))
    outputs = [run("lint", "repo", cwd=tmp_path)]
    assert len(re.findall(r"docker-compose\.yml:\d", outputs[0])) == len(services)  # a finding points at each line
    outputs.append(run("lint", "--format", "html", "--output", str(tmp_path / "report.html"), "repo", cwd=tmp_path))
    outputs.append((tmp_path / "report.html").read_text())
    for output in outputs:
        for secret in ("S3cret", "UzNjcmV0QmFzaWM"):
            assert secret not in output, [line for line in output.splitlines() if secret in line][:2]


def test_no_secret_a_pg_settings_json_holds_is_in_a_finding_or_facts(tmp_path: Path) -> None:
    """A pg_settings.json that pgvet did not write (by hand, another tool's, an edited one) may hold the values a
    collection redacts: they are shown as a collection writes them, as the same values set in a configuration file
    are."""
    host = tmp_path / "repo" / "db"
    host.mkdir(parents=True)
    (host / "host.yaml").write_text("pg_version: 16\n")
    (host / "pg_settings.json").write_text("""{"format": 1, "server": {"server_version_num": 160002},
 "databases": [], "unavailable": [], "statistics": {},
 "settings": [
  {"name": "archive_mode", "setting": "on", "vartype": "enum", "context": "postmaster"},
  {"name": "archive_command", "setting": "curl -u app:S3cretRunning x", "vartype": "string", "context": "sighup",
   "source": "configuration file", "boot_val": "S3cretBoot", "reset_val": "curl S3cretReset"},
  {"name": "primary_conninfo", "setting": "host=a password=S3cretConninfo", "vartype": "string",
   "context": "sighup"},
  {"name": "myext.key", "setting": "S3cretCustom", "vartype": "string", "context": "user"}],
 "file_settings": [
  {"sourcefile": "/etc/x.conf", "sourceline": 3, "seqno": 1, "name": "archive_command",
   "setting": "curl -u app:S3cretFile x", "applied": false, "error": "setting could not be applied"},
  {"sourcefile": "/etc/x.conf", "sourceline": 4, "seqno": 2, "name": "primary_conninfo",
   "setting": "host=b password=S3cretFileConninfo", "applied": false, "error": null}],
 "command_line": {"restore_command": "curl S3cretCommandLine", "primary_conninfo": "password=S3cretCmdConninfo"}}
""")
    outputs = []
    for report in ("text", "concise", "json", "sarif", "github", "junit", "gitlab", "html"):
        outputs.append(run("lint", "--verbose", "--format", report, "repo", cwd=tmp_path))
    assert ("primary_conninfo runs with host=a password=*** but the configuration files now give host=b password=***"
            in outputs[1]), outputs[1]
    outputs.append(run("facts", "repo/db", cwd=tmp_path))
    outputs.append(run("facts", "--format", "json", "repo/db", cwd=tmp_path))
    outputs.append(run("fix", "repo/db", cwd=tmp_path))
    for output in outputs:
        assert "S3cret" not in output, [line for line in output.splitlines() if "S3cret" in line][:2]


def test_a_pg_settings_json_row_of_no_parameter_is_read_as_a_collection_writes_it() -> None:
    """A file_settings row of a name that is no parameter (a line of an environment file a superuser included,
    PGPASSWORD=…) has its value redacted by a collection: a pg_settings.json pgvet did not write is read so too."""
    from pgvet.inputs.pg_settings import parse_pg_settings_json

    live = parse_pg_settings_json("""{"format": 1, "server": {"server_version_num": 160002}, "databases": [],
 "unavailable": [], "statistics": {}, "settings": [{"name": "work_mem", "setting": "4096", "vartype": "integer"}],
 "file_settings": [
  {"sourcefile": "/etc/env.conf", "sourceline": 1, "seqno": 1, "name": "PGPASSWORD", "setting": "S3cretEnv",
   "applied": false, "error": "unrecognized configuration parameter"},
  {"sourcefile": "/etc/env.conf", "sourceline": 2, "seqno": 2, "name": "work_mem", "setting": "8MB", "applied": true,
   "error": null},
  {"sourcefile": "/etc/env.conf", "sourceline": 3, "seqno": 3, "name": "sort_mem", "setting": "9MB", "applied": true,
   "error": null}]}""", "pg_settings.json")
    assert live.file_settings is not None
    assert [(row.name, row.setting) for row in live.file_settings] == [
        ("PGPASSWORD", "***"), ("work_mem", "8MB"), ("sort_mem", "9MB")]

