"""Secrets by where they stand, not by a vendor's shape: a value assigned to a secret-named key (here), a password
on a command line, an Authorization header or a URL (``commands_headers_urls.py``), a Kubernetes Secret's values
(``kubernetes.py``).

The form most secrets take in an agent's session: ``DB_PASSWORD=…`` in a ``.env`` a tool read, ``export …``,
``"client_secret": "…"`` in JSON, ``password: …`` in YAML, ``api_key="…"`` in Python, ``--password=…``,
``mysql -p…``, ``curl -u user:pw``, ``Authorization: Bearer …``. The key's name says a secret may be there; the
value's shape decides (``shapes.py``), so that ``cache_key``, ``next_page_token`` and ``password = None`` stay.

The keyword lists follow gitleaks' ``generic-api-key``, ``curl-auth-*`` and ``kubernetes-secret-yaml`` rules and
detect-secrets' ``KeywordDetector`` (what names a secret); the code is ours.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from threadmem.lib.secrets import shapes
from threadmem.lib.secrets.rule import Found

_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_IDENTIFIER_MAX = 64
_NAME_REST = re.compile(rf"[A-Za-z0-9_.-]{{0,{_IDENTIFIER_MAX}}}")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Names whose value a person chose: any value that is not a word or a reference is a secret.
_PASSWORD_NAMES = re.compile(r"passw(?:or)?d|passphrase|^pass$|^pwd$|^pw$|^db_?pass$", re.IGNORECASE)
_PASSWORD_PARTS = frozenset({"pass", "pwd", "pw", "passwd", "password", "passphrase"})
# Names whose value a machine issued: a secret when it is long and random enough.
_SECRET_NAME = re.compile(
    r"secret|token(?!s\b|iz|s?_?(?:count|type|limit|usage|len))|api_?-?key|access_?-?key|private_?-?key|"
    r"(?:master|signing|encryption|license|account|app|auth|client|session|service|shared|sas|webhook)_?-?key|"
    r"credential|creds|(?:^|[_.-])auth$|[a-z]Auth$|authorization|^x-auth|apikey|(?:^|[_.-])key$|[a-z]Key$|KEY$",
    re.IGNORECASE,
)
# A part of the name that says the value is not a secret: an identifier, a pointer, a count, a setting.
_NOT_SECRET_PARTS = frozenset(
    [
        "public",
        "pub",
        "cache",
        "idempotency",
        "page",
        "next",
        "prev",
        "previous",
        "continuation",
        "cursor",
        "sort",
        "partition",
        "primary",
        "foreign",
        "row",
        "range",
        "lookup",
        "dedup",
        "dedupe",
        "hash",
        "hashed",
        "digest",
        "checksum",
        "etag",
        "sha",
        "id",
        "ids",
        "name",
        "names",
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "dir",
        "type",
        "types",
        "size",
        "length",
        "len",
        "count",
        "max",
        "min",
        "limit",
        "url",
        "uri",
        "endpoint",
        "host",
        "format",
        "field",
        "column",
        "index",
        "map",
        "prefix",
        "version",
        "hint",
        "store",
        "event",
        "group",
        "label",
        "expires",
        "expiry",
        "expiration",
        "ttl",
        "usage",
        "fingerprint",
        "kid",
        "algorithm",
        "alg",
        "scope",
        "scopes",
        "policy",
        "header",
        "param",
        "var",
        "question",
        "strength",
        "input",
        "placeholder",
        "regex",
        "pattern",
        "validator",
        "rotation",
        "status",
        "error",
        "created",
        "updated",
        "last",
        "used",
        "s3",
        "object",
        "bucket",
        "env",
        "location",
        "mode",
        "method",
        "provider",
        "template",
        "question",
        "csrf",
        "xsrf",
    ]
)
_OPERATOR = re.compile(
    # A type may stand between a name and its operator (Go's ``var xToken string = …``), never before a space.
    r"""(?P<close>\\?["'`\]])?(?:(?:[ \t]{1,4}(?!(?:is|was)\b)[A-Za-z_][\w.\[\]]{0,20})?[ \t]{0,4}"""
    r"""(?P<op>:{1,3}=|\?=|\+=|\.=|\|\|=|=>|==|!=|=|:|,|>(?:[ \t]*\r?\n[ \t]{0,40})?)"""
    r"""|(?P<space>[ \t](?=[ \t]*\S)))[ \t]{0,4}"""
)
# What may follow a name when a value is assigned to it: the cheap tests before the operator's regex.
_OPERATOR_START = frozenset("\"'`]\\:=?+.|!>, \t")
_SPACED = re.compile(r"[ \t]+(?:[:=?+.|!>,]|is\b|was\b|[A-Za-z_][\w.\[\]]{0,20}[ \t]*[:=?+.|!>])")
_LONG_WORD = re.compile(r"[ \t]+[^\s]{20}")
# "my API token is …": a name said to be a value, in a chat.
_SAID = re.compile(r"""(?P<close>\\?["'`])?[ \t]+(?P<op>is|was)[ \t]+(?:now[ \t]+)?:?[ \t]*""")
_VALUE_QUOTED = {
    '"': re.compile(r'(?:Bearer |Basic |bearer |basic |token )?([^"\\\n]{1,400})'),
    "'": re.compile(r"(?:Bearer |Basic |bearer |basic |token )?([^'\\\n]{1,400})"),
    "`": re.compile(r"([^`\\\n]{1,400})"),
}
_VALUE_BARE = re.compile(r"""([^\s"'`,;<>\\|]{1,400})""")
# In a URL's query a value ends at the next parameter.
_VALUE_QUERY = re.compile(r"""([^\s"'`&#<>\\]{1,400})""")
_QUOTE = re.compile(r"""\\?["'`]""")
# A value may go on past 400 characters: the rest of it goes too.
_VALUE_REST = {
    '"': re.compile(r'[^"\\\n]*'),
    "'": re.compile(r"[^'\\\n]*"),
    "`": re.compile(r"[^`\\\n]*"),
    "": re.compile(r"""[^\s"'`,;<>\\|]*"""),
    "?": re.compile(r"""[^\s"'`&#<>\\]*"""),
}


@functools.lru_cache(maxsize=4096)
def _kind(name: str) -> str | None:
    """``password``, ``secret``, ``key`` or None: what a value assigned to ``name`` is, by the name alone."""
    parts = [part.lower() for part in _PARTS.findall(name)]
    if not parts or any(part in _NOT_SECRET_PARTS for part in parts):
        return None
    if any(part in _PASSWORD_PARTS for part in parts) or _PASSWORD_NAMES.search(name):
        return "password"
    if "".join(parts) in _VENDOR_NAMES or (len(parts) == 2 and parts[0] in _VENDOR_NAMES and parts[1] == "login"):
        # A vendor's name alone names its key in a config (``cloudflare: "…"``, ``SONAR_LOGIN=…``), as gitleaks does.
        return "secret"
    if parts == ["key"]:
        # A bare "key" names ids as often as secrets (a dict's, a cache's, an object's): a hex or UUID value stays.
        return "key"
    if _SECRET_NAME.search(name):
        return "secret"
    return None


def _is_secret(kind: str, value: str) -> bool:
    """The value's shape decides (never cached: a cache would keep the secrets it saw)."""
    if kind == "password":
        return shapes.is_password(value)
    if kind == "key" and shapes.is_id(value):
        return False
    return shapes.is_token(value)


_VENDOR_NAMES = frozenset(
    [
        "cloudflare",
        "datadog",
        "sourcegraph",
        "artifactory",
        "jfrog",
        "sonar",
        "sonarqube",
        "heroku",
        "snyk",
        "sendgrid",
        "mailgun",
        "mailchimp",
        "twilio",
        "openai",
        "anthropic",
        "huggingface",
        "sentry",
        "okta",
        "algolia",
        "contentful",
        "netlify",
        "vercel",
        "digitalocean",
        "shopify",
        "doppler",
        "pulumi",
        "linear",
        "notion",
        "postman",
        "planetscale",
        "supabase",
        "mapbox",
        "dynatrace",
        "newrelic",
        "pagerduty",
        "circleci",
        "travis",
        "codecov",
    ]
)
_PROSE_NAMES = frozenset({"token", "key", "secret", "password", "apikey"})


def _unbalanced(value: str) -> bool:
    return any(value.count(close) > value.count(open_) for open_, close in ("()", "[]", "{}"))


@dataclass(frozen=True)
class Assignment:
    """``<name> <operator> <value>`` where the name says secret and the value looks like one."""

    label: str = "secret"
    keywords: tuple[str, ...] = ("pass", "pwd", "secret", "token", "key", "auth", "cred", *sorted(_VENDOR_NAMES))
    folded: bool = True
    before: int = _IDENTIFIER_MAX
    after: int = _IDENTIFIER_MAX
    whole_text: bool = False
    gate: re.Pattern[str] | None = None
    source: str = "gitleaks generic-api-key's keywords and operators; detect-secrets KeywordDetector"

    def spans(self, text: str, hits: list[tuple[int, int]]) -> Iterator[Found]:
        done = 0
        for hit, hit_end in hits:
            # Two keywords of one name ("secret_key"): the name is read once.
            if hit >= done:
                found, done = self._at(text, hit, hit_end)
                if found is not None:
                    yield found

    def _at(self, text: str, hit: int, hit_end: int) -> tuple[Found | None, int]:
        """The secret assigned to the name around ``text[hit:hit_end]``, and where that name ends."""
        first = hit
        while first > 0 and hit - first < _IDENTIFIER_MAX and text[first - 1] in _IDENTIFIER_CHARS:
            first -= 1
        last = _NAME_REST.match(text, hit_end).end()  # type: ignore[union-attr]  # `{0,n}` always matches
        name = text[first:last].strip(".-")
        kind = _kind(name)
        if kind is None:
            return None, last
        flag = text[first:last].startswith("-")
        after = text[last : last + 1]
        if after in " \t" and not _SPACED.match(text, last):
            # No operator after the spaces: a flag's value, or a lone word's long one ("token <40 hex>"), or prose.
            if not flag and (name.lower() not in _PROSE_NAMES or not _LONG_WORD.match(text, last)):
                return None, last
        elif after not in _OPERATOR_START:
            return None, last
        operator = (_SAID.match(text, last) if text.startswith(" ", last) else None) or _OPERATOR.match(text, last)
        if operator is None:
            return None, last
        # A name and a value side by side: a flag's value, or a lone word's ("for token <hex>") when it is random.
        prose = operator.re is _OPERATOR and operator.group("space") is not None and not flag
        if prose and name.lower() not in _PROSE_NAMES:
            return None, last
        at = operator.end()
        quote = _QUOTE.match(text, at)
        mark = quote.group()[-1] if quote else ""
        if quote:
            at = quote.end()
        if not mark and first > 0 and text[first - 1] in "?&":
            mark = "?"
        value = (_VALUE_QUOTED.get(mark, _VALUE_QUERY if mark else _VALUE_BARE)).match(text, at)
        if value is None:
            return None, last
        value_start, value_end = value.span(1)
        value_end = _VALUE_REST[mark].match(text, value_end).end()  # type: ignore[union-attr]  # `*` always matches
        if not mark:
            # A bare value may hold brackets (Django's keys do); a call's closing ones are not its own.
            while value_end > value_start and text[value_end - 1] in ")]}" and _unbalanced(text[value_start:value_end]):
                value_end -= 1
        secret = text[value_start:value_end]
        if prose and len(secret) < 20:
            return None, last
        if _is_secret(kind, secret):
            return Found("password" if kind == "password" else self.label, value_start, value_end), value_end
        return None, last
