"""Secrets where a command line, a header, a URL or a file holds them: ``--password=…``, ``mysql -p…``,
``curl -u user:pw``, ``Authorization: Bearer …``, a URL's password, a ``.netrc`` line."""

from __future__ import annotations

import re

from threadmem.lib.secrets import shapes
from threadmem.lib.secrets.rule import Rule, Span, SpanOf, checked, group


def _alone(span_of: SpanOf) -> SpanOf:
    """``span_of``, when the match starts a word (``password …``, not ``my_password …``)."""

    def span(text: str, match: re.Match[str]) -> Span | None:
        before = text[match.start() - 1 : match.start()]
        return span_of(text, match) if not before or before in " \t\n" else None

    return span


def _password(value: str) -> bool:
    return not shapes.is_placeholder(value) and not shapes.is_code(value, phrases=False)


def _any_password(value: str) -> bool:
    """A URL's password: any value that is not a placeholder (``user:postgres@`` is a password, a weak one)."""
    return not shapes.is_placeholder(value) and not value.startswith("$")


def _opaque(value: str) -> bool:
    """A token after a scheme's name (``Bearer …``), which prose also writes (``basic render/1``)."""
    return len(value) >= 12 and _bearer(value)


def _bearer(value: str) -> bool:
    return len(value) >= 8 and not shapes.is_placeholder(value) and not shapes.is_code(value)


_COMMAND_VALUE = r"""['"]?([^\s'"]{1,200})"""
RULES: tuple[Rule, ...] = (
    Rule(
        "password",
        re.compile(rf"(?:mysql|mariadb|mysqldump|mysqladmin)\b[^\n]{{0,300}}?\s-p(?!\s){_COMMAND_VALUE}"),
        ("mysql", "mariadb"),
        span=checked(group(1), _password),
        after=520,
        source="https://dev.mysql.com/doc/refman/8.0/en/connection-options.html#option_general_password",
    ),
    Rule(
        "password",
        re.compile(rf"sshpass\s+-p\s*{_COMMAND_VALUE}"),
        ("sshpass",),
        span=checked(group(1), _password),
        source="https://linux.die.net/man/1/sshpass",
    ),
    Rule(
        "password",
        re.compile(rf"redis-cli\b[^\n]{{0,300}}?\s(?:-a|--pass)\s+{_COMMAND_VALUE}"),
        ("redis-cli",),
        span=checked(group(1), _password),
        after=520,
        source="https://redis.io/docs/latest/develop/tools/cli/",
    ),
    Rule(
        "password",
        re.compile(r"""(?<![\w-])(?:-u|--user)(?:\s+|=)(['"]?)\{?[^\s:'"{}]{0,100}\}?\1?:['"]?\{?([^\s'"{}]{1,200})"""),
        ("-u", "--user"),
        span=checked(group(2), _password),
        after=320,
        source="https://curl.se/docs/manpage.html#-u (gitleaks curl-auth-user)",
    ),
    Rule(
        "token",
        re.compile(r"\b(?:Bearer|bearer|BEARER|Basic|basic|BASIC|Bot)\s+([A-Za-z0-9._~+/=:-]{8,4000})"),
        ("bearer", "basic", "Bot "),
        folded=True,
        span=checked(group(1), _opaque),
        after=4010,
        source="https://datatracker.ietf.org/doc/html/rfc6750#section-2.1 (gitleaks curl-auth-header)",
    ),
    Rule(
        "token",
        re.compile(
            r"""\b(?:Authorization|authorization|AUTHORIZATION)["']?[ \t]*[:=][ \t]*["']?"""
            r"""(?:[A-Za-z][\w-]{1,20}[ \t]+)?([A-Za-z0-9._~+/=:-]{8,4000})"""
        ),
        ("authorization",),
        folded=True,
        span=checked(group(1), _bearer),
        after=4040,
        source="https://datatracker.ietf.org/doc/html/rfc9110#section-11.6.2 (any scheme: Api-Token, token, Bot…)",
    ),
    Rule(
        "password",
        re.compile(r"""ClearTextPassword["']?\s+value=["']([^"'\n]{1,200})"""),
        ("ClearTextPassword",),
        span=group(1),
        source="https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file#packagesourcecredentials",
    ),
    Rule(
        "cookie",
        re.compile(r"""\b(?:Cookie|cookie|COOKIE):[ \t]*([^\n"'\\]*=[^\n"'\\]{8,2000})"""),
        ("cookie:",),
        folded=True,
        span=group(1),
        after=2010,
        source="https://datatracker.ietf.org/doc/html/rfc6265#section-4.2",
    ),
    Rule(
        "password",
        re.compile(r"""\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://[^\s:/?#@'"<>]{0,100}:([^\s/'"<>]{1,200})@(?=[\w\[.-])"""),
        ("://",),
        before=32,
        after=310,
        span=checked(group(1), _any_password),
        source="https://datatracker.ietf.org/doc/html/rfc3986#section-3.2.1 (user:password@ in a URL)",
    ),
    Rule(
        "password",
        # Led by its literal, so that a line holding many is read once; the word alone before it is checked.
        re.compile(r"passw(?:or)?d[ \t]+(\S{1,200})"),
        ("password", "passwd"),
        span=checked(_alone(group(1)), shapes.is_password),
        source="https://www.gnu.org/software/inetutils/manual/html_node/The-_002enetrc-file.html",
    ),
)
