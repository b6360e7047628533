"""threadmem/lib/secrets/: the vendors' formats, the assignments agent sessions hold secrets in, and what stays.

Every secret here is made up and built by concatenation, so that no scanner reading this source sees one.
"""

from __future__ import annotations

import re

import pytest

from threadmem.lib.redact import redact, redactions
from threadmem.lib.secrets import vendors

R = "Zq8vT2mX9pL4wR7nK3sD6fH1jB5cY0gE"  # 32 random-looking letters and digits
HEX = "4f8a2c9e1b7d3f6a" + "0c5e8b2d4f7a1c3e"
B32 = "Q7W2E5R4T6Y3U2I7"  # base32, as AWS key ids are


def secret_gone(text: str, secret: str) -> bool:
    """No 12 characters of ``secret`` in a row are left in ``redact(text)``."""
    out = redact(text)
    return all(secret[i : i + 12] not in out for i in range(max(1, len(secret) - 11)))


VENDOR_TOKENS = {
    "openai project key": "sk-" + "proj-" + "Ab3_dE9-" + R + "_T3Blbk" + "FJzQ8-" + R,
    "openai service-account key": "sk-" + "svcacct-" + R + "-x_" + R,
    "openai admin key": "sk-" + "admin-" + R + "_" + R,
    "anthropic key": "sk-" + "ant-api03-" + (R * 3)[:93] + "AA",
    "aws access key": "AKIA" + B32,
    "github classic": "ghp_" + R + "Ab12",
    "github fine-grained": "github_" + "pat_" + ("11ABCDE" + R)[:22] + "_" + (R * 2)[:59],
    "gitlab": "glpat-" + R[:20],
    "hugging face": "hf_" + "jCBaQngSHiHDRYOcsMcifUcysGyaiybUWz",
    "hugging face org": "api_org_" + "jCBaQngSHiHDRYOcsMcifUcysGyaiybUWz",
    "stripe test": "sk_" + "test_" + "51Hq" + R,
    "stripe restricted": "rk_" + "live_" + "51Hq" + R,
    "stripe webhook": "whsec_" + R,
    "sendgrid": "SG." + R[:22] + "." + (R * 2)[:43],
    "npm": "npm_" + (R + "Ab12")[:36],
    "pypi": "pypi-" + "AgEIcHlwaS5vcmc" + R * 2,
    "vault": "hvs." + "CAESIJ" + R * 3,
    "sentry": "sntryu_" + HEX * 2,
    "mailgun": "key-" + HEX,
    "azure ad client secret": "aB3" + "8Q~" + (R + "Ab")[:34],
    "slack bot": "xoxb-" + "1234567890" + "-" + "9876543210" + "-" + R[:24],
    "google api key": "AIza" + "Sy" + (R + "-_x")[:33],
    "digitalocean": "dop_v1_" + HEX * 2,
    "shopify": "shpat_" + HEX,
    "doppler": "dp.pt." + (R + R)[:43],
    "linear": "lin_api_" + (R + R)[:40],
    "grafana": "glsa_" + R + "_" + HEX[:8],
    "postman": "PMAK-" + HEX[:24] + "-" + (HEX + HEX)[:34],
    "planetscale": "pscale_" + "tkn_" + R + "ab",
    "pulumi": "pul-" + (HEX * 2)[:40],
    "databricks": "dapi" + HEX,
    "age": "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2,
    "telegram": "1234567890:AA" + (R + "-_x")[:33],
    "twilio": "SK" + HEX,
    "discord webhook": "https://discord.com/api/webhooks/123456789012345678/" + (R * 3)[:68],
    "azure sas": "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sr=b&sig=" + R + "%3D",
}


@pytest.mark.parametrize("name", VENDOR_TOKENS)
@pytest.mark.parametrize("context", ["{s}", "export X={s}", 'echo "{s}"', "token: {s}\n", "the key is {s}."])
def test_each_vendor_token_goes_in_any_context(name, context):
    token = VENDOR_TOKENS[name]
    secret = token.rsplit("/", 1)[-1].rsplit("sig=", 1)[-1]
    assert secret_gone(context.format(s=token), secret)


ASSIGNMENTS = [
    # .env, export, env output
    ("DB_PASSWORD=", "hunter2-prod-2024", ""),
    ("export JWT_SECRET=", R, ""),
    ("SECRET_KEY=", "django-insecure-7x@9k#2lp$4vb8nm3rt6yw1uc5ie7oa0sf2gh4jk9", ""),
    ("AWS_SECRET_ACCESS_KEY=", "9dKz3Lp+Qx7Vb2Nm5Rt8Yw1Uc4Ie6Oa0Sf3Gh7J", ""),
    ("aws_secret_access_key = ", "9dKz3Lp+Qx7Vb2Nm5Rt8Yw1Uc4Ie6Oa0Sf3Gh7J", "\n"),
    ("aws_session_token = ", "IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJHMEUCIQDn7x9Kq2" + R, "\n"),
    ("DD_API_KEY=", HEX, ""),
    ("CLOUDFLARE_API_TOKEN=", R + "-a8Kq2Lp", ""),
    # YAML, compose, JSON, TOML, INI, properties, HCL
    ("    POSTGRES_PASSWORD: ", "Tr0ub4dor&3!", "\n"),
    ('{"client_secret": "', R, '"}'),
    ('  "SecretAccessKey": "', "Zk3Lp+Qx7Vb2Nm5Rt8Yw1Uc4Ie6Oa0Sf3Gh7Jd9", '",'),
    ('token = "', R, '"\n'),
    ("password = ", "S3cr3t!pa55", "\n"),
    ("spring.datasource.password=", "S3cr3t!pa55", "\n"),
    ('  password = "', "S3cr3t!pa55", '"\n}'),
    # keyword arguments, CLI flags, headers, query strings
    ('openai.OpenAI(api_key="', R, '")'),
    ("const client = new Client({ apiKey: '", R, "' })"),
    ("pg_dump --password=", "Sup3rS3cret", " db"),
    ("vault login --token ", "s." + R[:24], ""),
    ("mysql -u root -p", "S3cr3tPa55", " orders"),
    ("sshpass -p '", "L0g1nPa55!", "' ssh deploy@host"),
    ("redis-cli -h cache -a ", "R3d1sPa55w0rd", " ping"),
    ("curl -u admin:", "S3cr3t!Pass", " https://api.example.com"),
    ('curl -H "Authorization: Bearer ', R, '" https://api.example.com'),
    ('curl -H "X-API-Key: ', HEX, '" https://x'),
    ("curl 'https://api.example.com/v1?api_key=", HEX, "&limit=5'"),
    ("Cookie: sessionid=", R, "; theme=dark"),
    # URLs, .npmrc, .netrc, .pypirc
    ('psql "postgres://app:', "p@ss!w0rd$x", '@db:5432/orders"'),
    ("REDIS_URL=redis://:", "R3d1sPa55w0rd", "@cache:6379/0"),
    ("//registry.npmjs.org/:_auth=", "ZGVwbG95OlMzY3IzdFBhNTU=", "\n"),
    ("machine api.github.com login deploy password ", "G1tPa55w0rd9", "\n"),
    ("[pypi]\nusername = __token__\npassword = ", "S3cr3t!pa55x", "\n"),
    # JSON inside a string (a tool's output quoted in a message)
    ('{\\"password\\": \\"', "S3cr3t!pa55", '\\"}'),
]


@pytest.mark.parametrize(("before", "secret", "after"), ASSIGNMENTS)
def test_a_secret_assigned_to_a_secret_named_key_goes_and_the_name_stays(before, secret, after):
    text = before + secret + after
    out = redact(text)
    assert secret_gone(text, secret), out
    assert "[redacted: " in out


def test_a_kubernetes_secrets_values_go_in_yaml_and_json():
    yaml = "apiVersion: v1\ndata:\n  password: UzNjcjN0UGE1NQ==\n  username: YWRtaW4=\nkind: Secret\n"
    assert redact(yaml) == (
        "apiVersion: v1\ndata:\n  password: [redacted: kubernetes secret]\n"
        "  username: [redacted: kubernetes secret]\nkind: Secret\n"
    )
    string_data = "kind: Secret\nmetadata:\n  name: db\nstringData:\n  DB_URL: postgres-main\n  TOKEN: abc\n"
    assert "postgres-main" not in redact(string_data) and "abc" not in redact(string_data)
    json = '{"kind": "Secret", "data": {"password": "UzNjcjN0UGE1NQ=="}}'
    assert redact(json) == '{"kind": "Secret", "data": {"password": "[redacted: kubernetes secret]"}}'
    config_map = "kind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n"
    assert redact(config_map) is config_map


# What recall lives on: none of it is a secret, none of it changes.
BAIT = [
    "commit de55153a8f3c2e1b9d7a6f5e4c3b2a1908f7e6d5 (short de55153)",
    '"integrity": "sha512-3Kq2Lp4Vb8Nm3Rt6Yw1Uc5Ie7Oa0Sf2Gh4Jk9Zq8vT2mX9pL4wR7nK3sD6fH1jB5cY0gE3Kq2Lp4Vb8Nm3Rt6Yw"',
    "image: postgres@sha256:9b7c3d2e1f0a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c",
    'cache_key = "de55153a8f3c2e1b9d7a6f5e4c3b2a1908f7e6d5"',
    "idempotency_key: 258c7280-ae70-4798-800f-63464d01a85d",
    'next_page_token = "' + HEX + '"',
    '"etag": "W/\\"' + HEX + '\\""',
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + R + " ops@host",
    "ACGTACCAGTACGTACGTACGTAGGCTAGCATCGATCGATCGATCGA ASIAPACIFICREGIONSXX ACCAGTACGTACGTACGTAC",
    "rl:1700000000:" + (R + "abc")[:35],
    "def test_password_reset_flow(client): password = None",
    "token = get_token(); api_key = os.environ['API_KEY']; secret = settings.SECRET",
    "password: ${DB_PASSWORD}\ntoken=<token> password=changeme api_key=your-api-key-here secret=xxxxxxxx",
    '{"password": "Password", "token": "Token", "confirm_password": "Confirm password"}',
    "const apiKey = process.env.OPENAI_API_KEY; headers['Authorization'] = `Bearer ${apiKey}`",
    "GetApiTokenHandler TokenRefreshMiddleware PasswordResetView SecretManagerClient",
    "https://api.github.com/repos/acme/deploy/pulls?page=2&per_page=100",
    "postgres://postgres@127.0.0.1:5432/threadmem and https://user:${DB_PASSWORD}@host/",
    'secret_key_base: "test-only-secret-base-minimum-64-bytes-long-enough-for-token-signing-ok"',
    "toolu_01VpPeBD2ziigLLpybShAGoU msg_01MKH1ccEGrZGNPvu8pYiiQa req_011CY15QS2LGwAeBxdfa6e1V",
    'data: "aGVsbG8gd29ybGQgdGhpcyBpcyBvcmRpbmFyeSBkYXRhIGVuY29kZWQ="',
    "max_tokens=4096 token_count: 1532 input_tokens 88 key_id=" + HEX,
    "mkdir -p /srv/app/logs && git push -u origin main && docker run -p 8080:80 app",
    "the token expired yesterday; the password reset email never came",
]


@pytest.mark.parametrize("text", BAIT)
def test_identifiers_and_code_stay_the_same_object(text):
    assert redactions(text) == [], [(r.label, text[r.start : r.end]) for r in redactions(text)]
    assert redact(text) is text


def test_a_long_single_line_is_read_once():
    """A 5 MB line of tokens-like text and keywords: every rule bounded, the secrets in it still found."""
    piece = '{"k":"' + "aGVsbG8gd29ybGQ" * 20 + '","token":"abc","password=x key=' + "Zq8vT2mX9pL4" * 5 + '"}, '
    line = piece * 12_000
    text = line + "ghp_" + R + "Ab12"
    out = redact(text)
    assert out.endswith("[redacted: github token]")


def test_every_vendor_rule_is_bounded_and_its_window_holds_its_longest_match():
    """A window shorter than a match would cut the token and leave its tail; an unbounded one would read the line."""
    for rule in vendors.RULES:
        _, longest = re._parser.parse(rule.pattern.pattern, rule.pattern.flags).getwidth()
        assert longest < re._parser.MAXREPEAT, rule.label
        assert longest <= rule.before + min(map(len, rule.keywords)) + rule.after, rule.label
