"""Generate pgvet's parameter tables from real PostgreSQL servers.

For every installed major version (see ``pgservers``) this starts a server on a fresh cluster
(Unix socket in a temporary directory, ``listen_addresses=''``), reads ``pg_settings`` and writes
``src/pgvet/pgparams/data/pgNN.json``: one object per parameter, sorted by name, one per line so a
regeneration diffs cleanly. Run it again after upgrading a server binary::

    python scripts/gen_pgparams.py            # every installed major
    python scripts/gen_pgparams.py 17 18      # some

What ``pg_settings`` does not tell, and how we learn it from the same server:

- **Hidden parameters** (``GUC_NO_SHOW_ALL``) are absent from ``pg_settings`` but reachable by
  ``SHOW``. The candidate names are every identifier in the ``postgres`` binary; those with a
  ``current_setting(name, true)`` are the hidden ones (plus the old-name aliases of guc.c's
  ``map_old_guc_names``: ``sort_mem`` → ``work_mem``…). Their type and range are written below by
  hand from guc_tables.c and checked against the server.
- **Hidden enum values** (``config_enum_entry.hidden``: ``wal_level = archive``, ``huge_pages = 1``,
  ``client_min_messages = debug``): accepted but not listed in ``enumvals``. Every spelling listed by
  any enum plus the boolean spellings is tried on every settable enum; what the server accepts and
  reports back is recorded with the listed value it maps to.
- **Exact real bounds**: ``pg_settings`` prints them with ``%g`` (``DBL_MAX`` as ``1.79769e+308``);
  the exact double is recovered and checked (accepted at the bound, rejected one ulp beyond).

- **Values that depend on build options** (BUILD_DEPENDENT_VALUES: ``wal_compression = lz4`` needs
  ``--with-lz4``, ``io_method = io_uring`` ``--with-liburing``, ``ssl = on`` SSL…): each is tried on the
  server. A build that lacks the option refuses it and does not list it; the parameter table lists it all the same,
  where the builds that have the option list it, and records the option in ``build_options``, so that every
  parameter table judges values as the mainstream builds (PGDG, Debian, Red Hat) do whatever build generated it.
- **Before 15** there is no ``pg_settings_get_flags``: ``flags`` are left empty (pgvet does not read them), and
  a name SHOW knows that pg_settings does not list is hidden when HIDDEN_PARAMS has it, an alias when
  OLD_NAMES does.

``reset_val`` is not stored: it is what initdb wrote into the sample cluster's postgresql.conf (time
zone, locale, probed ``max_connections``), a fact about this machine rather than about PostgreSQL.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgservers

DATA_DIR = Path(__file__).resolve().parent.parent / "src" / "pgvet" / "pgparams" / "data"
DBL_MAX_TEXT = "1.79769e+308"
BOOLEAN_SPELLINGS = ("on", "off", "true", "false", "yes", "no", "1", "0")
# Hidden values are found among every listed value plus these (guc_tables.c, xlog.c: the
# config_enum_entry rows marked hidden that no enum lists).
EXTRA_ENUM_CANDIDATES = ("archive", "hot_standby", "debug", "info")
# guc.c map_old_guc_names: names PostgreSQL still accepts for a renamed parameter.
OLD_NAMES = {"sort_mem": "work_mem", "vacuum_mem": "maintenance_work_mem", "ssl_ecdh_curve": "ssl_groups"}

# GUC_NO_SHOW_ALL parameters: type, unit and range from guc_tables.c (REL_15–REL_18), checked by
# verify_hidden() against the server. Only those still reachable by SHOW are kept.
HIDDEN_PARAMS: dict[str, dict[str, Any]] = {
    "default_with_oids": {"vartype": "bool", "context": "user", "boot_val": "off",
                          "category": "Version and Platform Compatibility / Previous PostgreSQL Versions",
                          "short_desc": "WITH OIDS is no longer supported; this can only be false."},
    "is_superuser": {"vartype": "bool", "context": "internal", "boot_val": "off",
                     "category": "Preset Options",
                     "short_desc": "Shows whether the current user is a superuser."},
    "role": {"vartype": "string", "context": "user", "boot_val": "none",
             "category": "Ungrouped", "short_desc": "Sets the current role."},
    "seed": {"vartype": "real", "context": "user", "boot_val": "0", "min": -1.0, "max": 1.0,
             "category": "Ungrouped", "short_desc": "Sets the seed for random-number generation."},
    "session_authorization": {"vartype": "string", "context": "user", "boot_val": "",
                              "category": "Ungrouped", "short_desc": "Sets the session user name."},
    "ssl_renegotiation_limit": {"vartype": "integer", "context": "user", "boot_val": "0",
                                "min": 0, "max": 0,
                                "category": "Connections and Authentication / SSL",
                                "short_desc": "SSL renegotiation is no longer supported; this can only be 0."},
}


# Values accepted only by builds made with an option (guc_tables.c's #ifdef USE_LZ4, USE_ZSTD,
# IOMETHOD_IO_URING_ENABLED; the check hooks of ssl and bonjour): parameter, value, option (a key of
# pgvet.pgparams.BUILD_OPTIONS), first major with the value, and the listed value it follows in the builds
# that have it (None for a boolean).
BUILD_DEPENDENT_VALUES: tuple[tuple[str, str, str, int, str | None], ...] = (
    ("default_toast_compression", "lz4", "lz4", 14, "pglz"),
    ("wal_compression", "lz4", "lz4", 15, "pglz"),
    ("wal_compression", "zstd", "zstd", 15, "lz4"),
    ("io_method", "io_uring", "liburing", 18, "worker"),
    ("ssl", "on", "ssl", 10, None),
    ("bonjour", "on", "bonjour", 10, None),
)
# How a build without the option refuses a boolean's value (an enum's is "invalid value for parameter").
BUILD_REFUSALS = {"ssl": "SSL is not supported by this build", "bonjour": "Bonjour is not supported by this build"}

# Sets a value for its own transaction only and reads it back (pg_settings.setting, or SHOW's text for
# hidden parameters) in the same statement. statement_timeout is armed when a statement starts,
# lock_timeout only while waiting for a lock, the idle timeouts only between statements: so a tiny value
# cannot cancel the probe that sets it, and, the connection being in autocommit, the value ends with the
# probe, so it cannot cancel the next query either (as a session-wide SET followed by a SELECT did).
PROBE_FUNCTION = """
CREATE FUNCTION pg_temp.probe(text, text) RETURNS text LANGUAGE sql AS $$
    SELECT set_config($1, $2, true);
    SELECT coalesce((SELECT setting FROM pg_settings WHERE name = $1), current_setting($1));
$$"""
# Parameters whose assign hook arms their timer as soon as they are set, even inside a transaction
# (transaction_timeout, 17+): a tiny value would end the session during the probe itself.
ARMED_WHEN_SET = frozenset({"transaction_timeout"})


@dataclass
class Rejection:
    """An error PostgreSQL raised for a value: its primary message and hint."""

    message: str
    hint: str | None


class Server:
    """A running server on a fresh cluster, reachable only by its Unix socket.

    ``set_value`` asks the server itself to parse a value: ``pg_temp.probe`` (PROBE_FUNCTION) for
    parameters a superuser session can change, ``postgres -C`` (a second process on the same data
    directory, about 10 ms) for the others and for ARMED_WHEN_SET.
    """

    def __init__(self, major: int) -> None:
        self.major = major
        self.data = pgservers.fresh_cluster(major)
        self.socket_dir = pgservers.make_tempdir("pgvet-sock-")
        started = pgservers.run(major, "pg_ctl", [
            "-D", str(self.data), "-w", "-l", str(self.socket_dir / "server.log"),
            "-o", f"-c listen_addresses='' -k {self.socket_dir}", "start"])
        if started.returncode != 0:
            raise RuntimeError(f"PostgreSQL {major} did not start: {started.stderr}")
        self.connection = psycopg.connect(host=str(self.socket_dir), user="postgres", dbname="postgres",
                                          autocommit=True)
        self.contexts: dict[str, str] = dict(self.query("SELECT name, context FROM pg_settings"))
        self.connection.execute(PROBE_FUNCTION)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def stop(self) -> None:
        self.connection.close()
        pgservers.run(self.major, "pg_ctl", ["-D", str(self.data), "-m", "immediate", "stop"])
        shutil.rmtree(self.data.parent, ignore_errors=True)
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    def session_settable(self, name: str) -> bool:
        return self.contexts.get(name.lower(), self.contexts.get(name)) in ("user", "superuser")

    def set_value(self, name: str, value: str) -> str | Rejection:
        """The ``setting`` PostgreSQL derives from ``value``, or how it rejects it."""
        if not self.session_settable(name) or name.lower() in ARMED_WHEN_SET:
            return self.dash_c(name, value)
        try:
            return str(self.query("SELECT pg_temp.probe(%s, %s)", (name, value))[0][0])
        except psycopg.Error as error:
            return Rejection(error.diag.message_primary or "", error.diag.message_hint)

    def dash_c(self, name: str, value: str) -> str | Rejection:
        """``postgres -C name -c name=value``: how the server parses a value given at startup."""
        result = pgservers.run(self.major, "postgres", ["-D", str(self.data), "-C", name, "-c", f"{name}={value}"])
        if result.returncode == 0:
            return result.stdout.removesuffix("\n")
        message, hint = "", None
        for line in result.stderr.splitlines():
            found = re.search(r"\b(FATAL|ERROR|HINT):  (.*)$", line)
            if found and found.group(1) == "HINT":
                hint = found.group(2)
            elif found and not message:
                message = found.group(2)
        if not message:
            raise RuntimeError(f"postgres -C {name} failed without a message: {result.stderr}")
        return Rejection(message, hint)


@contextmanager
def running_server(major: int) -> Iterator[Server]:
    server = Server(major)
    try:
        yield server
    finally:
        server.stop()


def _number(vartype: str, text: str | None) -> int | float | None:
    if text is None:
        return None
    if vartype == "integer":
        return int(text)
    if text in (DBL_MAX_TEXT, "-" + DBL_MAX_TEXT):  # %g rounding of ±DBL_MAX, the usual "no limit"
        return math.copysign(sys.float_info.max, float(text))
    return float(text)


def _flags_sql(server: Server, name: str) -> str:
    """pg_settings_get_flags(name) from 15 on; no flags before."""
    return f"pg_settings_get_flags({name})" if server.major >= 15 else "NULL::text[]"


def read_settings(server: Server) -> list[dict[str, Any]]:
    rows = server.query(
        "SELECT name, vartype, unit, min_val, max_val, enumvals, boot_val, context, category, short_desc,"
        f" {_flags_sql(server, 'name')} FROM pg_settings ORDER BY lower(name)")
    params = []
    for name, vartype, unit, min_val, max_val, enumvals, boot_val, context, category, short_desc, flags in rows:
        params.append({
            "name": name, "vartype": vartype, "unit": unit,
            "min": _number(vartype, min_val), "max": _number(vartype, max_val),
            "enumvals": list(enumvals or []), "hidden_enumvals": {},
            "boot_val": boot_val if boot_val is not None else "",
            "context": context, "category": category, "short_desc": short_desc,
            "flags": sorted(flags or []), "hidden": False, "build_options": {},
        })
    return params


def find_hidden(server: Server, known: set[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Hidden parameters and old-name aliases: identifiers of the binary that SHOW knows."""
    binary = (pgservers.bindir(server.major) or Path()) / "postgres"
    words = sorted({word.decode() for word in re.findall(rb"[a-z_][a-z0-9_]{2,62}", binary.read_bytes())})
    found = server.query(
        f"SELECT n, {_flags_sql(server, 'n')} FROM unnest(%s::text[]) n WHERE current_setting(n, true) IS NOT NULL",
        (words,))
    hidden, aliases = [], {}
    lower_known = {name.lower(): name for name in known}
    for name, flags in found:
        if name in lower_known:
            continue
        if ("NO_SHOW_ALL" not in (flags or [])) if server.major >= 15 else name not in HIDDEN_PARAMS:
            aliases[name] = _alias_target(server, name, lower_known)
            continue
        if name not in HIDDEN_PARAMS:
            raise RuntimeError(f"PostgreSQL {server.major} has a hidden parameter {name} missing from HIDDEN_PARAMS")
        spec = HIDDEN_PARAMS[name]
        hidden.append({
            "name": name, "vartype": spec["vartype"], "unit": spec.get("unit"),
            "min": spec.get("min"), "max": spec.get("max"), "enumvals": [], "hidden_enumvals": {},
            "boot_val": spec["boot_val"], "context": spec["context"], "category": spec["category"],
            "short_desc": spec["short_desc"], "flags": sorted(flags or []), "hidden": True, "build_options": {},
        })
    return hidden, aliases


def _alias_target(server: Server, alias: str, lower_known: dict[str, str]) -> str:
    """The parameter an old name stands for (guc.c map_old_guc_names), checked by a shared value."""
    target = OLD_NAMES.get(alias)
    if target is None or target not in lower_known:
        raise RuntimeError(f"PostgreSQL {server.major} knows {alias}, which is neither shown nor in OLD_NAMES")
    same = server.query("SELECT current_setting(%s) = current_setting(%s)", (alias, target))[0][0]
    if not same:
        raise RuntimeError(f"{alias} does not show the value of {target}")
    return target


def find_hidden_enum_values(server: Server, params: list[dict[str, Any]]) -> None:
    candidates = {value.lower() for param in params for value in param["enumvals"]}
    candidates.update(BOOLEAN_SPELLINGS, EXTRA_ENUM_CANDIDATES)
    for param in params:
        if param["vartype"] != "enum" or param["context"] == "internal" or param["hidden"]:
            continue
        listed = {value.lower() for value in param["enumvals"]}
        hidden = {}
        for candidate in sorted(candidates - listed):
            outcome = server.set_value(param["name"], candidate)
            if isinstance(outcome, str):
                hidden[candidate] = outcome
        param["hidden_enumvals"] = hidden


def add_build_dependent_values(server: Server, params: list[dict[str, Any]]) -> None:
    """List each build-dependent value as the builds with its option do, and record the option; check that
    this build either accepts and lists it or refuses it as a build without the option does."""
    by_name = {param["name"]: param for param in params}
    for name, value, option, since, after in BUILD_DEPENDENT_VALUES:
        param = by_name.get(name)
        if param is None or server.major < since:
            continue
        outcome = server.set_value(name, value)
        listed = param["vartype"] != "enum" or value in param["enumvals"]
        if isinstance(outcome, Rejection):
            expected = BUILD_REFUSALS.get(name, f'invalid value for parameter "{name}"')
            if (listed and param["vartype"] == "enum") or not outcome.message.startswith(expected):
                raise RuntimeError(f"{name} = {value}: refused as {outcome.message!r}, expected {expected!r}")
            if param["vartype"] == "enum":
                param["enumvals"].insert(param["enumvals"].index(after) + 1, value)
        elif not listed:
            raise RuntimeError(f"{name} = {value} is accepted but not listed")
        param["build_options"][value] = option


def verify_real_bounds(server: Server, params: list[dict[str, Any]]) -> None:
    """The exact double bounds: accepted as such, rejected one ulp outside."""
    for param in params:
        if param["vartype"] != "real" or param["context"] == "internal":
            continue
        for bound, outward in ((param["min"], -math.inf), (param["max"], math.inf)):
            inside = server.set_value(param["name"], repr(bound))
            outside = server.set_value(param["name"], repr(_just_outside(bound, outward)))
            if isinstance(inside, Rejection) or not isinstance(outside, Rejection) \
                    or "outside the valid range" not in outside.message:
                raise RuntimeError(f"{param['name']}: bound {bound!r} is not exact ({inside}, {outside})")


def _just_outside(bound: float, outward: float) -> float:
    """One ulp outside a bound, or the smallest normal double when that would be subnormal
    (glibc's strtod reports a subnormal result as ERANGE, which PostgreSQL rejects as a syntax error)."""
    beyond = math.nextafter(bound, outward)
    return beyond if abs(beyond) >= sys.float_info.min else math.copysign(sys.float_info.min, outward)


def verify_hidden(server: Server, hidden: list[dict[str, Any]]) -> None:
    """The hand-written ranges of hidden numeric parameters, against the server's own messages."""
    for param in hidden:
        if param["vartype"] == "integer":
            above = server.set_value(param["name"], str(param["max"] + 1))
            unit = f" {param['unit']}" if param["unit"] else ""
            expected = (f"{param['max'] + 1}{unit} is outside the valid range for parameter \"{param['name']}\" "
                        f"({param['min']}{unit} .. {param['max']}{unit})")
            if not isinstance(above, Rejection) or above.message != expected:
                raise RuntimeError(f"hidden {param['name']}: expected {expected!r}, got {above}")
        if param["vartype"] == "real":
            for bound, outward in ((param["min"], -math.inf), (param["max"], math.inf)):
                if isinstance(server.set_value(param["name"], repr(bound)), Rejection) or not isinstance(
                        server.set_value(param["name"], repr(_just_outside(bound, outward))), Rejection):
                    raise RuntimeError(f"hidden {param['name']}: bound {bound!r} is wrong")


def generate(major: int) -> dict[str, Any]:
    with running_server(major) as server:
        version = str(server.query("SHOW server_version")[0][0])
        params = read_settings(server)
        hidden, aliases = find_hidden(server, {param["name"] for param in params})
        verify_hidden(server, hidden)
        find_hidden_enum_values(server, params)
        add_build_dependent_values(server, params)
        verify_real_bounds(server, params)
    params = sorted(params + hidden, key=lambda param: param["name"].lower())
    return {"major": major, "server_version": version, "aliases": dict(sorted(aliases.items())), "params": params}


def dumps(param_table: dict[str, Any]) -> str:
    """Compact, deterministic JSON with one parameter per line (readable diffs between versions)."""
    def compact(value: object) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    head = {key: value for key, value in param_table.items() if key != "params"}
    lines = [compact(param) for param in param_table["params"]]
    return compact(head)[:-1] + ',"params":[\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str]) -> int:
    majors = [int(arg) for arg in argv] or pgservers.available_majors()
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for major in majors:
        param_table = generate(major)
        path = DATA_DIR / f"pg{major}.json"
        path.write_text(dumps(param_table), encoding="utf-8")
        hidden = sorted(param["name"] for param in param_table["params"] if param["hidden"])
        print(f"{path}: PostgreSQL {param_table['server_version']}, {len(param_table['params'])} parameters "
              f"(hidden: {', '.join(hidden)}; aliases: {param_table['aliases']})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except subprocess.TimeoutExpired as timeout:
        sys.exit(f"timed out: {timeout}")
