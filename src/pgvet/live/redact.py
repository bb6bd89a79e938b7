"""What a collection must never write or print, found by its shape rather than from a list of known secrets.

- Connection strings (the DSN, ``primary_conninfo``): a keyword/value conninfo or a URI keeps the values of
  the libpq keywords that are never secret (host, port, user, dbname…); every other value — ``password``,
  ``sslpassword``, a misspelt ``passwrd``, a keyword of a newer libpq — becomes ``***``, and a ``dbname``
  that is itself a conninfo or a URI (libpq expands one) is redacted in turn. ``options`` (the server's
  command-line options, ``-c name=value``) keeps each setting's name, its value redacted as a configuration
  file's would be (below), and loses any other word but a flag. A conninfo that cannot be tokenized loses
  everything from the token that breaks it.
- Settings (pg_settings, pg_file_settings, configuration files): a shell command (any ``*_command``:
  archive, restore, ssl_passphrase…) and a custom setting (a dotted name, ``myext.api_key``: pgvet cannot
  tell an extension's key from its cache size, and no rule reads one) keep their name and lose their
  value; a connection string (``primary_conninfo``) is redacted as above. An empty value stays empty: it
  holds nothing, and "not set" is worth seeing.
- Kernel parameters: those the kernel keeps from other users (a /proc/sys file that is not world-readable,
  such as ``net.ipv4.tcp_fastopen_key``), and by name ``*.tcp_fastopen_key`` and ``*.stable_secret``.

The replacement is always ``***`` (in a configuration file, the quoted ``'***'``): its length says nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Set as AbstractSet
from typing import Any
from urllib.parse import quote, unquote

from pgvet.inputs.postgresql_conf import LETTER
from pgvet.pgparams import known_parameter_names

REDACTED = "***"

# libpq keywords whose values are shown; any other keyword's value is a secret or might be.
SHOWN_KEYWORDS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "options", "application_name", "fallback_application_name",
    "connect_timeout", "client_encoding", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode", "sslnegotiation",
    "sslcompression", "sslcert", "sslkey", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni",
    "requirepeer", "require_auth", "channel_binding", "ssl_min_protocol_version", "ssl_max_protocol_version",
    "min_protocol_version", "max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service",
    "target_session_attrs", "load_balance_hosts", "passfile",
})
# Parameters whose value is a libpq connection string.
CONNINFO_PARAMETERS = frozenset({"primary_conninfo"})
# Kernel parameters that are secrets whatever their file's mode says (a sysctl -a text from elsewhere).
SECRET_SYSCTL_SUFFIXES = (".tcp_fastopen_key", ".stable_secret")

_URI_PREFIXES = ("postgresql://", "postgres://")
_CONNINFO_SPACE = " \t\n\r\f\v"


# --- connection strings ----------------------------------------------------------------------------------


def _nested(value: str) -> bool:
    """Whether a dbname is itself a connection string, as libpq tells (a URI prefix, or an ``=``)."""
    return value.startswith(_URI_PREFIXES) or "=" in value


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _unquoted(token: str) -> str:
    """A conninfo value as libpq reads it: quotes removed, backslash escapes resolved."""
    if token.startswith("'"):
        token = token[1:-1] if token.endswith("'") and len(token) > 1 else token[1:]
    return re.sub(r"\\(.)", r"\1", token)


def _redact_conninfo(conninfo: str) -> tuple[str, list[str]]:
    """The conninfo redacted, and the secret texts it held; tokenized as libpq does."""
    pieces: list[str] = []
    secrets: list[str] = []
    position, length = 0, len(conninfo)
    while True:
        start = position
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        if position == length:
            pieces.append(conninfo[start:])
            return "".join(pieces), secrets
        keyword_start = position
        while position < length and conninfo[position] not in _CONNINFO_SPACE and conninfo[position] != "=":
            position += 1
        keyword = conninfo[keyword_start:position]
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        if position == length or conninfo[position] != "=":  # no '=': the rest may be anything
            pieces.append(conninfo[start:keyword_start] + REDACTED)
            secrets.append(conninfo[keyword_start:].rstrip(_CONNINFO_SPACE))
            return "".join(pieces), secrets
        position += 1
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        value_start = position
        closed = True
        if position < length and conninfo[position] == "'":
            position += 1
            while position < length and conninfo[position] != "'":
                position += 2 if conninfo[position] == "\\" else 1
            closed = position < length
            position = min(position + 1, length)
        else:
            while position < length and conninfo[position] not in _CONNINFO_SPACE:
                position += 2 if conninfo[position] == "\\" else 1
            position = min(position, length)
        pieces.append(conninfo[start:value_start])
        token = conninfo[value_start:position]
        if not closed:  # an unterminated quote: the rest may be anything
            pieces.append(REDACTED)
            secrets.append(token)
            return "".join(pieces), secrets
        value = _unquoted(token)
        if keyword == "dbname" and _nested(value):
            inner, inner_secrets = _redact_dsn(value)
            pieces.append(_quoted(inner))
            secrets.extend(inner_secrets)
        elif keyword == "options":
            shown, hidden = _redact_options(value)
            pieces.append(_quoted(shown) if hidden else token)
            secrets.extend(hidden)
        elif keyword in SHOWN_KEYWORDS:
            pieces.append(token)
        else:
            pieces.append(REDACTED)
            secrets.extend([token, value])


def _redact_uri(uri: str) -> tuple[str, list[str]]:
    secrets: list[str] = []
    scheme_end = uri.index("://") + 3
    rest = uri[scheme_end:]
    authority_end = min((index for index in (rest.find(char) for char in "/?") if index >= 0), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    at, colon = rest.rfind("@"), rest.find(":")
    if "@" not in authority and 0 <= colon < at:
        # `postgresql://app:Ab3/x9+Q@db1/app`: a password holding '/' or '?' not percent-encoded (base64 makes
        # them), where libpq ends the authority; the user meant everything up to the last '@'. Its pieces go too:
        # libpq's error quotes what it took for the host, the port or the database.
        password = rest[colon + 1:at]
        secrets += [password, *(piece for piece in re.split(r"[/?#]", password) if len(piece) >= 4)]
        redacted, more = _redact_uri(uri[:scheme_end] + rest[:colon + 1] + REDACTED + rest[at:])
        return redacted, secrets + [each for each in more if each != REDACTED]
    if "@" in authority:
        userinfo, hosts = authority.rsplit("@", 1)
        if ":" in userinfo:
            user, password = userinfo.split(":", 1)
            secrets.append(password)
            authority = f"{user}:{REDACTED}@{hosts}"
    path, question, query = tail.partition("?")
    if _nested(unquote(path.lstrip("/"))):
        secrets.append(path[1:])
        path = "/" + REDACTED
    if question:
        parameters = []
        for parameter in query.split("&"):
            key, equals, value = parameter.partition("=")
            name = unquote(key)
            if equals and name == "options":
                shown, hidden = _redact_options(unquote(value))
                parameters.append(f"{key}={quote(shown, safe='')}" if hidden else parameter)
                secrets.extend([value, *hidden] if hidden else [])
            elif equals and (name not in SHOWN_KEYWORDS or (name == "dbname" and _nested(unquote(value)))):
                parameters.append(f"{key}={REDACTED}")
                secrets.append(value)
            else:
                parameters.append(parameter)
        query = "&".join(parameters)
    return uri[:scheme_end] + authority + path + question + query, secrets


# A word of the options keyword's value: libpq splits it at blanks, a backslash keeping the next character.
_OPTIONS_WORD = re.compile(r"(?:\\.|[^\s\\])+|\\$", re.DOTALL)
_OPTIONS_SETTING = re.compile(r"(?P<flag>--|-c)?(?P<name>[A-Za-z_][\w.$-]*)=(?P<value>.*)", re.DOTALL)


def _redact_options(options: str) -> tuple[str, list[str]]:
    """The ``options`` value with each setting's value (``-c name=value``, ``--name=value``) redacted as
    redact_setting does and any other word but a flag (``-c``, ``-B``) replaced: the server's options may carry a
    secret anywhere. The secret texts with it (none: kept as it is)."""
    secrets: list[str] = []

    def word(match: re.Match[str]) -> str:
        text = match.group(0)
        if re.fullmatch(r"-[A-Za-z]|\d+[A-Za-z]*", text):  # a flag, or a number (-B 1024, -N 100)
            return text
        setting = _OPTIONS_SETTING.fullmatch(text)
        if setting is not None:
            value = re.sub(r"\\(.)", r"\1", setting["value"], flags=re.DOTALL)
            shown = redact_setting(setting["name"], value)
            if shown == value:
                return text
            secrets.extend([setting["value"], value])
            return f"{setting['flag'] or ''}{setting['name']}={shown}"
        secrets.append(text)
        return REDACTED

    return _OPTIONS_WORD.sub(word, options), secrets


def _redact_dsn(dsn: str) -> tuple[str, list[str]]:
    return _redact_uri(dsn) if dsn.startswith(_URI_PREFIXES) else _redact_conninfo(dsn)


def redact_dsn(dsn: str) -> str:
    """The DSN (a conninfo or a URI) with every value that may be secret replaced by ``***``."""
    return _redact_dsn(dsn)[0]


def secrets_in(dsn: str) -> list[str]:
    """Every secret text a DSN holds, as written and as libpq reads it (quotes, escapes, percent-encoding)."""
    found = _redact_dsn(dsn)[1]
    found = found + [unquote(each) for each in found] + [_unquoted(each) for each in found]
    return sorted({each for each in found if each}, key=len, reverse=True)


def scrub(message: str, dsn: str) -> str:
    """``message`` with every secret of ``dsn`` and of the environment libpq reads (PGPASSWORD) removed."""
    secrets = secrets_in(dsn)
    password = os.environ.get("PGPASSWORD")
    if password:
        secrets.append(password)
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return message


# --- settings --------------------------------------------------------------------------------------------


# Custom settings the rules read, kept when their value has the only form the extension accepts (a placeholder,
# its library not loaded, takes any text: a secret written there is redacted like any custom setting's).
_BOOLEAN = re.compile(r"on|off|true|false|yes|no|1|0", re.IGNORECASE)
_READ_CUSTOM_SETTINGS = {
    "pg_stat_statements.max": re.compile(r"\d{1,10}"),
    "pg_stat_statements.track": re.compile(r"top|all|none", re.IGNORECASE),
    "pg_stat_statements.track_utility": _BOOLEAN,
    "pg_stat_statements.track_planning": _BOOLEAN,
    "pg_stat_statements.save": _BOOLEAN,
}


def _is_command_or_custom(lower: str) -> bool:
    return lower.endswith("_command") or "." in lower


def _may_hold_secret(lower: str) -> bool:
    """Whether a setting's value may hold a secret (what redact_setting redacts, or may)."""
    return lower in CONNINFO_PARAMETERS or _is_command_or_custom(lower)


def redact_setting(name: str, value: str | None) -> str | None:
    """A setting's value as it may be written: a command or a custom setting's value is ``***`` (an empty one
    stays empty; pg_stat_statements' own, which the rules read, are kept in the form the extension accepts), a
    connection string is redacted, anything else is kept."""
    lower = name.lower()
    if value is None:
        return None
    if lower in CONNINFO_PARAMETERS:
        return redact_dsn(value)
    if _is_command_or_custom(lower):
        form = _READ_CUSTOM_SETTINGS.get(lower)
        if form is not None and form.fullmatch(value.strip()):
            return value
        return REDACTED if value else value
    return value


# The blanks around an optional '=' are one \s* before it, inside the optional group: `\s*=?\s*` could split a run of
# blanks between its two halves in as many ways as it is long, which a line of blanks after a name (no value) tried
# each: quadratic, minutes for a line the server's superuser writes into its configuration file.
# name = value, commented out or not (a commented line may hold a secret that still works: there the '=' is
# required, so that prose in comments is left alone), the value quoted ('…' with '' and \' inside; an
# unterminated quote takes the rest of the line) or a bare word, then anything.
# A name as PostgreSQL's lexer reads one (guc-file.l: a letter, '_' or any byte from 0x80, then digits too): a
# name in another alphabet is a custom setting's all the same.
# The class is written as the negation of the ASCII characters it lacks (as the lexer's, in
# pgvet.inputs.postgresql_conf): a \x80-\U0010ffff range is slow to compile.
NAME_CHAR = r"[^\x00-\x23\x25-\x2c\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"  # [\w.$-] or non-ASCII
_NAME = rf"{LETTER}{NAME_CHAR}*(?!{NAME_CHAR})"
_SETTING_LINE = re.compile(rf"(?P<head>\s*(?:#\s*(?P<commented>{_NAME})\s*=|(?P<name>{_NAME})(?:\s*=)?)\s*)"
                           r"(?P<value>'(?:[^'\\\n]|''|\\.)*'|'[^\n]*|[^\s#'][^\s#]*)(?P<tail>.*)", re.DOTALL)
_CLEAN_TAIL = re.compile(r"[ \t\f\v]*(?:#.*)?\r?\n?", re.DOTALL)


_DIRECTIVES = frozenset({"include", "include_dir", "include_if_exists"})


def recognised_names(settings: list[dict[str, Any]] | None) -> frozenset[str]:
    """The names of a server's settings (pg_settings rows), lower case, for unrecognised."""
    return frozenset(str(setting["name"]).lower() for setting in settings or () if setting.get("name"))


def unrecognised(name: str, recognised: AbstractSet[str]) -> bool:
    """Whether ``name`` is no setting of the server's (``recognised``: its names, lower case), nor a custom setting's
    (dotted), an include or another major's (or an alias, sort_mem): a line of another file that a superuser's
    include named, which PostgreSQL refuses (an environment file's ``PGPASSWORD=…``, ``AWS_SECRET_ACCESS_KEY=…``),
    its value no setting's and to be redacted."""
    lower = name.lower()
    return ("." not in lower and lower not in recognised and lower not in _DIRECTIVES
            and lower not in known_parameter_names())


def redact_conf_text(text: str, recognised: AbstractSet[str] | None = None) -> str:
    """A configuration file with every secret value replaced (quoted ``'***'``); every other byte kept. Lines end at
    '\n' only, as PostgreSQL's lexer ends them (a form feed or U+2028 inside a quoted value is part of it). With
    ``recognised`` (the names the server knows), a setting of a name it does not know has its value redacted too
    (unrecognised); a commented-out line's is left as it is."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        match = _SETTING_LINE.fullmatch(line)
        if match is None:
            continue
        quoted = match.group("value")
        closed = len(quoted) > 1 and quoted.endswith("'")
        value = (quoted[1:-1] if closed else quoted[1:]).replace("''", "'") if quoted.startswith("'") else quoted
        name = match.group("commented") or match.group("name")
        redacted = (REDACTED if value and recognised is not None and match.group("name") and unrecognised(
            name, recognised) else redact_setting(name, value))
        # After the value only a comment may follow; anything else (a line PostgreSQL refuses) may go on with the
        # secret, and goes: after a value redacted, or one of a setting that may hold a secret (a connection string
        # with no password, then `'password=…'`).
        tail = match.group("tail")
        clean = _CLEAN_TAIL.fullmatch(tail) is not None
        if redacted is None or (redacted == value and (clean or not _may_hold_secret(name.lower()))):
            continue
        kept = tail if clean else tail[len(tail.rstrip("\r\n")):]
        shown = quoted if redacted == value else "'" + redacted.replace("'", "''") + "'"
        lines[index] = match.group("head") + shown + kept
    return "\n".join(lines)


# --- kernel parameters -----------------------------------------------------------------------------------


def redact_sysctl_text(text: str, private_keys: frozenset[str]) -> str:
    """``sysctl -a`` output with the value of every private or secret-named key replaced by ``***``."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        key, separator, _ = line.partition(" = ")
        if separator and (key in private_keys or key.endswith(SECRET_SYSCTL_SUFFIXES)):
            lines[index] = f"{key} = {REDACTED}\n"
    return "".join(lines)
