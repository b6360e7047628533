"""detect-secrets' plugins (Yelp, Apache 2.0): their published regexes, imported from the installed package.

Each pattern runs over the whole text when one of its keywords is there, with what of its match is the secret.
Left out, each for a rule of ours that does better or costs less (``vendors/``, ``assignments.py``): the AWS key
id pattern (no word boundary: it took DNA and capital runs), Telegram's (no boundary: it took Redis keys
``rl:<time>:<35 characters>``), and the keyword assignments of Cloudant, IBM and SoftLayer (``api_key = "…"``:
``assignments.py`` reads every such assignment by the value's shape). Their URL patterns stay.
"""

from __future__ import annotations

import re
from typing import Any

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from threadmem.lib.secrets.rule import Rule, Span, after, group, stripped, token, whole

SOURCE = "detect-secrets 1.5.0"


_JWT_SIGNATURE = re.compile(r"[A-Za-z0-9_.+/=-]*")


def _jwt(text: str, match: re.Match[str]) -> Span | None:
    # The plugin's pattern ends lazily, before the signature; its own check decides whether it is a JWT.
    if not JwtTokenDetector.is_formally_valid(match.group()):
        return None
    start, end = match.span()
    return start, _JWT_SIGNATURE.match(text, end).end()  # type: ignore[union-attr]


# A key's block starts at its BEGIN line's dashes and needs key material after its header (a header only quoted or
# looked for, as code that parses keys does, is no key): a newline, perhaps armor headers ("Proc-Type: ...",
# PGP's "Version: ..." and blank line), then base64. Newlines may be escaped (a key inside JSON).
_NEWLINE = r"(?:\r?\n|(?:\\r)?\\n)"
_PEM_BODY = re.compile(
    rf"{_NEWLINE}(?:[ \t]*[A-Za-z-]+: [^\n\\]*{_NEWLINE})*(?:[ \t]*{_NEWLINE})?[ \t]*(?=[A-Za-z0-9+/=]{{16}})"
)
# It ends with its END line, or, cut short, before a blank line or at the end of the text.
_PEM_STOP = re.compile(rf"END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-*|{_NEWLINE}[ \t]*{_NEWLINE}")
_PUTTY_BODY = re.compile(rf": [^\n\\]*{_NEWLINE}Encryption: ")
_BLANK_LINE = re.compile(rf"{_NEWLINE}[ \t]*{_NEWLINE}")


def private_key(text: str, match: re.Match[str]) -> Span | None:
    start, end = match.span()
    while end < len(text) and end - match.end() < 5 and text[end] == "-":
        end += 1
    body = _PEM_BODY.match(text, end)
    if body is None:
        return None
    while start > 0 and match.start() - start < 5 and text[start - 1] == "-":
        start -= 1
    stop = _PEM_STOP.search(text, body.end())
    if stop is None:
        return start, len(text)
    return start, stop.end() if stop.group().startswith("END") else stop.start()


def _putty_key(text: str, match: re.Match[str]) -> Span | None:
    """A PuTTY key file, from its first line to a blank line or the end of the text."""
    if _PUTTY_BODY.match(text, match.end()) is None:
        return None
    stop = _BLANK_LINE.search(text, match.end())
    return match.start(), stop.start() if stop else len(text)


_STRIP_ARTIFACTORY = ' \t\r\n\f\v=:"'
_WORD_CHAR = re.compile(r"[A-Za-z0-9]")


def _bounded(span_of: Any = whole) -> Any:
    """The plugin's match, when it is a whole token: no letter or digit touches it on either side."""

    def span(text: str, match: re.Match[str]) -> Span | None:
        found = span_of(text, match)
        if found is None:
            return None
        start, end = found
        if start > 0 and _WORD_CHAR.match(text[start - 1]):
            return None
        return found if end >= len(text) or not _WORD_CHAR.match(text[end]) else None

    return span


def _rules(plugin: type, label: str, specs: list[dict[str, Any] | None]) -> list[Rule]:
    """The plugin's patterns, in its order: a spec per pattern (``None``: left out, the module says why)."""
    patterns = list(plugin.denylist)
    if len(patterns) != len(specs):
        # A new detect-secrets changed the plugin: each pattern's keywords and span must be read again.
        raise RuntimeError(
            f"{plugin.__name__} has {len(patterns)} patterns; secrets/detect_secrets.py knows {len(specs)}"
        )
    return [
        Rule(**{"label": label, "whole_text": True, "source": f"{SOURCE} {plugin.__name__}", **spec}, pattern=pattern)
        for pattern, spec in zip(patterns, specs, strict=True)
        if spec is not None
    ]


_GITHUB = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
_GITLAB = (
    "glpat-",
    "gldt-",
    "glft-",
    "glsoat-",
    "glrt-",
    "glcbt-",
    "glimt-",
    "glptt-",
    "glagent-",
    "gloas-",
    "GR1348941",
)

RULES: tuple[Rule, ...] = (
    *_rules(
        AWSKeyDetector,
        "aws secret access key",
        [None, {"keywords": ("aws",), "folded": True, "span": group(1)}],
    ),
    *_rules(
        AzureStorageKeyDetector, "azure storage key", [{"keywords": ("AccountKey=",), "span": after("AccountKey=")}]
    ),
    *_rules(BasicAuthDetector, "password", [{"keywords": ("://",), "span": group(1)}]),
    *_rules(GitHubTokenDetector, "github token", [{"keywords": _GITHUB, "span": token("[A-Za-z0-9_]*")}]),
    *_rules(GitLabTokenDetector, "gitlab token", [{"keywords": _GITLAB}] * 7),
    *_rules(
        SlackDetector,
        "slack token",
        [
            {"keywords": ("xox",), "folded": True},
            {"label": "slack webhook", "keywords": ("hooks.slack.com",), "folded": True},
        ],
    ),
    *_rules(StripeDetector, "stripe key", [{"keywords": ("k_live_",), "span": token(r"[0-9a-zA-Z]*")}]),
    *_rules(OpenAIDetector, "openai key", [{"keywords": ("T3BlbkFJ",), "span": token(r"[A-Za-z0-9_-]*")}]),
    # Its ``//.+/:_authToken=`` backtracks over a long line (docs/secrets.md): ``_authToken=`` is an assignment
    # (assignments.py) and ``npm_`` a vendor's prefix (vendors/).
    *_rules(NpmDetector, "npm token", [None]),
    *_rules(PypiTokenDetector, "pypi token", [{"keywords": ("pypi-AgE",)}] * 2),
    *_rules(SendGridDetector, "sendgrid key", [{"keywords": ("SG.",), "span": token("[a-zA-Z0-9_-]*")}]),
    *_rules(TwilioKeyDetector, "twilio key", [{"keywords": ("AC", "SK"), "span": _bounded(token("[a-z0-9]*"))}] * 2),
    # Led by a character class: found near its keyword, not over the whole text.
    *_rules(
        MailchimpDetector, "mailchimp key", [{"keywords": ("-us",), "whole_text": False, "before": 32, "after": 4}]
    ),
    *_rules(
        DiscordBotTokenDetector,
        "discord token",
        # Its shape has no literal: found where the text names Discord, as gitleaks' Discord rules are.
        [{"keywords": ("discord",), "folded": True, "span": token(r"[a-zA-Z\d_-]*")}],
    ),
    *_rules(TelegramBotTokenDetector, "telegram token", [None]),
    *_rules(SquareOAuthDetector, "square oauth secret", [{"keywords": ("sq0csp-",), "span": token("[0-9A-Za-z_-]*")}]),
    *_rules(
        ArtifactoryDetector,
        "artifactory token",
        [
            {
                "keywords": ("AKC",),
                "whole_text": False,
                "before": 1,
                "after": 300,
                "span": stripped(_STRIP_ARTIFACTORY),
            },
            {
                "label": "artifactory password",
                "keywords": (),
                "gate": re.compile(r"AP[\dABCDEF][a-zA-Z0-9]{8}"),
                "span": stripped(_STRIP_ARTIFACTORY),
            },
        ],
    ),
    *_rules(
        CloudantDetector,
        "cloudant credentials",
        [None, None, *[{"keywords": ("cloudant.com",), "folded": True, "span": group(1)}] * 2],
    ),
    *_rules(IbmCloudIamDetector, "ibm cloud iam key", [None]),
    *_rules(IbmCosHmacDetector, "ibm cos hmac key", [None]),
    *_rules(
        SoftlayerDetector, "softlayer key", [None, {"keywords": ("softlayer.com",), "folded": True, "span": group(1)}]
    ),
    *_rules(JwtTokenDetector, "jwt", [{"keywords": ("eyJ",), "span": _jwt}]),
    *_rules(
        PrivateKeyDetector,
        "private key",
        [
            *[{"keywords": ("PRIVATE KEY",), "span": private_key}] * 7,
            {"keywords": ("PuTTY-User-Key-File-2",), "span": _putty_key},
        ],
    ),
)
