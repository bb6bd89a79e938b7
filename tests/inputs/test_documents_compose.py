"""Compose files: real ones (tests/data/documents/compose) give their PostgreSQL services as hosts, and planted
mistakes in copies of them are found at their line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import pgservers
from conftest import PROJECT, require_postgres
from documents_support import line_of, lint_findings, settings
from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, document_kinds
from pgvet.inputs.documents._bitnami_image import CONTAINER_SOURCE
from pgvet.inputs.documents.compose import DOCKER_DEFAULT, DOCKER_SHM_DEFAULT, KIND, parse_compose
from pgvet.provenance import Source
from pgvet.safeyaml import load_yaml
from pgvet.snapshot.load import load_hosts

CORPUS = PROJECT / "tests" / "data" / "documents" / "compose"
FILES = sorted(path for path in CORPUS.iterdir() if path.name != "SOURCES.md")
IMMICH = CORPUS / "immich-docker-compose.prod.yml"
SENTRY = CORPUS / "sentry-self-hosted-docker-compose.yml"
DEVMORPH = CORPUS / "devmorph-postgres-service.yml"
RANCHER = CORPUS / "rancher-catalog-adhoc-postgres-6.yml"
MiB = 1024 * 1024


def hosts_of(text: str, path: str = "compose.yaml") -> list[DeclaredHost]:
    return parse_compose(text, path)


def only(text: str) -> DeclaredHost:
    [host] = hosts_of(text)
    return host


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_real_file_gives_one_postgresql_host(path: Path) -> None:
    assert len(hosts_of(path.read_text(), str(path))) == 1


def test_the_services_name_resources_and_defaults() -> None:
    path = CORPUS / "awesome-compose-gitea-postgres.yaml"
    host = only(path.read_text())
    assert (host.name, host.source.line) == ("db", 15)  # gitea's service is not PostgreSQL's
    assert host.host["shm_size"].value == DOCKER_SHM_DEFAULT
    assert host.host["shm_size"].source.path == DOCKER_DEFAULT
    assert "pg_version" not in host.host  # postgres:alpine says no version
    assert "ram" not in host.host


def test_shm_size_and_the_version_from_the_tag() -> None:
    text = SENTRY.read_text()
    host = only(text)
    assert host.name == "postgres"
    assert host.host["pg_version"].value == 14  # postgres:14.24-bookworm
    assert (host.host["shm_size"].value, host.host["shm_size"].source.line) == (256 * MiB, line_of(text, "shm_size"))
    assert host.settings == []  # command: ["postgres"]


@pytest.mark.parametrize(("written", "size"), [
    ("2GiB", 2 * 1024 * MiB), ("1.5g", 1536 * MiB), ("512 MB", 512 * MiB), ("1t", 1024 * 1024 * MiB),
    ("2048Kib", 2 * MiB), ("1073741824b", 1024 * MiB),
])
def test_sizes_in_every_spelling_docker_accepts(written: str, size: int) -> None:
    # Docker's sizes (go-units RAMInBytes): a number, one optional space, b or k m g t p with b or ib, any case
    text = SENTRY.read_text().replace("    shm_size: 256m\n", f"    shm_size: {written}\n    mem_limit: {written}\n")
    host = only(text)
    assert (host.host["shm_size"].value, host.host["shm_size"].source.line) == (size, line_of(text, "shm_size"))
    assert (host.host["ram"].value, host.host["ram"].source.line) == (size, line_of(text, "mem_limit"))


def test_a_size_left_to_a_variable_is_unknown_and_one_compose_refuses_is_a_problem() -> None:
    text = SENTRY.read_text().replace("    shm_size: 256m\n", "    shm_size: ${PG_SHM:-1g}\n    mem_limit: 2 gigs\n")
    host = only(text)
    assert "shm_size" not in host.host and "ram" not in host.host  # never Docker's default of 64 MiB
    assert host.unknown["host.shm_size"].line == line_of(text, "shm_size")
    [problem] = host.problems
    assert (problem.kind, problem.fatal, problem.source.line) == ("compose-refused", True, line_of(text, "mem_limit"))
    assert "'2 gigs'" in problem.message


def test_what_a_merge_key_brings_is_at_the_line_that_writes_it() -> None:
    text = SENTRY.read_text().replace("x-restart-policy: &restart_policy\n",
                                      "x-restart-policy: &restart_policy\n  mem_limit: 1g\n")
    host = only(text)
    assert (host.host["ram"].value, host.host["ram"].source.line) == (1024 * MiB, line_of(text, "mem_limit: 1g"))


def test_a_tmpfs_on_dev_shm_is_its_size_and_ipc_host_the_machines() -> None:
    # the postgres image's own example, its commented Swarm alternative uncommented
    text = (CORPUS / "docker-library-postgres-compose.yaml").read_text().replace("    shm_size: 128mb\n", "")
    for commented in ("volumes:", "  - type: tmpfs", "    target: /dev/shm", "    tmpfs:", "      size: 1342"):
        text = text.replace(f"    #{commented}", f"    {commented}")
    host = only(text)
    assert (host.host["shm_size"].value, host.host["shm_size"].source.line) == (128 * MiB, line_of(text, "type: tmpfs"))
    host = only("services:\n  db:\n    image: postgres:16\n    ipc: host\n")
    assert "shm_size" not in host.host and any("ipc: host" in note for note in host.notes)


def test_a_folded_command_gives_each_setting_at_its_line() -> None:
    text = IMMICH.read_text()
    host = only(text)
    assert host.name == "database"
    assert host.host["pg_version"].value == 14  # tensorchord/pgvecto-rs:pg14-v0.2.0@sha256:…
    assert settings(host) == [
        ("shared_preload_libraries", "vectors.so", line_of(text, "shared_preload_libraries=vectors.so")),
        ("search_path", '"$user", public, vectors', line_of(text, "search_path")),  # $$ is Compose's $
        ("logging_collector", "on", line_of(text, "logging_collector=on")),
        ("max_wal_size", "2GB", line_of(text, "max_wal_size=2GB")),
        ("shared_buffers", "512MB", line_of(text, "shared_buffers=512MB")),
        ("wal_compression", "on", line_of(text, "wal_compression=on")),
    ]


def test_a_list_command_gives_each_item_at_its_line() -> None:
    command = '      - postgres\n      - -c\n      - max_connections=300\n      - --work-mem=32MB\n      - -B\n'
    text = SENTRY.read_text().replace('      ["postgres"]\n', command + '      - "16384"\n      - -N50\n')
    host = only(text)
    assert settings(host) == [
        ("max_connections", "300", line_of(text, "max_connections=300")),
        ("work_mem", "32MB", line_of(text, "--work-mem")),
        ("shared_buffers", "131072kB", line_of(text, '"16384"')),  # -B counts 8kB buffers
        ("max_connections", "50", line_of(text, "-N50")),
    ]


def test_words_left_to_a_variable_may_set_any_parameter_but_those_after_them() -> None:
    text = ("services:\n  db:\n    image: postgres:16\n    command: postgres -c ${EXTRA_SETTING} -p ${PORT}\n"
            "      -c shared_buffers=1GB\n")
    host = only(text)
    assert host.unknown["pg.work_mem"] == Source("compose.yaml", 4) and host.unknown["pg.port"].line == 4
    assert "pg.shared_buffers" not in host.unknown  # set after them: the last -c postgres reads wins
    assert settings(host) == [("shared_buffers", "1GB", 5)]
    assert set(only("services:\n  db:\n    image: postgres\n    command: postgres -p ${PORT}\n").unknown) == {
        "pg.port"}  # a letter's value sets that letter's parameter only


def test_a_name_that_begins_another_is_at_its_own_line() -> None:
    text = DEVMORPH.read_text()  # pgtune's order: max_parallel_workers_per_gather, then max_parallel_workers
    lines = {name: line for name, _, line in settings(only(text))}
    assert lines["max_parallel_workers_per_gather"] == line_of(text, "max_parallel_workers_per_gather=1")
    assert lines["max_parallel_workers"] == line_of(text, "max_parallel_workers=2")
    assert lines["max_parallel_maintenance_workers"] == line_of(text, "max_parallel_maintenance_workers=1")


def test_a_tag_left_to_a_variable_the_entrypoint_script_and_a_psql_job() -> None:
    text = RANCHER.read_text()  # image postgres:${POSTGRES_TAG}; the second service runs psql from the same image
    host = only(text)
    assert (host.name, "pg_version" in host.host) == ("postgres", False)
    line = line_of(text, "command: docker-entrypoint.sh postgres")
    variables = ("port", "max_connections", "shared_buffers", "work_mem", "effective_cache_size")  # -p ${server_port}
    assert {f"pg.{name}": Source("compose.yaml", line) for name in variables}.items() <= host.unknown.items()
    # ${server_configuration}, more words once filled in (its catalog's "server configuration" field), may set any
    assert host.unknown["pg.checkpoint_timeout"] == Source("compose.yaml", line)
    assert only("services:\n  db:\n    image: postgres\n    command: [-B$SB]\n").unknown == {
        "pg.shared_buffers": Source("compose.yaml", 4)}
    assert not any("runs docker-entrypoint.sh" in note for note in host.notes)


@pytest.mark.parametrize("service", [
    '    image: postgres:15-alpine\n    command: ["sh","-c","sleep infinity"]\n',  # NlightN22/pg-1c-15's psql-client
    "    image: postgres:16\n    entrypoint: [pg_dump, -h, db]\n",
    "    image: postgres:16\n    command: psql -h db -c 'select 1'\n",
])
def test_a_client_or_an_idle_container_from_the_image_is_no_host(service: str) -> None:
    assert hosts_of("services:\n  client:\n" + service) == []


def test_a_shell_running_a_script_file_may_start_the_server() -> None:
    host = only("services:\n  db:\n    image: postgres:16\n    entrypoint: [/bin/sh, /init/start.sh]\n")
    assert host.settings == [] and host.host["pg_version"].value == 16


@pytest.mark.parametrize(("service", "form"), [
    ('    entrypoint: ["docker-entrypoint.sh", "postgres", "-c", "shared_buffers=3GB"]\n', "flow list"),
    ("    entrypoint: docker-entrypoint.sh postgres -c shared_buffers=3GB\n", None),
    ('    entrypoint: ["postgres", "-c", "shared_buffers=3GB"]\n    command: ["-N", "40"]\n', "flow list"),
    ("    entrypoint:\n      - postgres\n      - -c\n      - shared_buffers=3GB\n", "block list")])
def test_the_entrypoints_options_are_postgres_options_too(service: str, form: str | None) -> None:
    """Docker runs the entrypoint with the command after it: options the service's entrypoint gives postgres are
    read (they were ignored, shared_buffers above the memory limit unseen), the command's after them."""
    text = f"services:\n  db:\n    image: postgres:16\n    mem_limit: 1g\n{service}"
    host = only(text)
    assert ("shared_buffers", "3GB") in [(setting.name, setting.value) for setting in host.settings]
    assert [setting.source.line for setting in host.settings if setting.name == "shared_buffers"] == [
        line_of(text, "shared_buffers=3GB")]
    if "command" in service:
        assert ("max_connections", "40") in [(setting.name, setting.value) for setting in host.settings]
    written = host.host.get("parameter_form")
    assert (written.value if written is not None else None) == form


def test_a_command_after_an_entrypoint_of_another_program_is_its_arguments_not_read() -> None:
    host = only("services:\n  db:\n    image: postgres:16\n    entrypoint: [/usr/local/bin/wrap.sh]\n"
                "    command: [-c, shared_buffers=3GB]\n")
    assert host.settings == [] and any("runs /usr/local/bin/wrap.sh, not postgres" in note for note in host.notes)


def test_an_option_and_its_value_in_one_list_item_is_refused_by_postgres() -> None:
    text = SENTRY.read_text().replace('      ["postgres"]\n', '      ["postgres", "-c max_connections=300"]\n')
    host = only(text)
    [problem] = host.problems
    assert problem.fatal and problem.source.line == line_of(text, "-c max_connections=300")
    assert "' max_connections'" in problem.message and host.settings == []


@pytest.mark.parametrize("command", [
    "postgres -c 'max_connections = 300'", '["postgres", "-c", "max_connections =300"]',
    '["postgres", "--max_connections =300"]'])
def test_spaces_around_the_equals_sign_are_part_of_the_name_postgres_refuses(command: str) -> None:
    """postgres splits -c's word at "=" and keeps the spaces: "max_connections " is no parameter, it does not
    start (checked with postgres 15: unrecognized configuration parameter "max_connections ")."""
    host = only(f"services:\n  db:\n    image: postgres:16\n    command: {command}\n")
    [problem] = host.problems
    assert problem.fatal and "'max_connections '" in problem.message and host.settings == []


@pytest.mark.parametrize(("form", "written"), [
    (None, "-c 'archive_command=test ! -f /a/$$HOME%f'"),
    ("flow list", '"-c", "archive_command=test ! -f /a/$$HOME%f"'),
    ("block list", '- "-c"\n- "archive_command=test ! -f /a/$$HOME%f"')])
def test_the_fix_writes_a_dollar_as_composes_literal_one(form: str | None, written: str) -> None:
    """Compose interpolates $ in every form of a command: the fix's value keeps its $ as $$, read back as $."""
    assert KIND.writes_parameter(form)("archive_command", "test ! -f /a/$HOME%f") == written
    command = written if form is None else f"[{written}]" if form == "flow list" else "\n      " + written.replace(
        "\n", "\n      ")
    host = only(f"services:\n  db:\n    image: postgres:16\n    command: {command}\n")
    assert [(s.name, s.value) for s in host.settings] == [("archive_command", "test ! -f /a/$HOME%f")]


@pytest.mark.postgres
@pytest.mark.parametrize("style", ["flow", "block"])
def test_the_fix_of_a_list_command_is_items_postgres_accepts(style: str) -> None:
    """The items pgvet's fix writes into a list command, read back by pgvet and given to a real postgres as the
    image's entrypoint gives them (each item one word): postgres takes the value pgvet read. One item holding
    "-c name=value" is what postgres refuses (the name " name")."""
    require_postgres(15)
    opening = '["postgres", "-N", "40"]' if style == "flow" else "\n      - postgres\n      - -N\n      - '40'"
    host = only(f"services:\n  db:\n    image: postgres:15\n    command: {opening}\n")
    form = host.host["parameter_form"].value
    written = KIND.writes_parameter(form)("shared_buffers", "48MB")
    if style == "flow":
        text = f"services:\n  db:\n    image: postgres:15\n    command: {opening[:-1]}, {written}]\n"
    else:
        items = "".join(f"\n      {line}" for line in written.split("\n"))
        text = f"services:\n  db:\n    image: postgres:15\n    command: {opening}{items}\n"
    fixed = only(text)
    assert fixed.problems == [] and ("shared_buffers", "48MB") in [(s.name, s.value) for s in fixed.settings]
    words = [str(item) for item in load_yaml(text)["services"]["db"]["command"]][1:]
    data = pgservers.fresh_cluster(15)
    try:
        accepted = pgservers.run(15, "postgres", [*words, "-C", "shared_buffers", "-D", str(data)])
        one_item = pgservers.run(15, "postgres", ["-c shared_buffers=48MB", "-C", "shared_buffers", "-D", str(data)])
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)
    assert (accepted.returncode, accepted.stdout.strip()) == (0, str(48 * 1024 // 8)), accepted.stderr
    assert one_item.returncode != 0 and 'parameter " shared_buffers"' in one_item.stderr


@pytest.mark.parametrize(("resources", "ram", "cpus", "cpu_limit"), [
    ("    mem_limit: 1g\n    cpus: 1.5\n", 1024 * MiB, 2, 1.5),
    ("    deploy:\n      resources:\n        limits:\n          cpus: '0.50'\n          memory: 512M\n",
     512 * MiB, 1, 0.5),
])
def test_memory_and_cpu_limits(resources: str, ram: int, cpus: int, cpu_limit: float) -> None:
    text = SENTRY.read_text().replace("    shm_size: 256m\n", f"    shm_size: 256m\n{resources}")
    host = only(text)
    assert host.host["ram"].value == host.host["memory_limit"].value == ram
    assert host.host["ram"].source.line == line_of(text, "mem_limit" if "mem_limit" in resources else "memory: 512M")
    assert (host.host["cpus"].value, host.host["cpu_limit"].value) == (cpus, cpu_limit)


# Planted mistakes in copies of the real files.

def test_a_typo_a_refused_value_and_wal_level_minimal_are_settings_at_their_lines() -> None:
    text = IMMICH.read_text().replace("-c shared_buffers=512MB", "-c shared_bufers=512MB").replace(
        "-c wal_compression=on", "-c wal_compression=maybe\n      -c wal_level=minimal")
    host = only(text)
    assert ("shared_bufers", "512MB", line_of(text, "shared_bufers")) in settings(host)
    assert ("wal_compression", "maybe", line_of(text, "wal_compression")) in settings(host)
    assert ("wal_level", "minimal", line_of(text, "wal_level=minimal")) in settings(host)


def test_shared_buffers_above_the_memory_limit_keeps_both_facts() -> None:
    text = IMMICH.read_text().replace("    restart: always\n\n  # set IMMICH", "    mem_limit: 256m\n"
                                      "    restart: always\n\n  # set IMMICH")
    host = only(text)
    assert (host.host["memory_limit"].value, host.host["memory_limit"].source.line) == (256 * MiB,
                                                                                        line_of(text, "mem_limit"))
    assert ("shared_buffers", "512MB", line_of(text, "shared_buffers=512MB")) in settings(host)


def test_an_option_without_a_value_is_refused_by_postgres() -> None:
    text = IMMICH.read_text().replace("-c logging_collector=on", "-c logging_collector on")
    host = only(text)
    [problem] = host.problems
    assert (problem.kind, problem.fatal, problem.source.line) == ("compose-command", True,
                                                                   line_of(text, "logging_collector on"))
    assert all(setting.name != "logging_collector" for setting in host.settings)


def test_an_environment_variable_is_skipped_with_a_note() -> None:
    text = IMMICH.read_text().replace("-c max_wal_size=2GB", "-c max_wal_size=${WAL_MAX}")
    host = only(text)
    assert all(setting.name != "max_wal_size" for setting in host.settings)
    assert any(f":{line_of(text, 'WAL_MAX')}: max_wal_size=${{WAL_MAX}}" in note for note in host.notes)


def test_flags_without_a_value_do_not_take_the_next_word() -> None:
    host = only("services:\n  db:\n    image: postgres:16\n    command: postgres -e -i -D /data -c work_mem=8MB\n")
    assert settings(host) == [("listen_addresses", "*", 4), ("work_mem", "8MB", 4)]
    assert [note.split(": ", 1)[1] for note in host.notes] == ["postgres option -e: not read",
                                                                "postgres option -D: not read"]


def test_a_command_that_runs_another_program_is_noted() -> None:
    host = only("services:\n  db:\n    image: postgres:16\n    command: bash -c 'exec postgres -c work_mem=1GB'\n")
    assert host.settings == [] and any("runs bash" in note for note in host.notes)
    assert host.host["pg_version"].value == 16


def test_a_command_compose_cannot_split_is_refused() -> None:
    host = only("services:\n  db:\n    image: postgres:16.2-alpine\n    command: postgres -c 'work_mem=1GB\n")
    [problem] = host.problems
    assert problem.fatal and problem.source.line == 4


@pytest.mark.parametrize(("image", "postgres"), [
    ("zulip/zulip-postgresql:14", True), ("ghcr.io/acme/acme-postgres:16", True),
    ("prometheuscommunity/postgres-exporter", False), ("wrouesnel/postgres_exporter:v0.8.0", False),
    ("eeshugerman/postgres-backup-s3:16", False),
])
def test_a_projects_own_build_of_the_image_is_postgresql(image: str, postgres: bool) -> None:
    assert bool(hosts_of(f"services:\n  db:\n    image: {image}\n")) is postgres


@pytest.mark.parametrize(("image", "version"), [
    ("postgres:16", 16), ("docker.io/library/postgres:16.2-alpine", 16), ("timescale/timescaledb:latest-pg15", 15),
    ("timescale/timescaledb-ha:pg17-ts2.17", 17), ("postgis/postgis:15-3.4", 15),
    ("bitnami/postgresql:16.2.0-debian-12-r6", 16), ("postgres", None), ("postgres:latest", None),
])
def test_the_version_in_the_image_tag(image: str, version: int | None) -> None:
    host = only(f"services:\n  db:\n    image: {image}\n")
    assert (host.host["pg_version"].value if "pg_version" in host.host else None) == version


def test_invalid_yaml_is_a_parse_error_at_its_line() -> None:
    with pytest.raises(ParseError) as raised:
        parse_compose("services:\n  db:\n    image: postgres\n    command: [postgres\n", "c.yml")
    assert raised.value.source is not None and raised.value.source.line is not None


@pytest.mark.parametrize("text", [
    "services:\n  cache:\n    image: redis:7\n  app:\n    image: myapp\n    environment:\n      DB: postgres\n",
    "services:\n  patroni1:\n    image: patroni\n    env_file: docker/patroni.env\n",  # patroni's own demo
    "scope: batman\nrestapi:\n  listen: 0.0.0.0:8008\npostgresql:\n  listen: 0.0.0.0:5432\n",  # a Patroni member
])
def test_other_documents_are_not_compose(text: str) -> None:
    assert not [kind for kind in document_kinds() if kind.name == "compose" and kind.recognises("x.yml", text)]


# End to end: `pgvet lint` on a directory holding the file.

def lint(directory: Path) -> list[tuple[str, str, int]]:
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return [(finding["rule_id"], Path(finding["path"]).name, finding["line"])
            for finding in json.loads(result.output)["findings"] if finding["path"]]


def test_real_files_lint_without_errors(tmp_path: Path) -> None:
    for path in FILES:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    report = json.loads(result.output)
    assert [finding for finding in report["findings"] if finding["severity"] == "error"] == []
    assert sorted(host.name for host in load_hosts(tmp_path)) == [  # services of one name told apart by file
        "database (immich-docker-compose.prod.yml)", "database (zulip-compose.yaml)",
        "db (awesome-compose-gitea-postgres.yaml)", "db (docker-library-postgres-compose.yaml)",
        "postgres (awesome-compose-postgresql-pgadmin.yaml)", "postgres (devmorph-postgres-service.yml)",
            "postgres (rancher-catalog-adhoc-postgres-6.yml)", "postgres (sentry-self-hosted-docker-compose.yml)"]


def test_planted_mistakes_are_found_at_their_lines(tmp_path: Path) -> None:
    text = IMMICH.read_text().replace("      -c shared_buffers=512MB\n", "      -c shared_bufers=512MB\n"
                                      "      -c shared_buffers=512MB\n      -c wal_level=minimal\n"
                                      "      -c work_mem=64MB\n      -c logging_collector on\n").replace(
        "      -c wal_compression=on\n    restart: always\n",
        "      -c wal_compression=on\n    mem_limit: 256m\n    restart: always\n")
    (tmp_path / IMMICH.name).write_text(text)
    found = lint(tmp_path)
    file = IMMICH.name
    assert {("PGV401", file, line_of(text, "shared_bufers")),  # a typo
            ("PGV501", file, line_of(text, "shared_buffers=512MB")),  # above the 256m memory limit
            ("PGV410", file, line_of(text, "wal_level=minimal")),  # with max_wal_senders 10: no start
            ("PGV550", file, line_of(text, "work_mem=64MB")),  # /dev/shm of 64 MiB by default
            ("PGV407", file, line_of(text, "logging_collector on"))} <= set(found)


def test_an_ample_shm_size_passes(tmp_path: Path) -> None:
    text = IMMICH.read_text().replace("      -c wal_compression=on\n", "      -c wal_compression=on\n"
                                      "      -c work_mem=64MB\n    shm_size: 1gb\n")
    (tmp_path / IMMICH.name).write_text(text)
    assert "PGV550" not in {rule for rule, _, _ in lint(tmp_path)}


def test_a_service_that_sets_no_parameter_is_judged_on_postgresqls_defaults(tmp_path: Path) -> None:
    """getsentry/self-hosted's postgres service (command: ["postgres"], no -c): PostgreSQL runs on its defaults, and
    the rules on them are evaluated — they were all left 'not evaluated' (missing pg.*), the run saying nothing."""
    (tmp_path / "docker-compose.yml").write_text(
        'services:\n  postgres:\n    image: "postgres:14.24-bookworm"\n    command:\n      ["postgres"]\n'
        "    shm_size: 256m\n")
    found = {(rule, line) for _, rule, _, line in lint_findings(tmp_path)}
    assert {"PGV805", "PGV833"} <= {rule for rule, _ in found} and ("PGV841", 3) in found


def test_a_service_built_from_a_directory_named_after_postgres_runs_it() -> None:
    """sgrinko/docker-postgres' 13/postgres-service.yml: no image, built from ./docker-postgres, a command of options
    only (the image's entrypoint runs postgres with them); the file was no input."""
    text = ("version: '3.5'\nservices:\n\n  postgres:\n\n#    image: grufos/postgres:13.14\n    build:\n"
            "      context: ./docker-postgres\n      dockerfile: Dockerfile\n    shm_size: '2gb'\n    command: |\n"
            "      -c shared_preload_libraries='pg_stat_statements,auto_explain'\n"
            "      -c shared_ispell.max_size=70MB\n")
    assert [kind.name for kind in document_kinds() if kind.recognises("postgres-service.yml", text)] == ["compose"]
    host = only(text)
    assert settings(host)[0] == ("shared_preload_libraries", "pg_stat_statements,auto_explain", 12)
    for build in ("build: ./web", "build: {context: ../app}"):
        other = text.replace("build:\n      context: ./docker-postgres\n      dockerfile: Dockerfile", build)
        assert not any(kind.recognises("postgres-service.yml", other) for kind in document_kinds())


@pytest.mark.parametrize("extra", [
    "    volumes:\n      - {type: bind, source: ./conf, target: /opt/bitnami/postgresql/conf}\n",
    "    environment:\n      - POSTGRESQL_MAX_CONNECTIONS=500\n",
])
def test_a_service_configured_where_pgvet_does_not_read_is_not_judged_on_defaults(tmp_path: Path, extra: str) -> None:
    """A service that sets no parameter runs PostgreSQL's defaults (a3), but not one whose configuration is a mounted
    file or Bitnami's environment: max_connections = 500 was judged as 100."""
    text = 'services:\n  db:\n    image: "bitnami/postgresql:17"\n' + extra
    (tmp_path / "compose.yaml").write_text(text)
    assert only(text).unseen_configuration
    assert not {rule for _, rule, _, _ in lint_findings(tmp_path)} & {"PGV805", "PGV833"}
    assert not only('services:\n  db:\n    image: "postgres:17"\n    environment:\n'
                    "      POSTGRESQL_PASSWORD: x\n      PGDATA: /data\n").unseen_configuration


POSTGRES_CONF = "shared_buffers = 3GB\nwork_mem = 1GB\n"


def test_a_postgresql_conf_mounted_where_the_postgres_image_does_not_read_it_is_a_finding(tmp_path: Path) -> None:
    """The postgres image reads its data directory's postgresql.conf: one mounted at /etc/postgresql without
    -c config_file never runs (it was judged as the service's configuration). The service runs its image's own."""
    text = ('services:\n  db:\n    image: "postgres:17"\n    mem_limit: 4g\n    volumes:\n'
            "      - ./postgresql.conf:/etc/postgresql/postgresql.conf:ro\n")
    (tmp_path / "compose.yaml").write_text(text)
    (tmp_path / "postgresql.conf").write_text(POSTGRES_CONF)
    host = only(text)
    assert not host.unseen_configuration and host.image_configuration == Source("compose.yaml", 3)
    found = lint_findings(tmp_path)
    assert ("db", "PGV436", "compose.yaml", 6) in found
    assert not {rule for _, rule, _, _ in found} & {"PGV501", "PGV530"}  # 3GB and 1GB never run
    with_config_file = text.replace('"postgres:17"\n', '"postgres:17"\n    command: postgres -c '
                                    "config_file=/etc/postgresql/postgresql.conf\n")
    (tmp_path / "compose.yaml").write_text(with_config_file)
    found = lint_findings(tmp_path)
    rules = {rule for _, rule, _, _ in found}
    assert "PGV436" not in rules and {"PGV501", "PGV530"} <= rules


@pytest.mark.parametrize(("image", "volume", "read"), [
    ("postgres:16", None, None),  # a named volume or none: initdb's postgresql.conf in the container
    ("postgres:16", "pgdata:/var/lib/postgresql/data", None),
    ("postgres:16", "./postgresql.conf:/var/lib/postgresql/data/postgresql.conf", "postgresql.conf"),
    ("postgres:16", "./pgdata:/var/lib/postgresql/data", "pgdata/postgresql.conf"),
    ("postgres:16", "./pgdata:/var/lib/postgresql/data", None),  # no postgresql.conf there: initdb writes one
    ("postgres:18", "./pgdata:/var/lib/postgresql", "pgdata/18/docker/postgresql.conf"),
    ("postgres:18", "./pgdata:/var/lib/postgresql/data", None),  # 18's data directory is /var/lib/postgresql/18/docker
    ("postgis/postgis:17-3.5", "./postgresql.conf:/var/lib/postgresql/data/postgresql.conf", "postgresql.conf"),
    ("docker.io/library/postgres:15", None, None),
    ("myregistry.example.com:5000/pgvector/pgvector:pg17", None, None),
])
def test_the_postgres_image_reads_its_data_directory_s_postgresql_conf(
        tmp_path: Path, image: str, volume: str | None, read: str | None) -> None:
    """A service of the postgres image's layout reads the directory's postgresql.conf only where it is mounted as
    its data directory's (the file, or the directory holding it); otherwise its image's own, initdb's, and the
    directory's is not this service's (it was: a 3GB shared_buffers the container never runs was judged)."""
    volumes = f"    volumes:\n      - {volume}\n" if volume else ""
    (tmp_path / "compose.yaml").write_text(f'services:\n  db:\n    image: "{image}"\n    mem_limit: 4g\n{volumes}')
    (tmp_path / "postgresql.conf").write_text(POSTGRES_CONF)
    if read is not None and read != "postgresql.conf":
        (tmp_path / read).parent.mkdir(parents=True)
        (tmp_path / read).write_text("shared_buffers = 2GB\n")
    [host] = load_hosts(tmp_path)
    shared_buffers = host.facts["pg.shared_buffers"]
    if read is None:
        assert shared_buffers.value == 128 * 1024 * 1024
        assert any("the directory's postgresql.conf is mounted nowhere postgres reads it" in warning
                   for warning in host.warnings)
    else:
        assert shared_buffers.source.path == read  # shown relative to the host directory


def test_a_postgresql_conf_given_by_name_that_its_service_does_not_read_is_an_error(tmp_path: Path) -> None:
    """The file given by name (pre-commit passes a changed file) that the service does not mount is said, exit 2,
    as a file postgresql.conf does not include is: never dropped in silence."""
    (tmp_path / "compose.yaml").write_text('services:\n  db:\n    image: "postgres:16"\n    mem_limit: 4g\n')
    (tmp_path / "postgresql.conf").write_text(POSTGRES_CONF)
    result = CliRunner().invoke(app, ["lint", str(tmp_path / "postgresql.conf"), "--format", "json"])
    assert result.exit_code == 2
    assert "not an input of its host" in result.output and "compose service of the postgres image" in result.output
    result = CliRunner().invoke(app, ["lint", str(tmp_path)])
    assert "the directory's postgresql.conf is mounted nowhere postgres reads it" in " ".join(result.output.split())


# supabase/supabase docker/docker-compose.yml at 00069a4c6fe35a6db32b91015dad24f2fe161302, its db service's command:
# supabase/postgres reads the image's own postgresql.conf (which loads pg_stat_statements, among others)
SUPABASE_DB = """\
services:
  db:
    image: supabase/postgres:15.8.1.085
    command:
      [
        "postgres",
        "-c",
        "config_file=/etc/postgresql/postgresql.conf",
        "-c",
        "log_min_messages=fatal" # prevents Realtime polling queries from appearing in logs
      ]
"""


def test_a_config_file_on_the_command_line_leaves_every_other_parameter_unknown(tmp_path: Path) -> None:
    """postgres -c config_file=…: the parameters are in that file, which pgvet does not read, but for the command
    line's (which win over it): PGV811 said supabase's server did not load pg_stat_statements, PGV833 that ssl was
    off."""
    host = only(SUPABASE_DB)
    config_file = line_of(SUPABASE_DB, '"config_file=')
    assert host.unknown["pg.shared_preload_libraries"].line == config_file
    assert host.unknown["pg.ssl"].line == config_file
    assert "pg.log_min_messages" not in host.unknown
    assert ("log_min_messages", "fatal", line_of(SUPABASE_DB, '"log_min_messages=')) in settings(host)
    assert any(f":{config_file}: config_file" in note for note in host.notes)
    (tmp_path / "docker-compose.yml").write_text(SUPABASE_DB)
    assert not {rule for _, rule, _, _ in lint_findings(tmp_path)} & {"PGV811", "PGV833", "PGV805"}


@pytest.mark.parametrize("volume", ["./postgresql.conf:/etc/postgresql/postgresql.conf:ro",
                                    "{type: bind, source: ./postgresql.conf, target: /etc/postgresql/postgresql.conf}"])
def test_a_config_file_mounted_from_the_directorys_postgresql_conf_is_read(tmp_path: Path, volume: str) -> None:
    """The config_file the command names is the directory's own postgresql.conf, mounted there: pgvet reads it as the
    host's postgresql.conf, its values judged (shared_buffers 2GB in a 1 GiB container), not left unknown."""
    text = ("services:\n  db:\n    image: postgres:16\n"
            "    command: postgres -c config_file=/etc/postgresql/postgresql.conf\n"
            f"    volumes:\n      - {volume}\n    mem_limit: 1g\n")
    host = only(text)
    assert "pg.shared_buffers" not in host.unknown
    # a named volume of that name is no file of the directory
    named = only(text.replace(volume, "postgresql.conf:/etc/postgresql/postgresql.conf"))
    assert named.unknown["pg.shared_buffers"].line == 4
    (tmp_path / "compose.yaml").write_text(text)
    (tmp_path / "postgresql.conf").write_text("shared_buffers = 2GB\n")
    assert ("db", "PGV540", "postgresql.conf", 1) in lint_findings(tmp_path)


# KostovMartin/mk-feedback-driven-sql-optimization, docker-compose.yml at 36b913b12ca1a7435cc66e15c3ffa272f77907e8
# (its first service, and the first lines of the config/postgresql.conf it mounts)
KOSTOV_TARGET_DB = """\
services:
  target-db:
    image: postgres:18.3
    cpus: "8.00"
    mem_limit: "16g"
    environment:
      POSTGRES_DB: tpch
      POSTGRES_USER: postgres
      POSTGRES_PASSWORD: postgres
    command: postgres -c config_file=/etc/postgresql/postgresql.conf
    volumes:
      - target-db-data:/var/lib/postgresql
      - ./config/postgresql.conf:/etc/postgresql/postgresql.conf:ro
"""
KOSTOV_CONF = "listen_addresses = '*'\nshared_buffers = 128MB\neffective_cache_size = 512MB\n"


@pytest.mark.parametrize("volume", ["./config/postgresql.conf:/etc/postgresql/postgresql.conf:ro",
                                    "./config:/etc/postgresql", "./config/:/etc/postgresql/:ro",
                                    "{type: bind, source: ./config, target: /etc/postgresql}"])
def test_a_config_file_mounted_from_a_file_of_a_subdirectory_is_read(tmp_path: Path, volume: str) -> None:
    """The config_file the command names is mounted from ./config/postgresql.conf (the file, or its directory): pgvet
    reads that file as the service's postgresql.conf (shared_buffers 128MB of a 16 GiB container judged, at its
    line), as it reads the directory's own postgresql.conf mounted there, rather than leaving every parameter
    unknown."""
    text = KOSTOV_TARGET_DB.replace("./config/postgresql.conf:/etc/postgresql/postgresql.conf:ro", volume)
    (tmp_path / "docker-compose.yml").write_text(text)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "postgresql.conf").write_text(KOSTOV_CONF)
    [host] = load_hosts(tmp_path)
    assert (host.facts["pg.shared_buffers"].value, host.facts["pg.shared_buffers"].source.path) == (
        128 * 1024 * 1024, "config/postgresql.conf")
    assert ("target-db", "PGV502", "postgresql.conf", 2) in lint_findings(tmp_path)


def test_the_directory_of_a_mounted_postgresql_conf_is_no_host_of_its_own(tmp_path: Path) -> None:
    """config/ holds only the postgresql.conf a service mounts as its config_file: it was a host of its own too,
    judged without the container's limits and on the newest major — wal_keep_segments, which the service's
    PostgreSQL 12 runs, an error there (PGV402)."""
    (tmp_path / "docker-compose.yml").write_text(KOSTOV_TARGET_DB.replace("postgres:18.3", "postgres:12"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "postgresql.conf").write_text(KOSTOV_CONF + "wal_keep_segments = 64\n")
    findings = lint_findings(tmp_path)
    assert {host for host, _, _, _ in findings} == {"target-db"}
    assert not {rule for _, rule, _, _ in findings} & {"PGV402"}
    # a directory with a host's other files beside it stays a host
    (tmp_path / "config" / "host.yaml").write_text("ram: 8GB\n")
    assert {host for host, _, _, _ in lint_findings(tmp_path)} == {"target-db", "config"}


def test_a_mounted_postgresql_conf_given_by_name_is_linted_with_the_service_that_mounts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pre-commit passes the changed file, config/postgresql.conf: it was linted as the host config/ alone, judged
    on the newest major (wal_keep_segments, which the service's PostgreSQL 12 runs, a PGV402 error that blocked the
    commit); it is the compose service's postgresql.conf, linted with it, as a search of the repository finds it."""
    (tmp_path / "docker-compose.yml").write_text(KOSTOV_TARGET_DB.replace("postgres:18.3", "postgres:12"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "postgresql.conf").write_text(KOSTOV_CONF + "wal_keep_segments = 64\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["lint", "config/postgresql.conf", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    findings = json.loads(result.output)["findings"]
    assert {finding["host"] for finding in findings} == {"target-db"}
    assert "PGV402" not in {finding["rule_id"] for finding in findings}
    assert "PGV502" in {finding["rule_id"] for finding in findings}  # shared_buffers 128MB of 16 GiB, judged there


def test_a_config_file_mounted_from_a_file_the_directory_lacks_leaves_its_parameters_unknown(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yml").write_text(KOSTOV_TARGET_DB)
    [host] = load_hosts(tmp_path)
    assert "pg.shared_buffers" in host.unread
    assert any("config/postgresql.conf" in note and "not in the directory" in note for note in host.notes)
    # a source out of the directory is not read, even where a file is there
    (tmp_path / "repo").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "postgresql.conf").write_text(KOSTOV_CONF)
    outside = KOSTOV_TARGET_DB.replace("./config/postgresql.conf:", "../config/postgresql.conf:")
    (tmp_path / "repo" / "docker-compose.yml").write_text(outside)
    [host] = load_hosts(tmp_path / "repo")
    assert "pg.shared_buffers" in host.unread
    # nor looked up through a link of the directory's that leads out (an automounter's /net/HOST/… mounts from that
    # host): whether a file is there is not asked
    (tmp_path / "repo" / "lnk").symlink_to(tmp_path / "config")
    (tmp_path / "repo" / "docker-compose.yml").write_text(outside.replace("../config/", "./lnk/"))
    looked_up: list[str] = []

    def recording(look_up: Any) -> Any:
        def recorded(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if kwargs.get("dir_fd") is None:
                looked_up.append(os.fspath(path))
            return look_up(path, *args, **kwargs)  # type: ignore[no-any-return]
        return recorded

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(os, "stat", recording(os.stat))
        patched.setattr(os, "lstat", recording(os.lstat))
        [host] = load_hosts(tmp_path / "repo")
    assert "pg.shared_buffers" in host.unread
    assert not [path for path in looked_up if path.endswith("lnk/postgresql.conf")], looked_up


def test_bitnamis_image_writes_its_own_values_into_the_postgresql_conf_it_generates() -> None:
    # libpostgresql.sh's postgresql_configure_replication_parameters, on the first boot of any node the image's
    # run.sh starts: max_wal_size was judged at PostgreSQL's 1GB
    text = ("services:\n  db:\n    image: docker.io/bitnami/postgresql:12.17.0\n    environment:\n"
            "      - POSTGRESQL_PASSWORD=secret\n")
    [host] = parse_compose(text, "docker-compose.yml")
    assert [(setting.name, setting.value, setting.source.path) for setting in host.settings] == [
        ("max_wal_size", "400MB", CONTAINER_SOURCE), ("max_wal_senders", "16", CONTAINER_SOURCE),
        ("hot_standby", "on", CONTAINER_SOURCE), ("wal_keep_segments", "12", CONTAINER_SOURCE)]
    # its options on postgres' command line run without run.sh, which writes nothing then; other images write none
    command = text + "    command: postgres -c max_connections=50\n"
    assert [setting.name for setting in parse_compose(command, "docker-compose.yml")[0].settings] == ["max_connections"]
    postgres = text.replace("bitnami/postgresql:12.17.0", "postgres:16")
    assert not parse_compose(postgres, "docker-compose.yml")[0].settings


@pytest.mark.parametrize("image", ["pgvector/pgvector:pg16", "tensorchord/pgvecto-rs:pg14-v0.2.0"])
def test_a_compose_file_running_only_a_pgvector_image_is_read(image: str) -> None:
    """The file was no input: its text never says "postgres", which the quick look for a compose file running
    PostgreSQL asked for."""
    text = f"services:\n  db:\n    image: {image}\n    command: -c shared_buffers=1GB\n"
    assert [kind.name for kind in document_kinds() if kind.recognises("compose.yaml", text)] == ["compose"]
    assert settings(only(text)) == [("shared_buffers", "1GB", 4)]


@pytest.mark.parametrize(("image", "extra", "refused"), [
    ("postgres:18-alpine", "", True),
    ("postgres", "", True),  # latest is 18
    ("postgres:latest", "", True),
    ("pgvector/pgvector:pg18", "", True),
    ("postgres:17", "", False),
    ("postgres:18", "    environment:\n      PGDATA: /var/lib/postgresql/data\n", False),
    ("postgres:${PG_TAG}", "", False),  # a version pgvet cannot know
    ("bitnami/postgresql:18", "", False),  # another layout
])
def test_a_volume_at_the_data_directory_of_before_18_stops_the_18_image(
        tmp_path: Path, image: str, extra: str, refused: bool) -> None:
    """docker-library/postgres 18's entrypoint (docker_setup_env) refuses to start while /var/lib/postgresql/data is
    a mount point and its data directory, /var/lib/postgresql/18/docker, holds no database: the compose files of
    before 18, their tag raised, never start ("unused mount/volume")."""
    text = f"services:\n  db:\n    image: {image}\n{extra}    volumes:\n      - pgdata:/var/lib/postgresql/data\n"
    problems = [problem for problem in only(text).problems if problem.kind == "data-mount-before-18"]
    assert bool(problems) is refused
    if refused:
        assert problems[0].fatal and problems[0].source.line == line_of(text, "- pgdata:")
        (tmp_path / "compose.yaml").write_text(text)
        assert ("db", "PGV407", "compose.yaml", line_of(text, "- pgdata:")) in lint_findings(tmp_path)
        moved = text.replace("pgdata:/var/lib/postgresql/data", "pgdata:/var/lib/postgresql")
        assert not [problem for problem in only(moved).problems if problem.kind == "data-mount-before-18"]
