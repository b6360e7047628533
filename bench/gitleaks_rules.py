"""gitleaks' default rules and their published true positives, read from a gitleaks checkout at bench time.

Nothing of gitleaks is copied here: ``GitleaksSource`` reads ``config/gitleaks.toml`` (the rules: regex, keywords,
secretGroup, entropy, allowlists) and ``cmd/generate/config/rules/*.go`` (each rule function's true positives)
from a checkout or a bare git directory. The Go source is evaluated as far as the true positives need: string
literals, ``+``, ``[]string{…}``, ``append``, ``fmt.Sprintf``, base64, ``utils.GenerateSampleSecrets`` (its
templates read from ``cmd/generate/config/utils/generate.go``) and ``secrets.NewSecret(regex)`` (a random string
matching the regex, from Python's own regex parser). Go's RE2 syntax is translated to Python's ``re`` where the two
differ; a regex that cannot be translated is counted, not guessed.
"""

from __future__ import annotations

import base64
import math
import random
import re
import subprocess
import tomllib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python 3.11 renamed sre_parse and keeps it as re._parser
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

RULES_DIR = "cmd/generate/config/rules"


class GitleaksSource:
    """A gitleaks checkout, or a git directory without a work tree (read at HEAD)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = (path / "HEAD").is_file() and (path / "objects").is_dir()

    def exists(self) -> bool:
        return self.bare or (self.path / "config/gitleaks.toml").is_file()

    def read(self, name: str) -> str:
        if not self.bare:
            return (self.path / name).read_text()
        return self._git("show", f"HEAD:{name}")

    def rule_files(self) -> list[str]:
        if not self.bare:
            return sorted(str(p.relative_to(self.path)) for p in (self.path / RULES_DIR).glob("*.go"))
        names = self._git("ls-tree", "--name-only", "HEAD", f"{RULES_DIR}/").split()
        return sorted(n for n in names if n.endswith(".go") and not n.endswith("_test.go"))

    def version(self) -> str:
        if self.bare:
            return self._git("log", "-1", "--format=%h %cs").strip()
        try:
            return subprocess.run(
                ["git", "-C", str(self.path), "log", "-1", "--format=%h %cs"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "unknown"

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.path}", *args], capture_output=True, text=True, check=True
        ).stdout


# --- RE2 to Python --------------------------------------------------------------------------------------------

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "space": r"\s",
    "xdigit": "0-9A-Fa-f",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}
_INLINE_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def translate(pattern: str) -> re.Pattern[str] | None:
    """RE2 ``pattern`` as a Python regex, or None where Python cannot read it the same way."""
    out: list[str] = []
    # Per open group: the scoped-flag groups opened inside it, closed before each "|" and its own ")" (and opened
    # again after a "|": RE2's flags hold to the end of the group, across its alternatives).
    scoped: list[list[str]] = [[]]
    i = 0
    in_class = False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escape = pattern[i : i + 2]
            if escape == r"\z":
                escape = r"\Z"
            elif escape[1:] in ("p", "P", "Q", "C"):
                return None  # Unicode classes and quoting: no Python equivalent worth guessing
            out.append(escape)
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if posix and posix.group(2) in _POSIX_CLASSES and not posix.group(1):
                out.append(_POSIX_CLASSES[posix.group(2)])
                i += posix.end()
                continue
            if char == "[":
                out.append(r"\[")  # RE2 reads a bare "[" in a class as a literal; Python warns of nested sets
                i += 1
                continue
            if char == "]":
                in_class = False
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            lead = "[^" if pattern.startswith("[^", i) else "["
            out.append(lead)
            i += len(lead)
            if pattern.startswith("]", i):  # a leading "]" is a literal
                out.append(r"\]")
                i += 1
            continue
        flags = _INLINE_FLAGS.match(pattern, i)
        if flags:
            if i == 0:
                out.append(flags.group())
            else:  # Python wants global flags first: scope them to the rest of the enclosing group
                opened = f"(?{flags.group(1)}:"
                out.append(opened)
                scoped[-1].append(opened)
            i = flags.end()
            continue
        if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            scoped.append([])
            i += 3
            continue
        if char == "(":
            scoped.append([])
        elif char == ")":
            out.append(")" * len(scoped.pop()))
            if not scoped:
                return None
        elif char == "|" and scoped[-1]:
            out.append(")" * len(scoped[-1]) + "|" + "".join(scoped[-1]))
            i += 1
            continue
        out.append(char)
        i += 1
    out.append(")" * len(scoped[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return re.compile("".join(out))
        except re.error:
            return None


# --- a random string that matches a regex (gitleaks' secrets.NewSecret) ----------------------------------------

_PRINTABLE = [chr(c) for c in range(33, 127)]
_CATEGORY_CHARS = {
    sre_constants.CATEGORY_DIGIT: "0123456789",
    sre_constants.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
    sre_constants.CATEGORY_SPACE: " ",
    sre_constants.CATEGORY_NOT_DIGIT: "abcdefghijklmnopqrstuvwxyz",
    sre_constants.CATEGORY_NOT_WORD: "-.:;!",
    sre_constants.CATEGORY_NOT_SPACE: "abcdefghijklmnopqrstuvwxyz0123456789",
}
# reggen's limit on an unbounded repeat
_UNBOUNDED_EXTRA = 10


def random_match(pattern: str, rng: random.Random) -> str:
    translated = translate(pattern)
    if translated is None:
        raise Unsupported(f"regex {pattern!r}")
    groups: dict[int, str] = {}
    return _generate(sre_parse.parse(translated.pattern), rng, groups)


def _class_chars(items: list[Any]) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, value in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            chars.add(chr(value))
        elif op is sre_constants.RANGE:
            chars.update(chr(c) for c in range(value[0], value[1] + 1))
        elif op is sre_constants.CATEGORY:
            chars.update(_CATEGORY_CHARS.get(value, ""))
    if negate:
        return [c for c in _PRINTABLE if c not in chars]
    return sorted(chars)


def _generate(parsed: Any, rng: random.Random, groups: dict[int, str]) -> str:
    out = []
    for op, value in parsed:
        if op is sre_constants.LITERAL:
            out.append(chr(value))
        elif op is sre_constants.NOT_LITERAL:
            out.append(rng.choice([c for c in _PRINTABLE if c != chr(value)]))
        elif op is sre_constants.ANY:
            out.append(rng.choice(_CATEGORY_CHARS[sre_constants.CATEGORY_WORD]))
        elif op is sre_constants.IN:
            out.append(rng.choice(_class_chars(value)))
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, sub = value
            if high is sre_constants.MAXREPEAT:
                high = low + _UNBOUNDED_EXTRA
            out.extend(_generate(sub, rng, groups) for _ in range(rng.randint(low, high)))
        elif op is sre_constants.SUBPATTERN:
            number, _, _, sub = value
            text = _generate(sub, rng, groups)
            if number:
                groups[number] = text
            out.append(text)
        elif op is sre_constants.BRANCH:
            out.append(_generate(rng.choice(value[1]), rng, groups))
        elif op is sre_constants.CATEGORY:
            out.append(rng.choice(_CATEGORY_CHARS.get(value, "a")))
        elif op is sre_constants.GROUPREF:
            out.append(groups.get(value, ""))
        # AT (anchors) and look-arounds produce nothing
    return "".join(out)


# --- the Go the true positives are written in ------------------------------------------------------------------


class Unsupported(Exception):
    """A Go construct this evaluator does not read: the value is counted as unparsed."""


UNPARSED = object()

_TOKEN = re.compile(
    r"""
      (?P<space>[ \t\r]+)
    | (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<newline>\n)
    | (?P<raw>`[^`]*`)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<rune>'(?:[^'\\\n]|\\.)*')
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<number>\d+)
    | (?P<op>\.\.\.|:=|\+=|==|!=|&&|\|\||<=|>=|.)
    """,
    re.S | re.X,
)
_GO_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{3}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _go_string(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1].replace("\r", "")

    def unescape(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "uUx":
            return chr(int(code[1:], 16))
        if code[0].isdigit():
            return chr(int(code, 8))
        return _SIMPLE_ESCAPES.get(code, code)

    return _GO_ESCAPE.sub(unescape, literal[1:-1])


@dataclass
class Token:
    kind: str
    text: str


def tokenize(source: str) -> list[Token]:
    tokens = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "op"
        if kind in ("space", "comment"):
            continue
        tokens.append(Token(kind, match.group()))
    return tokens


_CLOSE = {"(": ")", "[": "]", "{": "}"}


class _Parser:
    """Go expressions into tuples: ('str', s), ('num', n), ('name', n), ('call', f, args, spread), ('slice', items),
    ('add', a, b), ('unknown',). Anything else is skipped to the next ``,`` or closing bracket and is 'unknown'."""

    def __init__(self, tokens: list[Token], at: int = 0) -> None:
        self.tokens = tokens
        self.at = at
        self.depth = 0

    def peek(self, skip_newlines: bool = True) -> Token | None:
        at = self.at
        while skip_newlines and at < len(self.tokens) and self.tokens[at].kind == "newline":
            at += 1
        return self.tokens[at] if at < len(self.tokens) else None

    def take(self, skip_newlines: bool = True) -> Token:
        while skip_newlines and self.at < len(self.tokens) and self.tokens[self.at].kind == "newline":
            self.at += 1
        if self.at >= len(self.tokens):
            raise Unsupported("end of source")
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expect(self, text: str) -> None:
        if self.take().text != text:
            raise Unsupported(f"expected {text}")

    def expression(self, in_brackets: bool) -> tuple:
        left = self.operand(in_brackets)
        while True:
            token = self.peek(skip_newlines=in_brackets)
            if token is None or token.text != "+":
                return left
            self.take(skip_newlines=in_brackets)
            left = ("add", left, self.operand(in_brackets))

    def operand(self, in_brackets: bool) -> tuple:
        token = self.take()
        if token.kind in ("string", "raw"):
            return ("str", _go_string(token.text))
        if token.kind == "number":
            return ("num", int(token.text))
        if token.text == "(":
            inner = self.expression(True)
            self.expect(")")
            return inner
        if token.text == "[":  # []string{…} or []byte(…)
            self.expect("]")
            kind = self.take().text
            opener = self.take()
            if opener.text == "{":
                return ("slice", self.items("}"))
            if opener.text == "(":
                inner = self.expression(True)
                self.expect(")")
                return inner if kind == "byte" else ("unknown",)
            raise Unsupported("slice type")
        if token.text == "map":  # map[string]string{key: value, …}: its values
            self.expect("[")
            self.skip_to("]")
            self.expect("]")
            self.take()
            self.expect("{")
            return ("slice", self.map_values())
        if token.kind == "name":
            following = self.peek(skip_newlines=False)
            if following is not None and following.text == "(":
                self.take()
                args, spread = self.arguments()
                return ("call", token.text, args, spread)
            return ("name", token.text)
        raise Unsupported(f"operand {token.text!r}")

    def arguments(self) -> tuple[list[tuple], bool]:
        args, spread = [], False
        while True:
            token = self.peek()
            if token is None:
                raise Unsupported("unclosed call")
            if token.text == ")":
                self.take()
                return args, spread
            args.append(self.item(")"))
            token = self.peek()
            if token is not None and token.text == "...":
                self.take()
                spread = True
                token = self.peek()
            if token is not None and token.text == ",":
                self.take()

    def items(self, closer: str) -> list[tuple]:
        items = []
        while True:
            token = self.peek()
            if token is None:
                raise Unsupported("unclosed literal")
            if token.text == closer:
                self.take()
                return items
            items.append(self.item(closer))
            token = self.peek()
            if token is not None and token.text == ",":
                self.take()

    def map_values(self) -> list[tuple]:
        values = []
        while True:
            token = self.peek()
            if token is None:
                raise Unsupported("unclosed map")
            if token.text == "}":
                self.take()
                return values
            self.item(":")
            self.expect(":")
            values.append(self.item("}"))
            token = self.peek()
            if token is not None and token.text == ",":
                self.take()

    def item(self, closer: str) -> tuple:
        """One element or argument; one this parser cannot read is skipped whole and is 'unknown'."""
        start = self.at
        try:
            value = self.expression(True)
            token = self.peek()
            if token is not None and token.text in (",", closer, "..."):
                return value
        except Unsupported:
            pass
        self.at = start
        self.skip_to(closer)
        return ("unknown",)

    def skip_to(self, closer: str) -> None:
        depth = 0
        while self.at < len(self.tokens):
            text = self.tokens[self.at].text
            if depth == 0 and text in (",", closer):
                return
            if text in _CLOSE:
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
            self.at += 1


@dataclass
class RuleFunction:
    """A rule function of cmd/generate/config/rules: its rule id and its true positives."""

    name: str
    rule_id: str
    true_positives: list[str]
    unparsed: int  # expressions of its tps this evaluator could not read


class GoEvaluator:
    def __init__(self, templates: list[str], rng: random.Random, stopwords: tuple[str, ...] = ()) -> None:
        self.templates = templates
        self.rng = rng
        self.stopwords = stopwords

    def value(self, node: tuple, env: dict[str, Any]) -> Any:
        kind = node[0]
        if kind in ("str", "num"):
            return node[1]
        if kind == "name":
            if node[1] not in env:
                raise Unsupported(f"name {node[1]}")
            return env[node[1]]
        if kind == "add":
            left, right = self.value(node[1], env), self.value(node[2], env)
            if not (isinstance(left, str) and isinstance(right, str)):
                raise Unsupported("+ of non-strings")
            return left + right
        if kind == "slice":
            return [self.element(item, env) for item in node[1]]
        if kind == "call":
            return self.call(node[1], node[2], node[3], env)
        raise Unsupported(kind)

    def element(self, node: tuple, env: dict[str, Any]) -> Any:
        try:
            return self.value(node, env)
        except Unsupported:
            return UNPARSED

    def call(self, name: str, args: list[tuple], spread: bool, env: dict[str, Any]) -> Any:
        short = name.rsplit(".", 1)[-1]
        if short == "append":
            base = self.value(args[0], env)
            if not isinstance(base, list):
                raise Unsupported("append to a non-list")
            added: list[Any] = []
            for position, arg in enumerate(args[1:], start=1):
                item = self.element(arg, env)
                if spread and position == len(args) - 1:
                    added.extend(item if isinstance(item, list) else [UNPARSED])
                else:
                    added.append(item)
            return base + added
        values = [self.value(arg, env) for arg in args]
        if short == "GenerateSampleSecrets":
            identifier, secret = values
            replace = {"{i}": identifier, "{I}": identifier.upper(), "{s}": secret}
            return [re.sub(r"\{[iIs]\}", lambda m: replace[m.group()], t) for t in self.templates]
        if short == "GenerateSampleSecret":
            return f'{values[0]}_api_token = "{values[1]}"'
        if short == "NewSecret":
            return random_match(values[0], self.rng)
        if short == "newPlausibleSecret":  # generic.go: drawn again until it has a digit 1-9 and no stop word
            while True:
                secret = random_match(values[0], self.rng)
                lowered = secret.lower()
                if re.search("[1-9]", secret) and not any(word in lowered for word in self.stopwords):
                    return secret
        patterns = {
            "Numeric": "[0-9]{%s}",
            "Hex": "[a-f0-9]{%s}",
            "AlphaNumeric": "[a-z0-9]{%s}",
            "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
            "AlphaNumericExtended": r"[a-z0-9=_\-]{%s}",
            "AlphaNumericExtendedLong": r"[a-z0-9\/=_\+\-]{%s}",
        }
        if short in patterns:  # cmd/generate/config/utils/patterns.go
            return patterns[short] % values[0]
        if short == "Hex8_4_4_4_12":
            return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        if name == "fmt.Sprintf":
            return _sprintf(values[0], values[1:])
        if short == "EncodeToString":
            data = values[0].encode() if isinstance(values[0], str) else values[0]
            encoded = (base64.urlsafe_b64encode if "URL" in name else base64.b64encode)(data).decode()
            return encoded.rstrip("=") if ".Raw" in name or name.startswith("Raw") else encoded
        if name == "strings.Repeat":
            return values[0] * values[1]
        if name == "strings.ToUpper":
            return values[0].upper()
        if name == "strings.ToLower":
            return values[0].lower()
        if name == "string":
            return values[0]
        raise Unsupported(f"call {name}")


def _sprintf(template: str, args: list[Any]) -> str:
    values = iter(args)

    def verb(match: re.Match[str]) -> str:
        if match.group() == "%%":
            return "%"
        value = next(values)
        return f'"{value}"' if match.group().endswith("q") else str(value)

    return re.sub(r"%%|%[-+# 0]*\d*[sdvq]", verb, template)


def sample_templates(source: str) -> list[str]:
    """The templates of utils.GenerateSampleSecrets, read from generate.go (its ``samples`` map)."""
    start = source.index("samples := map[string]string{")
    tokens = tokenize(source[start + len("samples := map[string]string{") :])
    templates = []
    depth = 0
    for index, token in enumerate(tokens):
        if token.text in _CLOSE:
            depth += 1
        elif token.text in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        elif token.text == ":" and depth == 0:
            value = tokens[index + 1]
            if value.kind in ("string", "raw"):
                templates.append(_go_string(value.text))
    return templates


_FUNCTION = re.compile(r"^func (\w+)\(\)\s*\*config\.Rule\s*\{", re.M)
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')


def rule_functions(source: GitleaksSource, seed: int, stopwords: tuple[str, ...] = ()) -> list[RuleFunction]:
    """Each rule function's rule id and true positives; ``stopwords``: the generic rule's (newPlausibleSecret)."""
    templates = sample_templates(source.read("cmd/generate/config/utils/generate.go"))
    found = []
    for path in source.rule_files():
        text = source.read(path)
        starts = list(_FUNCTION.finditer(text))
        # Package-level variables (lists of examples several rules share) are read once, before the functions.
        outside = text[: starts[0].start()] if starts else text
        for number, start in enumerate(starts):
            end = text.find("\n}\n", start.end())
            following = starts[number + 1].start() if number + 1 < len(starts) else len(text)
            if 0 <= end < following:
                outside += text[end + 3 : following]
        file_env = _assignments(
            tokenize(outside), GoEvaluator(templates, random.Random(f"{seed}:{path}"), stopwords), {}
        )
        for number, start in enumerate(starts):
            body = text[start.end() : starts[number + 1].start() if number + 1 < len(starts) else len(text)]
            rule_id = _RULE_ID.search(body)
            if rule_id is None:
                continue
            rng = random.Random(f"{seed}:{rule_id.group(1)}")
            tps, unparsed = _true_positives(body, GoEvaluator(templates, rng, stopwords), dict(file_env))
            found.append(RuleFunction(start.group(1), rule_id.group(1), tps, unparsed))
    return found


def _assignments(tokens: list[Token], evaluator: GoEvaluator, env: dict[str, Any], stop: int | None = None) -> dict:
    """``env`` after the assignments ``name := …`` / ``name = …`` among ``tokens``, in order."""
    at = 0
    end = len(tokens) if stop is None else stop
    while at < end:
        token = tokens[at]
        previous = tokens[at - 1].text if at else "\n"
        following = tokens[at + 1].text if at + 1 < len(tokens) else ""
        if token.kind == "name" and "." not in token.text and following in (":=", "=") and previous != ",":
            parser = _Parser(tokens, at + 2)
            try:
                node = parser.expression(False)
                env[token.text] = evaluator.value(node, env)
            except Unsupported:
                env.pop(token.text, None)
            at = max(parser.at, at + 1)
            continue
        at += 1
    return env


def _true_positives(body: str, evaluator: GoEvaluator, env: dict[str, Any]) -> tuple[list[str], int]:
    """The strings of the rule's Validate call's second argument, after the body's assignments in order."""
    tokens = tokenize(body)
    validate = next(
        (
            at
            for at, token in enumerate(tokens[:-1])
            if token.text in ("utils.Validate", "utils.ValidateWithPaths") and tokens[at + 1].text == "("
        ),
        None,
    )
    if validate is None:
        return [], 0  # "validate TODO": the rule publishes no true positive
    env = _assignments(tokens, evaluator, env, stop=validate)
    parser = _Parser(tokens, validate + 2)
    try:
        args, _ = parser.arguments()
        validated = evaluator.element(args[1], env) if len(args) > 1 else UNPARSED
    except Unsupported:
        validated = UNPARSED
    if not isinstance(validated, list):
        return [], 1
    strings = [v for v in validated if isinstance(v, str)]
    return strings, len(validated) - len(strings)


# --- the rules as gitleaks runs them ----------------------------------------------------------------------------


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@dataclass
class Allowlist:
    regexes: list[re.Pattern[str]]
    stopwords: list[str]
    target: str  # "secret", "match" or "line"
    condition_and: bool
    has_other_criteria: bool  # paths or commits, which a text without a path never meets

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regexes:
            checks.append(any(r.search(target) for r in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        if self.has_other_criteria:
            checks.append(False)
        if not checks:
            return False
        return all(checks) if self.condition_and else any(checks)


def _allowlist(spec: dict[str, Any]) -> Allowlist:
    regexes = [r for r in (translate(p) for p in spec.get("regexes", [])) if r is not None]
    return Allowlist(
        regexes=regexes,
        stopwords=[w.lower() for w in spec.get("stopwords", [])],
        target=spec.get("regexTarget", "secret"),
        condition_and=spec.get("condition", "OR").upper() == "AND",
        has_other_criteria=bool(spec.get("paths") or spec.get("commits")),
    )


@dataclass
class GitleaksRule:
    id: str
    source: str
    regex: re.Pattern[str] | None
    secret_group: int
    entropy: float
    keywords: list[str]
    allowlists: list[Allowlist] = field(default_factory=list)

    def secret_spans(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, match) of each secret the regex finds, as gitleaks picks it from the groups."""
        if self.regex is None:
            return
        for match in self.regex.finditer(text):
            if self.secret_group and self.secret_group <= (self.regex.groups or 0):
                group = self.secret_group
            else:
                group = next((g for g in range(1, (self.regex.groups or 0) + 1) if match.group(g)), 0)
            start, end = match.span(group)
            if start < end:
                yield start, end, match.group()


class GitleaksRules:
    """gitleaks' default rules, emulated: keywords, regex, secretGroup, entropy, its global and rules' allowlists.

    Not emulated: decoding (base64 and others, which gitleaks re-scans), paths (a rule that needs a path runs as if
    the path matched; an allowlist that needs one never applies), and gitleaks:allow comments.
    """

    def __init__(self, config_text: str) -> None:
        config = tomllib.loads(config_text)
        globals_ = [config["allowlist"]] if "allowlist" in config else []
        self.global_allowlists = [_allowlist(spec) for spec in [*globals_, *config.get("allowlists", [])]]
        self.rules: dict[str, GitleaksRule] = {}
        self.untranslatable: list[str] = []
        for spec in config.get("rules", []):
            regex = translate(spec["regex"]) if "regex" in spec else None
            if "regex" in spec and regex is None:
                self.untranslatable.append(spec["id"])
            self.rules[spec["id"]] = GitleaksRule(
                id=spec["id"],
                source=spec.get("regex", ""),
                regex=regex,
                secret_group=int(spec.get("secretGroup", 0)),
                entropy=float(spec.get("entropy", 0)),
                keywords=[k.lower() for k in spec.get("keywords", [])],
                allowlists=[_allowlist(a) for a in spec.get("allowlists", [])],
            )

    def findings(self, text: str) -> list[tuple[str, int, int]]:
        """(rule id, start, end) of each secret gitleaks' rules would report in ``text``."""
        lowered = text.lower()
        found = []
        for rule in self.rules.values():
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            for start, end, match in rule.secret_spans(text):
                secret = text[start:end]
                if rule.entropy:
                    if shannon_entropy(secret) <= rule.entropy:
                        continue
                    if rule.id.startswith("generic") and not any(c.isdigit() for c in secret):
                        continue
                line_start = text.rfind("\n", 0, start) + 1
                line_end = text.find("\n", end)
                line = text[line_start : line_end if line_end >= 0 else len(text)]
                if any(a.allows(secret, match, line) for a in (*self.global_allowlists, *rule.allowlists)):
                    continue
                found.append((rule.id, start, end))
        return found

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced, as a redactor built on these rules would."""
        spans = sorted((start, end) for _, start, end in self.findings(text))
        out, last = [], 0
        for start, end in spans:
            if start < last:
                start = last
            if start >= end:
                continue
            out.append(text[last:start])
            out.append("[redacted: gitleaks]")
            last = end
        out.append(text[last:])
        return "".join(out)
