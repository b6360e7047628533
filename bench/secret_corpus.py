"""The secrets benchmark's own corpus: agent-session texts holding made-up secrets, and bait holding none.

``own_corpus(half)`` builds, from a fixed seed, samples of the contexts an agent session holds secrets in (credential
files, ``.env``, ``export``, compose files, curl commands, git remotes, database clients, kubectl Secrets, logs,
tool-call arguments, chat …); each sample records the exact secret substrings it holds. ``bait_texts()`` builds
texts that hold only things that are no secret (digests, ids, paths, placeholders …). Every secret is random,
generated here in its vendor's published shape: none is real.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from typing import NamedTuple

HALVES = ("tune", "report")
# The halves differ in their seed and in which of a context's template variants they draw from.
SEEDS = {"tune": 5101, "report": 5102}

LOWER_DIGITS = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BASE64 = ALNUM + "+/"
BASE32_UPPER = string.ascii_uppercase + "234567"


class Sample(NamedTuple):
    """One text of a context, with every secret it holds (substrings of ``text``) and their vendors."""

    context: str
    text: str
    secrets: tuple[tuple[str, str], ...]  # (vendor, secret)


def _chars(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64(rng: random.Random, length: int) -> str:
    return _chars(rng, BASE64, length)


# --- the vendors' shapes --------------------------------------------------------------------------------------
# Each generator writes a token in the shape its vendor documents (the URL above it); where a vendor documents only
# the prefix, the length and alphabet are those of the tokens its dashboard issues, as gitleaks' rules describe them.


def _openai_project(rng: random.Random) -> str:
    # https://platform.openai.com/docs/api-reference/authentication: project keys (sk-proj-), 74+T3BlbkFJ+74
    return f"sk-proj-{_chars(rng, URLSAFE, 74)}T3BlbkFJ{_chars(rng, URLSAFE, 74)}"


def _openai_service_account(rng: random.Random) -> str:
    # https://platform.openai.com/docs/api-reference/project-service-accounts
    return f"sk-svcacct-{_chars(rng, URLSAFE, 74)}T3BlbkFJ{_chars(rng, URLSAFE, 74)}"


def _openai_admin(rng: random.Random) -> str:
    # https://platform.openai.com/docs/api-reference/admin-api-keys
    return f"sk-admin-{_chars(rng, URLSAFE, 58)}T3BlbkFJ{_chars(rng, URLSAFE, 58)}"


def _openai_legacy(rng: random.Random) -> str:
    # https://help.openai.com/en/articles/4936850 (user keys before 2024: sk-, 20, T3BlbkFJ, 20)
    return f"sk-{_chars(rng, ALNUM, 20)}T3BlbkFJ{_chars(rng, ALNUM, 20)}"


def _anthropic(rng: random.Random) -> str:
    # https://docs.anthropic.com/en/api/getting-started: sk-ant-api03-, 93 characters, AA
    return f"sk-ant-api03-{_chars(rng, URLSAFE, 93)}AA"


def _anthropic_admin(rng: random.Random) -> str:
    # https://docs.anthropic.com/en/api/administration-api: sk-ant-admin01-
    return f"sk-ant-admin01-{_chars(rng, URLSAFE, 93)}AA"


def _aws_key_id(rng: random.Random) -> str:
    # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids
    return "AKIA" + _chars(rng, BASE32_UPPER, 16)


def _aws_temporary_key_id(rng: random.Random) -> str:
    return "ASIA" + _chars(rng, BASE32_UPPER, 16)


def _aws_secret_key(rng: random.Random) -> str:
    # https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html: 40 base64 characters
    return _b64(rng, 40)


def _aws_session_token(rng: random.Random) -> str:
    # https://docs.aws.amazon.com/STS/latest/APIReference/API_Credentials.html: an opaque base64 blob, ~400-1000
    return "IQoJb3JpZ2luX2VjE" + _b64(rng, rng.randint(380, 700)) + "="


def _github_classic(rng: random.Random) -> str:
    # https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/
    return "ghp_" + _chars(rng, ALNUM, 36)


def _github_fine_grained(rng: random.Random) -> str:
    # https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens
    return f"github_pat_11{_chars(rng, string.ascii_uppercase + string.digits, 20)}_{_chars(rng, ALNUM, 59)}"


def _github_app(rng: random.Random) -> str:
    # Same source: ghs_ (installation), ghu_ (user-to-server), gho_ (OAuth), ghr_ (refresh)
    return rng.choice(("ghs_", "ghu_", "gho_")) + _chars(rng, ALNUM, 36)


def _gitlab(rng: random.Random) -> str:
    # https://docs.gitlab.com/security/tokens/#token-prefixes: glpat-, 20 characters
    return "glpat-" + _chars(rng, URLSAFE, 20)


def _slack_bot(rng: random.Random) -> str:
    # https://api.slack.com/concepts/token-types: xoxb-<team>-<bot>-<24>
    return f"xoxb-{_chars(rng, string.digits, 12)}-{_chars(rng, string.digits, 13)}-{_chars(rng, ALNUM, 24)}"


def _slack_user(rng: random.Random) -> str:
    return (
        f"xoxp-{_chars(rng, string.digits, 12)}-{_chars(rng, string.digits, 12)}-"
        f"{_chars(rng, string.digits, 13)}-{_chars(rng, HEX, 32)}"
    )


def _stripe_live(rng: random.Random) -> str:
    # https://docs.stripe.com/keys#obtain-api-keys: sk_live_ / sk_test_ / rk_live_, ~100 characters after the prefix
    return "sk_live_51" + _chars(rng, ALNUM, 97)


def _stripe_test(rng: random.Random) -> str:
    return "sk_test_51" + _chars(rng, ALNUM, 97)


def _stripe_restricted(rng: random.Random) -> str:
    return rng.choice(("rk_live_51", "rk_test_51")) + _chars(rng, ALNUM, 97)


def _stripe_webhook(rng: random.Random) -> str:
    # https://docs.stripe.com/webhooks#verify-events: whsec_, 32 characters
    return "whsec_" + _chars(rng, ALNUM, 32)


def _google_api_key(rng: random.Random) -> str:
    # https://cloud.google.com/docs/authentication/api-keys: AIza, 35 characters
    return "AIza" + _chars(rng, URLSAFE, 35)


def _huggingface(rng: random.Random) -> str:
    # https://huggingface.co/docs/hub/security-tokens: hf_, 34 letters
    return "hf_" + _chars(rng, string.ascii_letters, 34)


def _huggingface_org(rng: random.Random) -> str:
    return "api_org_" + _chars(rng, string.ascii_letters, 34)


def _sendgrid(rng: random.Random) -> str:
    # https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys: SG.<22>.<43>
    return f"SG.{_chars(rng, URLSAFE, 22)}.{_chars(rng, URLSAFE, 43)}"


def _npm(rng: random.Random) -> str:
    # https://github.blog/changelog/2021-09-23-npm-has-a-new-access-token-format/: npm_, 36 characters
    return "npm_" + _chars(rng, ALNUM, 36)


def _pypi(rng: random.Random) -> str:
    # https://pypi.org/help/#apitoken: pypi-, a macaroon in base64url starting AgEIcHlwaS5vcmc
    return "pypi-AgEIcHlwaS5vcmc" + _chars(rng, URLSAFE, rng.randint(150, 190))


def _vault_service(rng: random.Random) -> str:
    # https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes: hvs. (service), hvb. (batch)
    return "hvs.CAESI" + _chars(rng, URLSAFE, rng.randint(86, 100))


def _vault_batch(rng: random.Random) -> str:
    return "hvb.AAAAAQ" + _chars(rng, URLSAFE, rng.randint(130, 160))


def _sentry_org(rng: random.Random) -> str:
    # https://docs.sentry.io/account/auth-tokens/: org tokens sntrys_<base64 JSON>_<43>
    claims = json.dumps({"iat": rng.randint(1_700_000_000, 1_800_000_000), "url": "https://sentry.io", "org": "acme"})
    return "sntrys_" + base64.b64encode(claims.encode()).decode().rstrip("=") + "_" + _chars(rng, URLSAFE, 43)


def _sentry_user(rng: random.Random) -> str:
    # Same source: user tokens sntryu_, 64 hex
    return "sntryu_" + _chars(rng, HEX, 64)


def _mailgun(rng: random.Random) -> str:
    # https://documentation.mailgun.com/docs/mailgun/api-reference/authentication: key-<32 hex>, or hex-hex-hex
    if rng.random() < 0.5:
        return "key-" + _chars(rng, HEX, 32)
    return f"{_chars(rng, HEX, 32)}-{_chars(rng, HEX, 8)}-{_chars(rng, HEX, 8)}"


def _azure_ad_client_secret(rng: random.Random) -> str:
    # https://learn.microsoft.com/en-us/entra/identity-platform/how-to-add-credentials: 40 characters, "Q~" at 4
    return f"{_chars(rng, ALNUM, 3)}{rng.choice(string.digits)}Q~{_chars(rng, ALNUM + '_~.-', 34)}"


def _azure_storage_key(rng: random.Random) -> str:
    # https://learn.microsoft.com/en-us/azure/storage/common/storage-account-keys-manage: 64 bytes in base64
    return _b64(rng, 86) + "=="


def _azure_sas_signature(rng: random.Random) -> str:
    # https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas: sig=, URL-encoded base64
    raw = _b64(rng, 43) + "="
    return raw.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")


def _discord_webhook_token(rng: random.Random) -> str:
    # https://discord.com/developers/docs/resources/webhook: /api/webhooks/<id>/<68 characters>
    return _chars(rng, URLSAFE, 68)


def _discord_bot(rng: random.Random) -> str:
    # https://discord.com/developers/docs/reference#authentication: base64(id).<6>.<27+>
    user_id = str(rng.randint(10**17, 10**18))
    encoded_id = base64.b64encode(user_id.encode()).decode().rstrip("=")
    return f"{encoded_id}.{_chars(rng, URLSAFE, 6)}.{_chars(rng, URLSAFE, 38)}"


def _datadog_api(rng: random.Random) -> str:
    # https://docs.datadoghq.com/account_management/api-app-keys/: API key 32 hex, application key 40 hex
    return _chars(rng, HEX, 32)


def _datadog_app(rng: random.Random) -> str:
    return _chars(rng, HEX, 40)


def _cloudflare_token(rng: random.Random) -> str:
    # https://developers.cloudflare.com/fundamentals/api/get-started/create-token/: 40 characters
    return _chars(rng, URLSAFE, 40)


def _cloudflare_global(rng: random.Random) -> str:
    # https://developers.cloudflare.com/fundamentals/api/get-started/keys/: global API key, 37 hex
    return _chars(rng, HEX, 37)


def _twilio_auth_token(rng: random.Random) -> str:
    # https://www.twilio.com/docs/iam/api/authtoken: 32 hex (the account SID beside it, AC…, is no secret)
    return _chars(rng, HEX, 32)


def _twilio_api_key_secret(rng: random.Random) -> str:
    # https://www.twilio.com/docs/iam/api-keys: the API key's secret, 32 characters
    return _chars(rng, ALNUM, 32)


def _digitalocean(rng: random.Random) -> str:
    # https://docs.digitalocean.com/reference/api/create-personal-access-token/: dop_v1_, 64 hex
    return "dop_v1_" + _chars(rng, HEX, 64)


def _shopify(rng: random.Random) -> str:
    # https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens: shpat_, 32 hex
    return "shpat_" + _chars(rng, HEX, 32)


def _doppler(rng: random.Random) -> str:
    # https://docs.doppler.com/reference/auth-token-formats: dp.pt. (personal), dp.st. (service), 43 characters
    return rng.choice(("dp.pt.", "dp.st.")) + _chars(rng, ALNUM, 43)


def _linear(rng: random.Random) -> str:
    # https://linear.app/developers/graphql#personal-api-keys: lin_api_, 40 characters
    return "lin_api_" + _chars(rng, ALNUM, 40)


def _notion(rng: random.Random) -> str:
    # https://developers.notion.com/docs/authorization: secret_<43> (older), ntn_<11 digits><35> (since 2024)
    if rng.random() < 0.5:
        return "secret_" + _chars(rng, ALNUM, 43)
    return "ntn_" + _chars(rng, string.digits, 11) + _chars(rng, ALNUM, 35)


def _grafana_service_account(rng: random.Random) -> str:
    # https://grafana.com/docs/grafana/latest/administration/service-accounts/: glsa_<32>_<8 hex>
    return f"glsa_{_chars(rng, ALNUM, 32)}_{_chars(rng, HEX, 8)}"


def _grafana_cloud(rng: random.Random) -> str:
    # https://grafana.com/docs/grafana-cloud/security-and-account-management/authentication-and-permissions/access-policies/
    claims = json.dumps({"o": str(rng.randint(10**5, 10**6)), "n": "agent-ci", "k": _chars(rng, ALNUM, 24)})
    return "glc_" + base64.b64encode(claims.encode()).decode().rstrip("=")


def _postman(rng: random.Random) -> str:
    # https://learning.postman.com/docs/developer/postman-api/authentication/: PMAK-<24 hex>-<34 hex>
    return f"PMAK-{_chars(rng, HEX, 24)}-{_chars(rng, HEX, 34)}"


def _planetscale(rng: random.Random) -> str:
    # https://planetscale.com/docs/concepts/service-tokens: pscale_tkn_ / pscale_pw_ / pscale_oauth_, 43 characters
    return rng.choice(("pscale_pw_", "pscale_tkn_", "pscale_oauth_")) + _chars(rng, URLSAFE, 43)


def _pulumi(rng: random.Random) -> str:
    # https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/: pul-, 40 hex
    return "pul-" + _chars(rng, HEX, 40)


def _jwt(rng: random.Random) -> str:
    # https://datatracker.ietf.org/doc/html/rfc7519: base64url(header).base64url(claims).base64url(signature)
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"sub": str(rng.randint(10**6, 10**7)), "name": "ci-bot", "iat": rng.randint(1_700_000_000, 1_800_000_000)}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{_chars(rng, URLSAFE, 43)}"


def _django_secret_key(rng: random.Random) -> str:
    # https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key: startproject writes django-insecure-<50>
    return "django-insecure-" + _chars(rng, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)


def _generated_secret(rng: random.Random) -> str:
    # `openssl rand -hex 32` / `-base64 32`, the usual JWT_SECRET or SESSION_SECRET
    return _chars(rng, HEX, 64) if rng.random() < 0.5 else _b64(rng, 43) + "="


_WORDS = ("summer", "dragon", "monkey", "falcon", "hunter", "orange", "tiger", "winter", "rocket", "coffee", "acme")
_ENVS = ("prod", "staging", "dev", "admin", "db", "root")


def _human_password(rng: random.Random) -> str:
    # Passwords people choose: a word or two, digits, a symbol, perhaps leet (Tr0ub4dor&3!, hunter2-prod-2024).
    word = rng.choice(_WORDS)
    shapes = (
        lambda: f"{word.capitalize()}{rng.randint(2015, 2026)}{rng.choice('!#$%&*?')}",
        lambda: f"{word}{rng.randint(1, 99)}-{rng.choice(_ENVS)}-{rng.randint(2019, 2026)}",
        lambda: (
            word.replace("o", "0").replace("a", "4").replace("e", "3").capitalize()
            + rng.choice("&@!$")
            + str(rng.randint(1, 9))
            + rng.choice("!?#")
        ),
        lambda: f"{rng.choice(_ENVS).capitalize()}_{word}{rng.randint(100, 999)}{rng.choice('!$')}",
        lambda: "-".join(rng.sample(_WORDS, 3)) + "-" + str(rng.randint(1, 99)),
    )
    return rng.choice(shapes)()


def _random_password(rng: random.Random) -> str:
    # A password manager's: 16-24 characters of letters, digits and the symbols a URL's password may hold unencoded
    # (it is put in URLs below) that no shell or YAML reads specially
    return _chars(rng, ALNUM + "+-.=^_~", rng.randint(16, 24))


class Vendor(NamedTuple):
    """A kind of secret, the names it is usually assigned to, and its generator."""

    name: str
    names: tuple[str, ...]  # environment variable names; lowered/camel-cased where a format wants it
    make: Callable[[random.Random], str]


VENDORS: tuple[Vendor, ...] = (
    Vendor("openai project", ("OPENAI_API_KEY",), _openai_project),
    Vendor("openai service account", ("OPENAI_API_KEY", "OPENAI_KEY"), _openai_service_account),
    Vendor("openai admin", ("OPENAI_ADMIN_KEY",), _openai_admin),
    Vendor("openai legacy", ("OPENAI_API_KEY",), _openai_legacy),
    Vendor("anthropic", ("ANTHROPIC_API_KEY",), _anthropic),
    Vendor("anthropic admin", ("ANTHROPIC_ADMIN_KEY",), _anthropic_admin),
    Vendor("aws key id", ("AWS_ACCESS_KEY_ID",), _aws_key_id),
    Vendor("aws secret key", ("AWS_SECRET_ACCESS_KEY",), _aws_secret_key),
    Vendor("aws session token", ("AWS_SESSION_TOKEN",), _aws_session_token),
    Vendor("github classic", ("GITHUB_TOKEN", "GH_TOKEN"), _github_classic),
    Vendor("github fine-grained", ("GITHUB_TOKEN", "GITHUB_PAT"), _github_fine_grained),
    Vendor("github app", ("GITHUB_TOKEN", "GH_APP_TOKEN"), _github_app),
    Vendor("gitlab", ("GITLAB_TOKEN", "CI_JOB_TOKEN_OVERRIDE"), _gitlab),
    Vendor("slack bot", ("SLACK_BOT_TOKEN",), _slack_bot),
    Vendor("slack user", ("SLACK_USER_TOKEN",), _slack_user),
    Vendor("stripe live", ("STRIPE_SECRET_KEY", "STRIPE_API_KEY"), _stripe_live),
    Vendor("stripe test", ("STRIPE_SECRET_KEY", "STRIPE_TEST_KEY"), _stripe_test),
    Vendor("stripe restricted", ("STRIPE_RESTRICTED_KEY",), _stripe_restricted),
    Vendor("stripe webhook", ("STRIPE_WEBHOOK_SECRET",), _stripe_webhook),
    Vendor("google api key", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), _google_api_key),
    Vendor("hugging face", ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"), _huggingface),
    Vendor("hugging face org", ("HF_ORG_TOKEN",), _huggingface_org),
    Vendor("sendgrid", ("SENDGRID_API_KEY",), _sendgrid),
    Vendor("npm", ("NPM_TOKEN",), _npm),
    Vendor("pypi", ("PYPI_TOKEN", "TWINE_PASSWORD"), _pypi),
    Vendor("vault service", ("VAULT_TOKEN",), _vault_service),
    Vendor("vault batch", ("VAULT_TOKEN",), _vault_batch),
    Vendor("sentry org token", ("SENTRY_AUTH_TOKEN",), _sentry_org),
    Vendor("sentry user token", ("SENTRY_AUTH_TOKEN",), _sentry_user),
    Vendor("mailgun", ("MAILGUN_API_KEY",), _mailgun),
    Vendor("azure ad client secret", ("AZURE_CLIENT_SECRET",), _azure_ad_client_secret),
    Vendor("azure storage key", ("AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"), _azure_storage_key),
    Vendor("discord bot", ("DISCORD_BOT_TOKEN",), _discord_bot),
    Vendor("datadog api key", ("DD_API_KEY", "DATADOG_API_KEY"), _datadog_api),
    Vendor("datadog app key", ("DD_APP_KEY", "DATADOG_APP_KEY"), _datadog_app),
    Vendor("cloudflare token", ("CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"), _cloudflare_token),
    Vendor("cloudflare global key", ("CLOUDFLARE_API_KEY", "CF_API_KEY"), _cloudflare_global),
    Vendor("twilio auth token", ("TWILIO_AUTH_TOKEN",), _twilio_auth_token),
    Vendor("twilio api secret", ("TWILIO_API_SECRET",), _twilio_api_key_secret),
    Vendor("digitalocean", ("DIGITALOCEAN_TOKEN", "DO_TOKEN"), _digitalocean),
    Vendor("shopify", ("SHOPIFY_ACCESS_TOKEN",), _shopify),
    Vendor("doppler", ("DOPPLER_TOKEN",), _doppler),
    Vendor("linear", ("LINEAR_API_KEY",), _linear),
    Vendor("notion", ("NOTION_TOKEN", "NOTION_API_KEY"), _notion),
    Vendor("grafana service account", ("GRAFANA_TOKEN", "GRAFANA_SA_TOKEN"), _grafana_service_account),
    Vendor("grafana cloud", ("GRAFANA_CLOUD_TOKEN",), _grafana_cloud),
    Vendor("postman", ("POSTMAN_API_KEY",), _postman),
    Vendor("planetscale", ("PLANETSCALE_TOKEN", "DATABASE_PASSWORD"), _planetscale),
    Vendor("pulumi", ("PULUMI_ACCESS_TOKEN",), _pulumi),
    Vendor("jwt", ("AUTH_TOKEN", "ACCESS_TOKEN"), _jwt),
    Vendor("django secret key", ("SECRET_KEY", "DJANGO_SECRET_KEY"), _django_secret_key),
    Vendor("generated secret", ("JWT_SECRET", "SESSION_SECRET", "APP_SECRET"), _generated_secret),
    Vendor("human password", ("DB_PASSWORD", "POSTGRES_PASSWORD", "ADMIN_PASSWORD", "SMTP_PASSWORD"), _human_password),
    Vendor(
        "random password", ("DB_PASSWORD", "REDIS_PASSWORD", "MYSQL_ROOT_PASSWORD", "RABBITMQ_PASS"), _random_password
    ),
)
VENDOR = {vendor.name: vendor for vendor in VENDORS}

# Lines that hold no secret, around the ones that do.
_PLAIN_SETTINGS = (
    ("DEBUG", "false"),
    ("PORT", "8080"),
    ("LOG_LEVEL", "info"),
    ("DATABASE_HOST", "db.internal"),
    ("REGION", "eu-west-1"),
    ("NODE_ENV", "production"),
    ("WORKERS", "4"),
    ("FEATURE_FLAGS", "search,compaction"),
    ("TZ", "UTC"),
)


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(part.capitalize() for part in rest)


# --- the contexts ---------------------------------------------------------------------------------------------
# A generic context renders a few (name, secret) assignments in its format; a specific one draws its own secrets.
Assignment = tuple[str, str]  # (variable name, secret)
Renderer = Callable[[random.Random, list[Assignment]], str]


def _plain(rng: random.Random, count: int = 2) -> list[tuple[str, str]]:
    return rng.sample(_PLAIN_SETTINGS, count)


def _mixed(rng: random.Random, assignments: list[Assignment]) -> list[tuple[str, str]]:
    lines = [*assignments, *_plain(rng)]
    rng.shuffle(lines)
    return lines


def _dotenv(rng: random.Random, assignments: list[Assignment]) -> str:
    return "".join(f"{name}={value}\n" for name, value in _mixed(rng, assignments))


def _dotenv_quoted(rng: random.Random, assignments: list[Assignment]) -> str:
    body = "".join(f'{name}="{value}"\n' for name, value in _mixed(rng, assignments))
    return f"$ cat .env.production\n# generated by setup.sh\n{body}"


def _export(rng: random.Random, assignments: list[Assignment]) -> str:
    return "".join(f"export {name}={value}\n" for name, value in _mixed(rng, assignments)) + "python manage.py check\n"


def _export_quoted(rng: random.Random, assignments: list[Assignment]) -> str:
    return "".join(f"export {name}='{value}'\n" for name, value in _mixed(rng, assignments))


def _env_output(rng: random.Random, assignments: list[Assignment]) -> str:
    lines = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/home/dev"),
        ("SHELL", "/bin/bash"),
        *_mixed(rng, assignments),
    ]
    rng.shuffle(lines)
    return "$ env | sort\n" + "".join(f"{name}={value}\n" for name, value in sorted(lines))


def _compose_map(rng: random.Random, assignments: list[Assignment]) -> str:
    env = "".join(f"      {name}: {value}\n" for name, value in _mixed(rng, assignments))
    return f'services:\n  app:\n    image: "acme/app:1.4.2"\n    environment:\n{env}    ports:\n      - "8080:8080"\n'


def _compose_list(rng: random.Random, assignments: list[Assignment]) -> str:
    env = "".join(f"      - {name}={value}\n" for name, value in _mixed(rng, assignments))
    return f"version: '3.8'\nservices:\n  worker:\n    build: .\n    environment:\n{env}"


def _yaml_config(rng: random.Random, assignments: list[Assignment]) -> str:
    body = "".join(f"  {name.lower()}: {value}\n" for name, value in _mixed(rng, assignments))
    return f"# config/settings.yaml\napp:\n{body}"


def _yaml_quoted(rng: random.Random, assignments: list[Assignment]) -> str:
    body = "".join(f'  {name.lower()}: "{value}"\n' for name, value in _mixed(rng, assignments))
    return f"credentials:\n{body}"


def _json_config(rng: random.Random, assignments: list[Assignment]) -> str:
    return json.dumps({_camel(name): value for name, value in _mixed(rng, assignments)}, indent=2)


def _json_snake(rng: random.Random, assignments: list[Assignment]) -> str:
    return json.dumps({"service": {name.lower(): value for name, value in _mixed(rng, assignments)}}, indent=4)


def _toml(rng: random.Random, assignments: list[Assignment]) -> str:
    return "[service]\n" + "".join(f'{name.lower()} = "{value}"\n' for name, value in _mixed(rng, assignments))


def _ini(rng: random.Random, assignments: list[Assignment]) -> str:
    return "[default]\n" + "".join(f"{name.lower()} = {value}\n" for name, value in _mixed(rng, assignments))


def _properties(rng: random.Random, assignments: list[Assignment]) -> str:
    return "# application.properties\n" + "".join(
        f"app.{name.lower().replace('_', '.')}={value}\n" for name, value in _mixed(rng, assignments)
    )


def _hcl(rng: random.Random, assignments: list[Assignment]) -> str:
    body = "".join(f'  {name.lower()} = "{value}"\n' for name, value in _mixed(rng, assignments))
    return f'provider "acme" {{\n{body}}}\n\nresource "acme_app" "web" {{\n  name = "web"\n}}\n'


def _python_kwargs(rng: random.Random, assignments: list[Assignment]) -> str:
    args = ", ".join(f'{name.lower()}="{value}"' for name, value in assignments)
    return f"import acme\n\nclient = acme.Client({args}, timeout=30)\nprint(client.ping())\n"


def _js_object(rng: random.Random, assignments: list[Assignment]) -> str:
    fields = "".join(f"  {_camel(name)}: '{value}',\n" for name, value in assignments)
    return f"const client = new Client({{\n{fields}  retries: 3,\n}});\n"


def _cli_flags(rng: random.Random, assignments: list[Assignment]) -> str:
    flags = " ".join(f"--{name.lower().replace('_', '-')} {value}" for name, value in assignments)
    return f"$ ./deploy --region eu-west-1 {flags} --dry-run\nDeploy plan: 3 changes\n"


def _cli_flags_equals(rng: random.Random, assignments: list[Assignment]) -> str:
    flags = " ".join(f"--{name.lower().replace('_', '-')}={value}" for name, value in assignments)
    return f"python scripts/sync.py {flags} --verbose"


def _chat(rng: random.Random, assignments: list[Assignment]) -> str:
    lines = [
        rng.choice(
            (
                "here is my key: {value}",
                "my {name} is {value} — can you check why the request fails?",
                "use this one: {value}",
                "The token is {value}, please set it in the workflow.",
                "ok, {name}={value} now, try again",
            )
        ).format(name=name, value=value)
        for name, value in assignments
    ]
    return "\n".join(lines)


def _log(rng: random.Random, assignments: list[Assignment]) -> str:
    lines = [
        f"2026-03-0{rng.randint(1, 9)}T10:{rng.randint(10, 59)}:02Z "
        + rng.choice(
            (
                "DEBUG settings loaded: {name}={value}",
                "INFO connecting with {name_lower}={value}",
                "WARN retrying request, headers={{'Authorization': 'Bearer {value}'}}",
                "ERROR auth failed for token {value}",
            )
        ).format(name=name, name_lower=name.lower(), value=value)
        for name, value in assignments
    ]
    return "\n".join(["2026-03-01T10:00:00Z INFO worker started pid=4121", *lines])


def _tool_call_bash(rng: random.Random, assignments: list[Assignment]) -> str:
    exports = " && ".join(f"export {name}={value}" for name, value in assignments)
    return json.dumps({"command": f"{exports} && npm run deploy", "description": "Deploy with the new credentials"})


def _tool_call_write(rng: random.Random, assignments: list[Assignment]) -> str:
    content = "".join(f"{name}={value}\n" for name, value in _mixed(rng, assignments))
    return json.dumps({"file_path": "/home/dev/app/.env", "content": content})


GENERIC_CONTEXTS: dict[str, tuple[Renderer, ...]] = {
    ".env": (_dotenv, _dotenv_quoted),
    "export": (_export, _export_quoted),
    "env output": (_env_output,),
    "compose/yaml": (_compose_map, _yaml_config, _compose_list, _yaml_quoted),
    "json config": (_json_config, _json_snake),
    "toml/ini/properties/hcl": (_toml, _ini, _hcl, _properties),
    "code kwargs": (_python_kwargs, _js_object),
    "cli flags": (_cli_flags, _cli_flags_equals),
    "chat": (_chat,),
    "logs": (_log,),
    "tool-call arguments": (_tool_call_bash, _tool_call_write),
}


def _variants(variants: tuple[Renderer, ...], half: str) -> tuple[Renderer, ...]:
    """The half's templates: the even ones for tune, the odd ones for report (all when there is one)."""
    if len(variants) == 1:
        return variants
    return variants[0::2] if half == "tune" else variants[1::2]


def _generic_samples(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for context, variants in GENERIC_CONTEXTS.items():
        vendors = list(VENDORS)
        rng.shuffle(vendors)
        # Every vendor once in every generic context, two to four to a text.
        while vendors:
            take = rng.randint(2, 4)
            group, vendors = vendors[:take], vendors[take:]
            assignments = list(zip(_distinct_names(rng, group), (vendor.make(rng) for vendor in group), strict=True))
            render = rng.choice(_variants(variants, half))
            text = render(rng, assignments)
            samples.append(Sample(context, text, _found(text, group, assignments)))
    return samples


def _distinct_names(rng: random.Random, group: list[Vendor]) -> list[str]:
    """A name per vendor, none twice: a JSON object or a mapping keeps only the last value of a name."""
    names: list[str] = []
    for vendor in group:
        name = rng.choice(vendor.names)
        suffix = 2
        while name in names:
            name, suffix = f"{rng.choice(vendor.names)}_{suffix}", suffix + 1
        names.append(name)
    return names


def _found(text: str, group: list[Vendor], assignments: list[Assignment]) -> tuple[tuple[str, str], ...]:
    """The recorded secrets as the text holds them (a JSON text escapes what it must)."""
    secrets = []
    for vendor, (_, value) in zip(group, assignments, strict=True):
        held = value if value in text else json.dumps(value)[1:-1]
        secrets.append((vendor.name, held))
    return tuple(secrets)


# --- the specific contexts ------------------------------------------------------------------------------------


def _aws_files(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(6):
        key_id, secret, temporary_id, token = (
            _aws_key_id(rng),
            _aws_secret_key(rng),
            _aws_temporary_key_id(rng),
            _aws_session_token(rng),
        )
        secret2 = _aws_secret_key(rng)
        variants = (
            f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n\n"
            f"[ci]\naws_access_key_id={temporary_id}\naws_secret_access_key={secret2}\naws_session_token={token}\n",
            f"[profile-deploy]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\nregion = us-east-1\n"
            f"[assumed]\naws_access_key_id = {temporary_id}\naws_secret_access_key = {secret2}\n"
            f"aws_session_token = {token}\n",
        )
        text = rng.choice(_variants(variants, half))
        samples.append(
            Sample(
                "~/.aws/credentials",
                text,
                (
                    ("aws key id", key_id),
                    ("aws secret key", secret),
                    ("aws key id", temporary_id),
                    ("aws secret key", secret2),
                    ("aws session token", token),
                ),
            )
        )
        temporary_id, secret, token = _aws_temporary_key_id(rng), _aws_secret_key(rng), _aws_session_token(rng)
        sts = {
            "Credentials": {
                "AccessKeyId": temporary_id,
                "SecretAccessKey": secret,
                "SessionToken": token,
                "Expiration": "2026-03-02T11:22:33+00:00",
            },
            "AssumedRoleUser": {"Arn": "arn:aws:sts::123456789012:assumed-role/deploy/ci"},
        }
        key_id, secret2 = _aws_key_id(rng), _aws_secret_key(rng)
        iam = {
            "AccessKey": {
                "UserName": "ci-bot",
                "AccessKeyId": key_id,
                "Status": "Active",
                "SecretAccessKey": secret2,
                "CreateDate": "2026-03-01T09:00:00+00:00",
            }
        }
        text = (
            f"$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deploy --role-session-name ci\n"
            f"{json.dumps(sts, indent=4)}\n$ aws iam create-access-key --user-name ci-bot\n{json.dumps(iam, indent=4)}"
        )
        samples.append(
            Sample(
                "aws cli json",
                text,
                (
                    ("aws key id", temporary_id),
                    ("aws secret key", secret),
                    ("aws session token", token),
                    ("aws key id", key_id),
                    ("aws secret key", secret2),
                ),
            )
        )
    return samples


_API_HOSTS = ("api.acme.dev", "api.example.com", "internal.tools.acme.io")


def _curl(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for vendor in VENDORS:
        if vendor.name in ("aws key id", "aws session token", "human password", "random password"):
            continue
        secret = vendor.make(rng)
        host = rng.choice(_API_HOSTS)
        variants = (
            f'curl -sS -H "Authorization: Bearer {secret}" https://{host}/v1/items',
            f"curl -X POST https://{host}/v2/jobs -H 'Content-Type: application/json' -H 'X-API-Key: {secret}' "
            f'-d \'{{"name": "nightly"}}\'',
            f'curl "https://{host}/v1/search?q=status&api_key={secret}"',
            f"curl --header 'Authorization: Token {secret}' https://{host}/me",
        )
        text = rng.choice(_variants(variants, half))
        samples.append(Sample("curl", text, ((vendor.name, secret),)))
    for _ in range(8):
        password = rng.choice((_human_password, _random_password))(rng)
        user = rng.choice(("admin", "deploy", "api"))
        variants = (
            f"curl -u {user}:{password} https://{rng.choice(_API_HOSTS)}/admin/stats",
            f'curl --user "{user}:{password}" -X DELETE https://{rng.choice(_API_HOSTS)}/cache',
        )
        samples.append(Sample("curl", rng.choice(_variants(variants, half)), (("curl -u password", password),)))
    mailgun, stripe = _mailgun(rng), _stripe_test(rng)
    samples.append(
        Sample(
            "curl",
            f"curl -s --user 'api:{mailgun}' https://api.mailgun.net/v3/mg.acme.dev/messages -F to=ops@acme.dev",
            (("mailgun", mailgun),),
        )
    )
    samples.append(Sample("curl", f"curl https://api.stripe.com/v1/charges -u {stripe}:", (("stripe test", stripe),)))
    return samples


def _git_remotes(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(8):
        github, gitlab, app = _github_classic(rng), _gitlab(rng), _github_app(rng)
        fine = _github_fine_grained(rng)
        variants = (
            f"$ git remote -v\norigin\thttps://x-access-token:{app}@github.com/acme/app.git (fetch)\n"
            f"origin\thttps://x-access-token:{app}@github.com/acme/app.git (push)\n"
            f"$ git clone https://oauth2:{gitlab}@gitlab.com/acme/infra.git\n"
            f"git push https://dev:{github}@github.com/acme/tools.git main\n"
            f"url = https://{fine}@github.com/acme/site.git",
            f'[remote "origin"]\n\turl = https://ci:{github}@github.com/acme/app.git\n'
            f"\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            f"git remote set-url upstream https://gitlab-ci-token:{gitlab}@gitlab.com/acme/lib.git\n"
            f"GIT_URL=https://x-access-token:{app}@github.com/acme/app.git\n"
            f"git clone https://{fine}@github.com/acme/site.git",
        )
        samples.append(
            Sample(
                "git remotes",
                rng.choice(_variants(variants, half)),
                (("github app", app), ("gitlab", gitlab), ("github classic", github), ("github fine-grained", fine)),
            )
        )
    return samples


def _database_clients(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(10):
        pw = [rng.choice((_human_password, _random_password))(rng) for _ in range(7)]
        variants = (
            f'psql "postgres://app:{pw[0]}@db.internal:5432/app?sslmode=require" -c "select 1"\n'
            f"mysql -u root -p{pw[1]} -h 127.0.0.1 shop\n"
            f"mysqldump --user=backup --password={pw[2]} shop > shop.sql\n"
            f"sshpass -p '{pw[3]}' ssh deploy@10.0.3.4 uptime\n"
            f"redis-cli -h cache.internal -a {pw[4]} ping\n"
            f"REDIS_URL=redis://:{pw[5]}@cache.internal:6379/0\n"
            f'mongosh "mongodb+srv://admin:{pw[6]}@cluster0.abcde.mongodb.net/prod"',
            f"$ PGPASSWORD='{pw[0]}' psql -h db.internal -U app app\n"
            f"mysql --host=db --user=app --password='{pw[1]}' app -e 'show tables'\n"
            f"pg_dump --dbname=postgresql://backup:{pw[2]}@db.internal/app -Fc -f app.dump\n"
            f'sshpass -p "{pw[3]}" scp dump.sql deploy@10.0.3.4:/tmp/\n'
            f"redis-cli -u redis://default:{pw[4]}@cache.internal:6379 info\n"
            f'celery -A app worker -b "redis://:{pw[5]}@cache.internal:6379/1"\n'
            f"docker run -e MYSQL_ROOT_PASSWORD={pw[6]} mysql:8",
        )
        samples.append(
            Sample("database clients", rng.choice(_variants(variants, half)), tuple(("password", p) for p in pw))
        )
    return samples


def _url_passwords(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(8):
        word = rng.choice(_WORDS).capitalize()
        pw = [f"{word}{rng.randint(10, 99)}!{rng.choice(_ENVS)}", f"p4$$w0rd-{rng.choice(_WORDS)}{rng.randint(1, 99)}"]
        variants = (
            f"DATABASE_URL=postgres://admin:{pw[0]}@db.internal:5432/prod\n"
            f"BROKER_URL=amqp://guest:{pw[1]}@rabbit.internal:5672//",
            f'engine = create_engine("postgresql+psycopg://app:{pw[0]}@localhost/app")\n'
            f"spring.rabbitmq.addresses=amqps://svc:{pw[1]}@mq.acme.dev:5671",
        )
        samples.append(
            Sample(
                "url passwords with ! or $", rng.choice(_variants(variants, half)), tuple(("password", p) for p in pw)
            )
        )
    return samples


def _npmrc(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(6):
        token = _npm(rng)
        password = _random_password(rng)
        auth = base64.b64encode(f"deploy:{password}".encode()).decode()
        encoded = base64.b64encode(password.encode()).decode()
        variants = (
            f"//registry.npmjs.org/:_authToken={token}\n"
            f"//npm.acme.dev/:_auth={auth}\nalways-auth=true\n"
            f"//npm.acme.dev/:_password={encoded}\n",
            f"$ cat ~/.npmrc\nregistry=https://registry.npmjs.org/\n_authToken={token}\n_auth = {auth}\n"
            f'//nexus.acme.dev/repository/npm/:_password="{encoded}"\n',
        )
        samples.append(
            Sample(
                ".npmrc",
                rng.choice(_variants(variants, half)),
                (("npm", token), ("npm _auth", auth), ("npm _password", encoded)),
            )
        )
    return samples


def _netrc_pypirc(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(6):
        heroku, password, pypi, test_pw = (
            _generated_secret(rng),
            _human_password(rng),
            _pypi(rng),
            _random_password(rng),
        )
        variants = (
            f"$ cat ~/.netrc\nmachine api.heroku.com\n  login dev@acme.dev\n  password {heroku}\n"
            f"machine git.acme.dev login deploy password {password}\n",
            f"machine api.heroku.com login dev@acme.dev password {heroku}\n"
            f"machine ftp.acme.dev\nlogin backup\npassword {password}\n",
        )
        samples.append(
            Sample(
                ".netrc",
                rng.choice(_variants(variants, half)),
                (("netrc password", heroku), ("password", password)),
            )
        )
        text = (
            "[distutils]\nindex-servers =\n    pypi\n    internal\n\n"
            f"[pypi]\nusername = __token__\npassword = {pypi}\n\n"
            f"[internal]\nrepository = https://pypi.acme.dev/simple\nusername = deploy\npassword = {test_pw}\n"
        )
        samples.append(Sample(".pypirc", text, (("pypi", pypi), ("password", test_pw))))
    return samples


def _kubectl_secrets(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(8):
        values = [_human_password(rng), _random_password(rng), _generated_secret(rng), _stripe_live(rng)]
        encoded = [base64.b64encode(v.encode()).decode() for v in values[:3]]
        string_value = _github_classic(rng) if rng.random() < 0.5 else _random_password(rng)
        text = (
            "$ kubectl get secret app-secrets -o yaml\napiVersion: v1\ndata:\n"
            f"  DB_PASSWORD: {encoded[0]}\n  REDIS_PASSWORD: {encoded[1]}\n  session-secret: {encoded[2]}\n"
            "kind: Secret\nmetadata:\n  name: app-secrets\n  namespace: prod\ntype: Opaque\n"
        )
        secrets = [("kubernetes data", e) for e in encoded]
        if half == "report" or rng.random() < 0.5:
            text += (
                "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n"
                f"  stripe-key: {values[3]}\n  token: {string_value}\n"
            )
            secrets += [("kubernetes stringData", values[3]), ("kubernetes stringData", string_value)]
        samples.append(Sample("kubectl secret yaml", text, tuple(secrets)))
    return samples


def _specific_logs(rng: random.Random, half: str) -> list[Sample]:
    samples = []
    for _ in range(6):
        webhook, account_key, sig = _discord_webhook_token(rng), _azure_storage_key(rng), _azure_sas_signature(rng)
        dsn_key, slack_path = _chars(rng, HEX, 32), f"T{_chars(rng, BASE32_UPPER, 10)}/B{_chars(rng, BASE32_UPPER, 10)}"
        slack_secret = _chars(rng, ALNUM, 24)
        text = (
            f"2026-03-01 12:00:01 INFO notify via https://discord.com/api/webhooks/{rng.randint(10**17, 10**18)}/"
            f"{webhook}\n"
            f"2026-03-01 12:00:02 DEBUG AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
            f"AccountName=acmelogs;AccountKey={account_key};EndpointSuffix=core.windows.net\n"
            f"2026-03-01 12:00:03 INFO upload https://acmelogs.blob.core.windows.net/backups/db.tar.gz?"
            f"sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2026-04-01T00:00:00Z&st=2026-03-01T00:00:00Z&spr=https&sig={sig}\n"
            f"2026-03-01 12:00:04 INFO sentry_sdk.init(dsn='https://{dsn_key}@o{rng.randint(10**5, 10**6)}"
            f".ingest.sentry.io/{rng.randint(10**6, 10**7)}')\n"
            f"2026-03-01 12:00:05 INFO posting to https://hooks.slack.com/services/{slack_path}/{slack_secret}\n"
        )
        samples.append(
            Sample(
                "logs",
                text,
                (
                    ("discord webhook", webhook),
                    ("azure storage key", account_key),
                    ("azure sas signature", sig),
                    ("sentry dsn key", dsn_key),
                    ("slack webhook", slack_secret),
                ),
            )
        )
    return samples


def _pem_body(rng: random.Random, lead: str, lines: int, newline: str) -> str:
    material = lead + _b64(rng, 64 * lines - len(lead))
    return newline.join(material[i : i + 64] for i in range(0, len(material), 64))


def _private_keys(rng: random.Random, half: str) -> list[Sample]:
    # RFC 7468 (PEM), https://man.openbsd.org/ssh-keygen (OpenSSH's own format), RFC 5958 (encrypted PKCS#8)
    samples = []
    kinds = (
        ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", "rsa key"),
        (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            "openssh key",
        ),
        ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", "encrypted pkcs8 key"),
        ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", "pkcs8 key"),
        ("EC PRIVATE KEY", "MHcCAQEEI", "ec key"),
    )
    for header, lead, vendor in kinds:
        body = _pem_body(rng, lead, rng.randint(5, 12), "\n")
        text = f"$ cat ~/.ssh/id_deploy\n-----BEGIN {header}-----\n{body}\n-----END {header}-----\n"
        samples.append(Sample("private keys", text, ((vendor, body),)))
        body = _pem_body(rng, lead, rng.randint(5, 12), "\\n")
        variants = (
            f'{{"type": "service_account", "project_id": "acme-prod", "private_key_id": "{_chars(rng, HEX, 40)}", '
            f'"private_key": "-----BEGIN {header}-----\\n{body}\\n-----END {header}-----\\n", '
            f'"client_email": "ci@acme-prod.iam.gserviceaccount.com"}}',
            f'{{"command": "printf \'-----BEGIN {header}-----\\n{body}\\n-----END {header}-----\\n\' > key.pem"}}',
        )
        samples.append(Sample("private keys", rng.choice(_variants(variants, half)), ((vendor, body),)))
    return samples


SPECIFIC_CONTEXTS: tuple[Callable[[random.Random, str], list[Sample]], ...] = (
    _aws_files,
    _curl,
    _git_remotes,
    _database_clients,
    _url_passwords,
    _npmrc,
    _netrc_pypirc,
    _kubectl_secrets,
    _specific_logs,
    _private_keys,
)


def own_corpus(half: str) -> list[Sample]:
    """The half's samples, the same on every run."""
    rng = random.Random(SEEDS[half])
    samples = _generic_samples(rng, half)
    for build in SPECIFIC_CONTEXTS:
        samples += build(rng, half)
    return samples


# --- bait -----------------------------------------------------------------------------------------------------


def bait_texts() -> list[str]:
    """Texts that hold only what is no secret; the same on every run."""
    rng = random.Random(5199)
    sha = _chars(rng, HEX, 40)
    texts = [
        f"commit {sha}\nAuthor: Dev <dev@example.com>\n\n    Fix the retry loop",
        f"$ git log --oneline\n{_chars(rng, HEX, 7)} Fix tests\n{_chars(rng, HEX, 9)} Bump deps\n"
        f"{_chars(rng, HEX, 12)} Init",
        f"HEAD is now at {sha[:10]} Merge pull request #412 from acme/fix-cache",
        "request_id=3f2b8c1e-9d4a-4e7b-8c21-5a6f0e9d1b33 user=7c9e6679-7425-40de-944b-e07fc1f90ae7",
        f"sha256:{_chars(rng, HEX, 64)}  dist/app.tar.gz",
        f"{_chars(rng, HEX, 128)}  release.zip (sha512)",
        f'"integrity": "sha512-{_b64(rng, 86)}=="',
        f"  integrity sha512-{_b64(rng, 86)}==\n  resolved https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz",
        f"FROM python:3.12-slim@sha256:{_chars(rng, HEX, 64)}",
        f"image: ghcr.io/acme/app@sha256:{_chars(rng, HEX, 64)}",
        "/home/dev/projects/threadmem/threadmem/search/bounded.py:118: in window_around_hit",
        "Connecting to db-primary.eu-west-1.rds.amazonaws.com:5432 (10.0.3.4)",
        "See https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key and https://api.acme.dev/v1/items?page=2",
        "postgres://localhost:5432/app and redis://cache.internal:6379/0 and https://user@github.com/acme/app.git",
        base64.b64encode(
            b"The quick brown fox jumps over the lazy dog, again and again, until the dog wakes up."
        ).decode(),
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "class ThreadSearchResultSerializerFactoryProvider(AbstractBaseSerializerFactoryProvider): pass",
        "".join(rng.choice("ACGT") for _ in range(300)),
        "ASIA" + "".join(rng.choice("ACGT") for _ in range(40)),
        "ACCAGTTGACCATGGCAATTGCCAGTACGATCGATCGGCTAGCTAGGATCC",
        "ASIAPACIFICREGIONALHEADQUARTERSSINGAPORE and AKIAPOLISHNEWSAGENCYNAMES",
        "TODAYINASIAASACKOFRICEFELLOVER; WARNING: THISISNOTAKEYJUSTSHOUTINGINCAPITALS",
        f"rl:{rng.randint(1_700_000_000, 1_800_000_000)}:{_chars(rng, ALNUM, 35)}",
        f"GET rl:{rng.randint(1_700_000_000, 1_800_000_000)}:{_chars(rng, LOWER_DIGITS + '_-', 35)}",
        "tests/api/test_auth.py::test_password_reset_flow PASSED\n"
        "tests/api/test_auth.py::test_token_refresh_expired PASSED",
        "def test_secret_key_is_read_from_environment(settings):",
        'password = None\ntoken = get_token()\napi_key = os.environ["API_KEY"]\nsecret = settings.SECRET_KEY',
        "environment:\n  POSTGRES_PASSWORD: ${DB_PASSWORD}\n  API_TOKEN: ${{ secrets.API_TOKEN }}\n"
        "  JWT_SECRET: $JWT_SECRET",
        'curl -H "Authorization: Bearer <token>" https://api.acme.dev/v1/items  # token=<token>',
        "DB_PASSWORD=changeme\nADMIN_PASSWORD=xxxx\nOPENAI_API_KEY=your-api-key-here\nSTRIPE_KEY=sk_test_...",
        "api_key: YOUR_API_KEY\npassword: ********\ntoken: <redacted>\nsecret: REPLACE_ME",
        "export GITHUB_TOKEN=$(gh auth token)\nexport AWS_PROFILE=dev",
        f'cache_key = "{_chars(rng, HEX, 40)}"\nidempotency_key = "{_uuid(rng)}"',
        f'{{"next_page_token": "{_chars(rng, HEX, 32)}", "etag": "\\"{_chars(rng, HEX, 40)}\\""}}',
        f'ETag: W/"{_chars(rng, HEX, 32)}"\nX-Request-Id: {_uuid(rng)}',
        f'{{"type": "tool_use", "id": "toolu_01{_chars(rng, ALNUM, 22)}", "name": "Bash"}}',
        f'{{"id": "msg_01{_chars(rng, ALNUM, 22)}", "requestId": "req_011C{_chars(rng, ALNUM, 20)}"}}',
        f"sessionId: {_uuid(rng)}  parentUuid: {_uuid(rng)}",
        f"session_id={_chars(rng, HEX, 32)}; Path=/; HttpOnly",
        "useEffect(() => { const tokenizer = new Tokenizer(); }, []);",
        "The password field must be at least 12 characters; the token expires after 30 minutes.",
        "SECRET_KEY_FALLBACKS = []\nPASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
        f"uuid: {_uuid(rng)}\nchecksum: md5:{_chars(rng, HEX, 32)}",
    ]
    return texts


def _uuid(rng: random.Random) -> str:
    value = _chars(rng, HEX, 32)
    return f"{value[:8]}-{value[8:12]}-4{value[13:16]}-a{value[17:20]}-{value[20:]}"


def long_tool_output(size: int = 5_000_000) -> str:
    """One line of ``size`` characters: minified JSON and base64 with ``key``, ``token``, ``password=`` among it."""
    rng = random.Random(5198)
    pieces = []
    total = 0
    while total < size:
        piece = rng.choice(
            (
                lambda: json.dumps(
                    {"key": _chars(rng, HEX, 40), "value": rng.randint(0, 10**6)}, separators=(",", ":")
                ),
                lambda: _b64(rng, rng.randint(200, 2000)),
                lambda: f'"token":"{_chars(rng, LOWER_DIGITS, 8)}",',
                lambda: f"password={rng.choice(_WORDS)} ",
                lambda: "key token password= secret auth " * 3,
            )
        )()
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)[:size]
