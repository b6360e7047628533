"""threadmem/lib/redact.py: each rule replaces the secret only, identifiers stay, nothing matched costs nothing."""

from __future__ import annotations

import pytest
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

from tests.support.secrets import (
    AWS_KEY_ID,
    AWS_SECRET,
    DATABASE_URL,
    GITHUB_TOKEN,
    IDENTIFIERS,
    KEY_LINES,
    PRIVATE_KEY,
    REDACTED_ARGUMENTS,
    REDACTED_RESULT,
    SECRET_ARGUMENTS,
    SECRET_RESULT,
    SLACK_TOKEN,
    STRIPE_KEY,
)
from threadmem.lib.redact import RULES, redact, redact_arguments, redact_tool_calls, redactions

BODY = "\n".join(KEY_LINES)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}", "export AWS_ACCESS_KEY_ID=[redacted: aws access key]"),
        # The pattern's capture group is the secret: the name and the quotes around it stay.
        (f'aws_secret_access_key = "{AWS_SECRET}"', 'aws_secret_access_key = "[redacted: aws secret access key]"'),
        (f"token {GITHUB_TOKEN} for ci", "token [redacted: github token] for ci"),
        (f"SLACK={SLACK_TOKEN}.", "SLACK=[redacted: slack token]."),
        # The plugin matches the first 24 characters of a Stripe key; the rest of the token goes too.
        (f"key {STRIPE_KEY}Xy12 end", "key [redacted: stripe key] end"),
        (f"DATABASE_URL={DATABASE_URL}", "DATABASE_URL=postgres://app:[redacted: password]@db.internal:5432/orders"),
        (
            "https://deploy:hunter2@git.example.com/repo.git",
            "https://deploy:[redacted: password]@git.example.com/repo.git",
        ),
        (
            "AccountKey=" + "Q" * 86 + "==;EndpointSuffix=core",
            "AccountKey=[redacted: azure storage key];EndpointSuffix=core",
        ),
        (f"Authorization: Bearer {JWT} sent", "Authorization: Bearer [redacted: jwt] sent"),
        ("sk-proj-" + "Ab1" * 10 + "T3BlbkFJ" + "Cd2" * 20 + " ok", "[redacted: openai key] ok"),
        (
            "//registry.npmjs.org/:_authToken=npm_" + "Zx9" * 12 + '" > ~/.npmrc',
            '//registry.npmjs.org/:_authToken=[redacted: npm token]" > ~/.npmrc',
        ),
        ("SG." + "a1B2c3D4e5F6g7H8i9J0kL" + "." + "m" * 43, "[redacted: sendgrid key]"),
        ("glpat-" + "x7Y8z9A0b1C2d3E4f5G6", "[redacted: gitlab token]"),
        ("pypi-AgEIcHlwaS5vcmc" + "Q" * 70, "[redacted: pypi token]"),
        ("sid SK" + "0123456789abcdef" * 2, "sid [redacted: twilio key]"),
        ("bot 123456789:" + "AAH" + "r4nd0mChars" * 2 + "x" * 10 + ".", "bot [redacted: telegram token]."),
        ('api_key = "' + "Zq8vT2mX9pL4" + "wR7nK3sD6fH1" + '"', 'api_key = "[redacted: secret]"'),
        ("hook https://hooks.slack.com/services/T0001/B0002/" + "w" * 24, "hook [redacted: slack webhook]"),
        # gitleaks' rules, for what detect-secrets has no plugin for.
        (
            "ANTHROPIC_API_KEY=sk-ant-" + "api03-" + "Qz7_" * 23 + "wAA\n",
            "ANTHROPIC_API_KEY=[redacted: anthropic key]\n",
        ),
        ("token github_pat_" + "11ABCDE" * 11 + "xyzab", "token [redacted: github token]"),
        ('"key": "AIza' + "Sy" + "B4x-" * 8 + 'q"', '"key": "[redacted: google api key]"'),
        (
            "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----\n" + KEY_LINES[0] + "\n-----END ENCRYPTED PRIVATE KEY-----",
            "[redacted: private key]",
        ),
    ],
)
def test_each_rule_replaces_only_the_secret_with_a_placeholder_naming_it(text, expected):
    assert redact(text) == expected


def test_a_private_key_goes_from_its_begin_line_to_its_end_line():
    text = f"key.pem:\n{PRIVATE_KEY}\nnext line"
    assert redact(text) == "key.pem:\n[redacted: private key]\nnext line"


def test_a_private_key_cut_short_goes_to_the_blank_line_or_the_end_of_the_text():
    header = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
    assert (
        redact(f"head:\n{header}\n{BODY}\n\nthe output was cut")
        == "head:\n[redacted: private key]\n\nthe output was cut"
    )
    assert redact(f"{header}\n{BODY}") == "[redacted: private key]"


def test_a_private_key_inside_json_with_escaped_newlines_goes_whole():
    escaped = PRIVATE_KEY.replace("\n", "\\n")
    assert redact(f'{{"private_key": "{escaped}\\n", "client_email": "ci@example.iam"}}') == (
        '{"private_key": "[redacted: private key]\\n", "client_email": "ci@example.iam"}'
    )


def test_a_key_header_without_key_material_is_code_and_stays():
    code = 'if pem.startswith("-----BEGIN RSA ' + 'PRIVATE KEY-----"):\n    return parse(pem)\n'
    assert redact(code) is code


def test_every_secret_of_a_tool_result_is_replaced():
    assert redact(SECRET_RESULT) == REDACTED_RESULT


@pytest.mark.parametrize("text", IDENTIFIERS)
def test_identifiers_come_back_as_the_same_object(text):
    assert redact(text) is text


def test_ordinary_text_comes_back_as_the_same_object():
    for text in ["restart the api on staging-7.example.net", "cat /srv/api/shared/.env.staging", "commit de55153"]:
        assert redact(text) is text


def test_the_left_out_detectors_would_flag_identifiers_the_rules_keep():
    """Why the high-entropy detectors do not run: a git SHA, a hex id and ordinary base64 data are 'secrets' to them."""
    sha = '"sha": "879b1ac0f3e2d4c5b6a7980123456789abcdef01"'
    blob = 'data: "aGVsbG8gd29ybGQgdGhpcyBpcyBvcmRpbmFyeSBkYXRhIGVuY29kZWQ="'
    hexes, base64s = HexHighEntropyString(), Base64HighEntropyString()
    assert any(hexes.calculate_shannon_entropy(s) > hexes.entropy_limit for s in hexes.analyze_string(sha))
    assert any(base64s.calculate_shannon_entropy(s) > base64s.entropy_limit for s in base64s.analyze_string(blob))
    assert redact(sha) is sha and redact(blob) is blob


def test_redacting_twice_changes_nothing_more():
    once = redact(SECRET_RESULT + "\nnote [redacted: password] " + "Ab3_" * 11)
    assert redact(once) is once


def test_overlapping_finds_are_one_placeholder():
    # A GitHub token as a URL's password: both rules match it, and the vendor's label says more.
    assert redact(f"https://x:{GITHUB_TOKEN}@github.com/o/r") == "https://x:[redacted: github token]@github.com/o/r"
    assert [r.label for r in redactions(f"https://x:{GITHUB_TOKEN}@github.com")] == ["github token"]


def test_arguments_are_redacted_at_every_depth_keys_and_other_values_kept():
    assert redact_arguments(SECRET_ARGUMENTS) == REDACTED_ARGUMENTS
    clean = {"command": "ls -la /srv", "n": [1, 2.5, None, True]}
    assert redact_arguments(clean) is clean


def test_tool_calls_keep_their_ids_and_names_and_come_back_unchanged_when_clean():
    calls = [{"id": "call_1", "name": "shell", "arguments": SECRET_ARGUMENTS}]
    assert redact_tool_calls(calls) == [{"id": "call_1", "name": "shell", "arguments": REDACTED_ARGUMENTS}]
    clean = [{"id": "call_2", "name": "shell", "arguments": {"command": "uptime"}}]
    assert redact_tool_calls(clean) is clean


def test_the_detect_secrets_rules_are_the_plugins_published_patterns_each_once():
    from threadmem.lib.secrets import detect_secrets as module

    plugins = {name: value for name, value in vars(module).items() if name.endswith("Detector")}
    assert len(plugins) == 23
    assert not {"KeywordDetector", "IPPublicDetector"} & set(plugins)
    published = {id(pattern) for plugin in plugins.values() for pattern in plugin.denylist}
    used = [id(rule.pattern) for rule in module.RULES]
    assert len(used) == len(set(used)) and set(used) <= published
    assert all(rule in RULES for rule in module.RULES)
