"""What a value looks like: a secret, or a word, a path, a reference, a placeholder, an identifier.

A value assigned to a secret-named key (``password = …``) is a secret only by its shape: the name alone also
holds ``None``, ``process.env.API_KEY``, ``${DB_PASSWORD}``, ``<token>`` and ``changeme``, and a test, a form
label or a translation is named ``password`` too. These predicates decide it; every rule that reads a value
assigned to a name asks them.
"""

from __future__ import annotations

import math
import re
from collections import Counter

# Values that stand for a secret without being one: templates, references, masks and the words people type instead.
_PLACEHOLDER_WORDS = frozenset(
    [
        "changeme",
        "change_me",
        "change-me",
        "changeit",
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "key",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "string",
        "str",
        "bool",
        "int",
        "integer",
        "number",
        "redacted",
        "masked",
        "hidden",
        "example",
        "sample",
        "dummy",
        "placeholder",
        "default",
        "empty",
        "todo",
        "tbd",
        "fixme",
        "xxx",
        "test",
        "testing",
        "foo",
        "bar",
        "baz",
        "qux",
        "secretkey",
        "mysecret",
        "mypassword",
        "yourpassword",
        "your_password",
        "your-password",
        "yourtoken",
        "your_token",
        "your-token",
        "your_api_key",
        "your-api-key",
        "yourapikey",
        "your_secret",
        "your-secret",
        "my_secret",
        "my-secret",
        "secret_key",
        "secret-key",
        "access_token",
    ]
)
# A reference to a value kept elsewhere: a variable, a template, a secret manager, a file.
_REFERENCE = re.compile(
    r"""^(?:\$|%|&|\*|@|\{\{|\{%|<|\[|\(|\{|!|env[:.(]|process\.env|os\.environ|os\.getenv|getenv|secrets?\.|vault:|
    arn:|ref\+|file:|sm://|gcp:|op://|keyvault|fromsecret|valuefrom|secretkeyref)""",
    re.IGNORECASE | re.VERBOSE,
)
_MASK = re.compile(r"^(.)\1{3,}$|^[x*•._#-]{3,}$|\.{3}|…|^x{3,}|x{6,}", re.IGNORECASE)
_YOUR = re.compile(r"^(?:your|my|insert|enter|put|replace|add|paste)[-_ ]", re.IGNORECASE)
_HERE = re.compile(r"(?:[-_ ]here|[-_ ]goes[-_ ]here)$", re.IGNORECASE)
# A word, words joined by ``_``/``-``/a space, or an identifier in camel case: never a secret (a form label, a
# variable, an enum value). Parts of at most 20 letters: a longer run of letters reads as a passphrase.
_WORD = re.compile(r"^[A-Za-z][a-z]{0,19}(?:[_\- ][A-Za-z][a-z]{0,19}|[A-Z][a-z]{1,19})*$")
_UPPER_WORDS = re.compile(r"^[A-Z]{1,20}(?:[_-][A-Z0-9]{1,20})*$")
_DOTTED = re.compile(r"^[A-Za-z_$][A-Za-z_$]*\d{0,2}(?:(?:\.|->|::)[A-Za-z_$][A-Za-z_$]*\d{0,2})+(?:\(\)?)?$")
_PATH = re.compile(
    r"^(?:~|\.{1,2})?/[\w.@~+-]*/|^[A-Za-z]:\\|^\.{1,2}/|^/[\w.-]+$|\.(?:pem|key|json|ya?ml|env|txt|p12|pfx|crt)$"
)
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_NUMBER = re.compile(r"^[+-]?\d+(?:[.,]\d+)*[a-z%]{0,3}$", re.IGNORECASE)
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?$")
_HEX = re.compile(r"^[0-9a-f]+$|^[0-9A-F]+$")
# A call: ``mint(project.id)``, ``Base.url_encode64(:crypto…``.
_FUNCTION = re.compile(r"^[A-Za-z_:$][\w.:$]*\(")
# Words and short numbers joined by ``-``/``_``/``.``: a phrase someone wrote (``test-only-secret-base-64-bytes``),
# where a generated secret has a random part.
_PHRASE = re.compile(r"^(?:(?:[a-z]{2,20}|[A-Z][a-z]{1,19}|\d{1,4})[-_.]){2,}(?:[a-z]{2,20}|[A-Z][a-z]{1,19}|\d{1,4})$")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _random_part(part: str, length: int) -> bool:
    """Long, mixing cases and digits: generated, not a name (``/VhiDonDq2/…``, not ``/home/dev/MyApp2``)."""
    return (
        len(part) >= length
        and any(c.isdigit() for c in part)
        and any(c.isupper() for c in part)
        and any(c.islower() for c in part)
    )


def is_placeholder(value: str) -> bool:
    """A template, a reference, a mask or a stand-in word (``${X}``, ``<token>``, ``****``, ``your-api-key-here``)."""
    lowered = value.lower().strip("\"'`")
    return (
        not lowered
        or lowered in _PLACEHOLDER_WORDS
        or lowered.startswith("[redacted")
        or bool(_REFERENCE.match(value))
        or bool(_MASK.search(value))
        or bool(_YOUR.match(value))
        or bool(_HERE.search(value))
        or "example" in lowered
        or "placeholder" in lowered
    )


def is_code(value: str, *, phrases: bool = True) -> bool:
    """A word, a constant's name, a dotted reference, a path, a URL, a number or a version: not a secret.

    ``phrases``: words joined by dashes are code too (where a machine's secret is expected; a person's password
    may be such a phrase).
    """
    return bool(
        _WORD.match(value)
        or _UPPER_WORDS.match(value)
        or _DOTTED.match(value)
        or (_PATH.search(value) and not any(_random_part(part, 8) for part in value.split("/")))
        or _URL.match(value)
        or _NUMBER.match(value)
        or _VERSION.match(value)
        or _FUNCTION.match(value)
        or (phrases and _PHRASE.match(value))
    )


def is_password(value: str) -> bool:
    """What a person chose as a password: at least 5 characters, not a word, a reference or a placeholder."""
    return len(value) >= 5 and not is_placeholder(value) and not is_code(value, phrases=False)


def _digits(value: str) -> bool:
    """A long run of digits (a client secret some vendors issue): random, not a count or a timestamp."""
    return entropy(value) >= 2.8


_ID = re.compile(r"^(?:[0-9a-f]{7,64}|[0-9A-F]{7,64}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def is_id(value: str) -> bool:
    """A hex digest or a UUID: what names a row, a commit, a cached object."""
    return bool(_ID.match(value))


def is_token(value: str) -> bool:
    """What a machine issued as a key or token: at least 12 characters, random enough, in one piece."""
    if len(value) >= 16 and value.isdigit():
        return _digits(value)
    if len(value) < 12 or " " in value or is_placeholder(value) or is_code(value):
        return False
    if _HEX.match(value):
        return len(value) >= 16 and entropy(value) >= 2.8
    classes = sum(1 for test in (str.islower, str.isupper, str.isdigit) if any(test(c) for c in value))
    return classes >= 2 and entropy(value) >= 3.0
