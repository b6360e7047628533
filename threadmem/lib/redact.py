"""Secrets replaced by a placeholder that names them: ``redact(text)``, ``redact_arguments(value)``.

The rules are the published regexes of detect-secrets' plugins (Yelp, Apache 2.0), imported from the installed
package, never copied: its provider rules (AWS, Azure storage, GitHub, GitLab, Slack, Stripe, OpenAI, npm, PyPI,
SendGrid, Twilio, Mailchimp, Discord, Telegram, Square, Artifactory, Cloudant, IBM Cloud IAM and COS HMAC,
SoftLayer), JSON web tokens, private keys and passwords inside URLs (BasicAuthDetector), and four of gitleaks'
published rules for what detect-secrets has no plugin for (Anthropic, GitHub fine-grained and Google API keys,
encrypted private keys). Each of them looks for a
shape only a credential has: a vendor's prefix, a key header, ``user:password@`` after ``://``.

Left out, because what they flag is what search must find (docs/secrets.md has the measurements):

- ``Base64HighEntropyString`` and ``HexHighEntropyString`` flag any quoted string random enough: git SHAs, hex ids,
  tool-call and message ids, ordinary base64 data.
- ``KeywordDetector`` (``password = "..."``) reads its patterns by file type, which a message has not, and is
  precise only behind detect-secrets' own filters (templates, indirect references); it is also the slowest.
- ``IPPublicDetector``: an address is a host's name, not a credential.

What is replaced is the secret, never the text around it: the capture group a pattern keeps for the secret (the
password of a URL keeps its scheme, user and host), the token itself without the delimiters a pattern matches
around it (Artifactory), the value after ``AccountKey=`` (Azure). Where a pattern matches less than the secret,
the rest is taken too: a private key from its BEGIN line to its END line (to the end of the text or a blank line
when it has none), a JWT's signature, the rest of a token a pattern matches only the start of (Stripe's and
OpenAI's keys are longer than the patterns say; a vendor's token is replaced up to its last token character).

Every pattern runs only behind a cheap test that any match must pass: a literal the pattern requires (``in``),
or a short regex led by a literal. Text without any of them (nearly all text) costs those tests alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

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

PLACEHOLDER = "[redacted: {label}]"

Span = tuple[int, int]
SpanOf = Callable[[str, re.Match[str]], Span | None]


# --- what of a match is the secret ---------------------------------------------------------------------------


def _whole(text: str, match: re.Match[str]) -> Span:
    return match.span()


def _group(number: int) -> SpanOf:
    def span(text: str, match: re.Match[str]) -> Span | None:
        start, end = match.span(number)
        return (start, end) if start >= 0 else None

    return span


def _token(rest: str) -> SpanOf:
    """The match and the characters of ``rest`` after it: a pattern that matches only a token's first part."""
    tail = re.compile(rest)

    def span(text: str, match: re.Match[str]) -> Span:
        start, end = match.span()
        return start, tail.match(text, end).end()  # type: ignore[union-attr]  # `*` always matches

    return span


def _stripped(chars: str) -> SpanOf:
    """The match without the delimiters the pattern matches around the token."""

    def span(text: str, match: re.Match[str]) -> Span | None:
        start, end = match.span()
        while start < end and text[start] in chars:
            start += 1
        while end > start and text[end - 1] in chars:
            end -= 1
        return (start, end) if start < end else None

    return span


def _after(lead: str) -> SpanOf:
    """The match after its literal ``lead`` (a name that says what the value is: it stays)."""

    def span(text: str, match: re.Match[str]) -> Span:
        start, end = match.span()
        return start + len(lead), end

    return span


def _npm_token(text: str, match: re.Match[str]) -> Span:
    # The plugin's token group runs to the end of the line (``npm_.+``): the token ends at a space or a quote.
    start, end = match.span(1)
    stop = _TOKEN_END.search(text, start, end)
    return start, stop.start() if stop else end


_TOKEN_END = re.compile(r"""[\s"'`]""")
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


def _private_key(text: str, match: re.Match[str]) -> Span | None:
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


# --- the rules ------------------------------------------------------------------------------------------------

# A test any match passes: a literal (``in``) or a regex led by a literal, which re finds as fast as ``in``. A
# regex led by a character class or an alternation tries every position, ten to sixty times slower.
Anchor = str | re.Pattern[str]


@dataclass(frozen=True)
class Rule:
    """One of a plugin's patterns, behind its cheap tests, with what of a match it replaces."""

    label: str
    pattern: re.Pattern[str]
    # Any match passes one of these (in the lowered text when ``folded``): without one the pattern never runs.
    anchors: tuple[Anchor, ...]
    folded: bool = False
    span: SpanOf = _whole

    def spans(self, text: str) -> Iterator[Redaction]:
        for match in self.pattern.finditer(text):
            if _in_placeholder(text, match.start()):
                continue  # "[redacted: password] <token>" reads as an assignment to some patterns
            found = self.span(text, match)
            if found is not None and found[0] < found[1]:
                yield Redaction(self.label, *found)


_PLACEHOLDER_START = PLACEHOLDER[: PLACEHOLDER.index("{")]


def _in_placeholder(text: str, at: int) -> bool:
    opened = text.rfind(_PLACEHOLDER_START, max(0, at - 40), at)
    return opened >= 0 and text.find("]", opened, at) < 0


class Redaction(NamedTuple):
    """One secret found: what it is (the placeholder's label) and where it is in the text."""

    label: str
    start: int
    end: int


def _literal_led(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


# Every "<prefix><keyword> = <secret>" pattern of detect-secrets (its build_assignment_regex) needs, in the lowered
# text, a keyword, its assignment and at least 24 characters of value (the shortest of those secrets), one regex a
# keyword so that each is led by its literal.
_ASSIGNED = r"""['"]?\]? *(?:=>|:=|::|=|:| ) *['"]?[a-z0-9_-]{24}"""
_ASSIGNMENT = _literal_led(*(keyword + _ASSIGNED for keyword in ("key", "pw", "pass", "token")))
_STRIP_ARTIFACTORY = ' \t\r\n\f\v=:"'


def _rules_of(plugin: type, label: str, specs: list[dict[str, Any]]) -> list[Rule]:
    patterns = list(plugin.denylist)
    if len(patterns) != len(specs):
        # A new detect-secrets changed the plugin: each pattern's anchors and span must be read again.
        raise RuntimeError(f"{plugin.__name__} has {len(patterns)} patterns; lib/redact.py knows {len(specs)}")
    return [Rule(**{"label": label, **spec}, pattern=pattern) for pattern, spec in zip(patterns, specs, strict=True)]


RULES: tuple[Rule, ...] = (
    *_rules_of(
        AWSKeyDetector,
        "aws access key",
        [
            {"anchors": _literal_led(r"A(?:KIA|SIA|BIA|CCA|3T)"), "span": _token("[0-9A-Z]*")},
            {"label": "aws secret access key", "anchors": ("aws",), "folded": True, "span": _group(1)},
        ],
    ),
    *_rules_of(
        AzureStorageKeyDetector, "azure storage key", [{"anchors": ("AccountKey=",), "span": _after("AccountKey=")}]
    ),
    *_rules_of(BasicAuthDetector, "password", [{"anchors": ("://",), "span": _group(1)}]),
    *_rules_of(
        GitHubTokenDetector, "github token", [{"anchors": _literal_led("gh[pousr]_"), "span": _token("[A-Za-z0-9_]*")}]
    ),
    *_rules_of(
        GitLabTokenDetector,
        "gitlab token",
        [{"anchors": (*_literal_led("gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-"), "GR1348941")}] * 7,
    ),
    *_rules_of(
        SlackDetector,
        "slack token",
        [
            {"anchors": ("xox",), "folded": True},
            {"label": "slack webhook", "anchors": ("hooks.slack.com",), "folded": True},
        ],
    ),
    *_rules_of(StripeDetector, "stripe key", [{"anchors": ("k_live_",), "span": _token(r"[0-9a-zA-Z]*")}]),
    *_rules_of(OpenAIDetector, "openai key", [{"anchors": ("T3BlbkFJ",), "span": _token(r"[A-Za-z0-9_-]*")}]),
    *_rules_of(NpmDetector, "npm token", [{"anchors": (":_authToken=",), "span": _npm_token}]),
    *_rules_of(PypiTokenDetector, "pypi token", [{"anchors": ("pypi-AgE",)}] * 2),
    *_rules_of(SendGridDetector, "sendgrid key", [{"anchors": ("SG.",), "span": _token("[a-zA-Z0-9_-]*")}]),
    *_rules_of(
        TwilioKeyDetector,
        "twilio key",
        [{"anchors": _literal_led("AC[a-z0-9]{32}", "SK[a-z0-9]{32}"), "span": _token("[a-z0-9]*")}] * 2,
    ),
    *_rules_of(MailchimpDetector, "mailchimp key", [{"anchors": _literal_led("-us[0-9]")}]),
    *_rules_of(
        DiscordBotTokenDetector,
        "discord token",
        [{"anchors": _literal_led(r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}"), "span": _token(r"[a-zA-Z\d_-]*")}],
    ),
    *_rules_of(
        TelegramBotTokenDetector,
        "telegram token",
        [{"anchors": _literal_led(":[0-9A-Za-z_-]{35}"), "span": _token("[0-9A-Za-z_-]*")}],
    ),
    *_rules_of(
        SquareOAuthDetector, "square oauth secret", [{"anchors": ("sq0csp-",), "span": _token("[0-9A-Za-z_-]*")}]
    ),
    *_rules_of(
        ArtifactoryDetector,
        "artifactory token",
        [
            {"anchors": _literal_led("AKC[a-zA-Z0-9]{10}"), "span": _stripped(_STRIP_ARTIFACTORY)},
            {
                "label": "artifactory password",
                "anchors": _literal_led(r"AP[\dABCDEF][a-zA-Z0-9]{8}"),
                "span": _stripped(_STRIP_ARTIFACTORY),
            },
        ],
    ),
    *_rules_of(
        CloudantDetector,
        "cloudant credentials",
        [
            *[{"anchors": _ASSIGNMENT, "folded": True, "span": _group(1)}] * 2,
            *[{"anchors": ("cloudant.com",), "folded": True, "span": _group(1)}] * 2,
        ],
    ),
    *_rules_of(IbmCloudIamDetector, "ibm cloud iam key", [{"anchors": _ASSIGNMENT, "folded": True, "span": _group(1)}]),
    *_rules_of(IbmCosHmacDetector, "ibm cos hmac key", [{"anchors": _ASSIGNMENT, "folded": True, "span": _group(1)}]),
    *_rules_of(
        SoftlayerDetector,
        "softlayer key",
        [
            {"anchors": _ASSIGNMENT, "folded": True, "span": _group(1)},
            {"anchors": ("softlayer.com",), "folded": True, "span": _group(1)},
        ],
    ),
    *_rules_of(JwtTokenDetector, "jwt", [{"anchors": ("eyJ",), "span": _jwt}]),
    *_rules_of(
        PrivateKeyDetector,
        "private key",
        [
            *[{"anchors": ("PRIVATE KEY",), "span": _private_key}] * 7,
            {"anchors": ("PuTTY-User-Key-File-2",), "span": _putty_key},
        ],
    ),
)
# What detect-secrets has no plugin for, from gitleaks' published rules (config/gitleaks.toml, MIT) of the same ids:
# anthropic-api-key and anthropic-admin-api-key, github-fine-grained-pat, gcp-api-key, and private-key for the
# headers detect-secrets does not list (ENCRYPTED PRIVATE KEY). gitleaks' entropy floors are left out: each shape is
# a vendor's prefix and a fixed length.
_GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
RULES += (
    Rule(
        label="anthropic key",
        pattern=re.compile(rf"\b(sk-ant-(?:api03|admin01)-[a-zA-Z0-9_\-]{{93}}AA){_GITLEAKS_END}"),
        anchors=("sk-ant-",),
        span=_group(1),
    ),
    Rule(label="github token", pattern=re.compile(r"github_pat_\w{82}"), anchors=("github_pat_",)),
    Rule(
        label="google api key",
        pattern=re.compile(rf"\b(AIza[\w-]{{35}}){_GITLEAKS_END}"),
        anchors=("AIza",),
        span=_group(1),
    ),
    Rule(
        label="private key",
        pattern=re.compile(r"BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?"),
        anchors=("PRIVATE KEY",),
        span=_private_key,
    ),
)


class _Family(NamedTuple):
    """Rules with the same anchors, tested once: the literal ones with ``in``, then the regexes."""

    literals: tuple[str, ...]
    regexes: tuple[re.Pattern[str], ...]
    folded: bool
    rules: tuple[Rule, ...]


_FAMILIES: tuple[_Family, ...] = tuple(
    _Family(
        tuple(a for a in anchors if isinstance(a, str)),
        tuple(a for a in anchors if not isinstance(a, str)),
        folded,
        tuple(rule for rule in RULES if (rule.anchors, rule.folded) == (anchors, folded)),
    )
    for anchors, folded in dict.fromkeys((rule.anchors, rule.folded) for rule in RULES)
)


# --- redacting ------------------------------------------------------------------------------------------------


Rules = tuple[_Family, ...]
ALL_RULES: Rules = _FAMILIES
# Joins the texts ``screen`` scans at once: no test or pattern matches across a line break.
_SEPARATOR = "\n\n"
# Texts joined per scan at most: a batch of long texts joined whole would double an import's memory.
SCREEN_GROUP_CHARS = 32 * 1024


def _passing(text: str, among: Rules) -> list[_Family]:
    """The families whose cheap tests ``text`` passes.

    Plain loops, no generator per family: this runs on every stored text, and nearly always finds nothing.
    """
    lowered = ""
    passing = []
    for family in among:
        literals, regexes, folded, _ = family
        if folded and not lowered:
            lowered = text.lower()
        haystack = lowered if folded else text
        for literal in literals:
            if literal in haystack:
                passing.append(family)
                break
        else:
            for regex in regexes:
                if regex.search(haystack):
                    passing.append(family)
                    break
    return passing


def screen(texts: list[str]) -> Rules:
    """The rules any of ``texts`` may hold a secret of: their cheap tests run once, over the texts joined.

    A batch's texts are screened together (one scan and one call's overhead, instead of one per text); ``redact``
    then runs only these rules on each text, and nothing at all when there are none (nearly always).
    """
    found: set[_Family] = set()
    group: list[str] = []
    size = 0
    for text in texts:
        if len(text) >= SCREEN_GROUP_CHARS:  # alone: joined, a long text would be copied once more
            found.update(_passing(text, ALL_RULES))
            continue
        group.append(text)
        size += len(text)
        if size >= SCREEN_GROUP_CHARS:
            found.update(_passing(_SEPARATOR.join(group), ALL_RULES))
            group, size = [], 0
    if group:
        found.update(_passing(_SEPARATOR.join(group), ALL_RULES))
    return tuple(family for family in ALL_RULES if family in found)


def redactions(text: str, among: Rules = ALL_RULES) -> list[Redaction]:
    """The secrets in ``text``, in order, overlapping finds merged (the first one's label names the whole)."""
    found: list[Redaction] = []
    for family in _passing(text, among) if among else ():
        for rule in family.rules:
            found.extend(rule.spans(text))
    if len(found) < 2:
        return found
    found.sort(key=lambda r: (r.start, -r.end))
    merged = [found[0]]
    for redaction in found[1:]:
        last = merged[-1]
        if redaction.start < last.end:
            if redaction.end > last.end:
                merged[-1] = last._replace(end=redaction.end)
        else:
            merged.append(redaction)
    return merged


def redact(text: str, among: Rules = ALL_RULES) -> str:
    """``text`` with each secret replaced by ``[redacted: <what it was>]``; the same object when it holds none.

    ``among``: only these rules (``screen``'s answer for a batch holding ``text``).
    """
    found = redactions(text, among)
    if not found:
        return text
    parts: list[str] = []
    at = 0
    for label, start, end in found:
        parts += (text[at:start], PLACEHOLDER.format(label=label))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_arguments(value: Any, among: Rules = ALL_RULES) -> Any:
    """A JSON value with every string leaf redacted (keys stay: they are names); the same object when none changed."""
    if isinstance(value, str):
        return redact(value, among)
    if isinstance(value, dict):
        changed = {key: redact_arguments(child, among) for key, child in value.items()}
        return changed if any(changed[key] is not child for key, child in value.items()) else value
    if isinstance(value, list):
        items = [redact_arguments(child, among) for child in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    return value


def redact_tool_calls(tool_calls: list[dict[str, Any]], among: Rules = ALL_RULES) -> list[dict[str, Any]]:
    """Tool calls (``[{"id", "name", "arguments"}]``) with their arguments redacted; the same list when none changed."""
    redacted = [
        call
        if (arguments := redact_arguments(call.get("arguments"), among)) is call.get("arguments")
        else {**call, "arguments": arguments}
        for call in tool_calls
    ]
    return redacted if any(new is not old for new, old in zip(redacted, tool_calls, strict=True)) else tool_calls
