"""Formats of no one vendor (PEM private keys, JWTs, age keys) and the vendors that fit no family above."""

from __future__ import annotations

from threadmem.lib.secrets.detect_secrets import private_key
from threadmem.lib.secrets.rule import Rule, checked, group, vendor, whole
from threadmem.lib.secrets.vendors.patterns import HEX, random_looking

RULES: tuple[Rule, ...] = (
    vendor(
        "1password token",
        "ops_eyJ",
        r"\bops_eyJ[A-Za-z0-9+/]{250,2000}={0,3}",
        "https://developer.1password.com/docs/service-accounts/",
        after=2010,
    ),
    vendor(
        "1password secret key",
        "A3-",
        r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
        "https://support.1password.com/secret-key-security/",
    ),
    vendor(
        "private key",
        "PRIVATE KEY",
        r"BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?",
        "https://datatracker.ietf.org/doc/html/rfc7468 (PEM; headers detect-secrets does not list: ENCRYPTED …)",
        before=110,
        after=10,
        span=private_key,
    ),
    vendor(
        "aws bedrock key",
        ("ABSK", "bedrock-api-key-"),
        r"\b(?:ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&_-]{0,2000})",
        "https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys.html",
        after=2100,
    ),
    vendor(
        "jwt",
        ".ey",
        r"\bey[A-Za-z0-9_-]{12,2000}\.ey[A-Za-z0-9/_-]{12,4000}\.(?:[A-Za-z0-9/_-]{10,1000}={0,2})?",
        "https://datatracker.ietf.org/doc/html/rfc7519#section-3 (header.payload.signature, base64url)",
        before=2010,
        after=5010,
    ),
    vendor(
        "sidekiq secret",
        "__CONTRIBSYS__COM",
        r"(?i:BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM)[<>\s\"'=:]{1,20}([a-f0-9]{8}:[a-f0-9]{8})\b",
        "https://github.com/sidekiq/sidekiq/wiki/Commercial-FAQ",
        folded=True,
        before=20,
        after=60,
        span=group(1),
    ),
    vendor(
        "age secret key",
        "AGE-SECRET-KEY-1",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        "https://age-encryption.org/v1",
    ),
    vendor("twilio key", "SK", rf"\bSK{HEX}{{32}}\b", "https://www.twilio.com/docs/iam/api-keys"),
    vendor(
        "maxmind key",
        "_mmk",
        r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b",
        "https://dev.maxmind.com/geoip/docs/web-services/requests#authorization",
        before=37,
    ),
    vendor(
        "intra42 secret",
        "s-s4t2",
        rf"\bs-s4t2(?:ud|af)-{HEX}{{64}}\b",
        "https://api.intra.42.fr/apidoc/guides/getting_started",
    ),
    vendor(
        "yandex key",
        ("AQVN", "t1."),
        r"\b(?:AQVN[A-Za-z0-9_-]{35,38}|t1\.[A-Z0-9a-z_-]{1,200}={0,2}\.[A-Z0-9a-z_-]{86}={0,2})(?![\w-])",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/api-key",
        span=checked(whole, random_looking),
        after=300,
    ),
    vendor("clickhouse key", "4b1d", r"\b4b1d[A-Za-z0-9]{38}\b", "https://clickhouse.com/docs/en/cloud/manage/openapi"),
    vendor(
        "vercel token",
        ("vcp_", "vci_", "vca_", "vcr_", "vck_"),
        r"\bvc[pirak]_[A-Za-z0-9]{24,60}\b",
        "https://vercel.com/docs/rest-api#creating-an-access-token",
    ),
    vendor(
        "supabase key",
        ("sbp_", "sb_secret_"),
        r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,60})\b",
        "https://supabase.com/docs/guides/api/api-keys",
    ),
    vendor("render key", "rnd_", r"\brnd_[A-Za-z0-9]{28,40}\b", "https://render.com/docs/api#1-create-an-api-key"),
    vendor(
        "netlify token",
        "nfp_",
        r"\bnfp_[A-Za-z0-9]{36,40}\b",
        "https://docs.netlify.com/api/get-started/#authentication",
    ),
    vendor(
        "frame.io token",
        "fio-u-",
        r"\bfio-u-[A-Za-z0-9_=-]{64}",
        "https://developer.frame.io/docs/getting-started/authentication",
    ),
    vendor(
        "adobe secret",
        "p8e-",
        r"\bp8e-[A-Za-z0-9]{32}\b",
        "https://developer.adobe.com/developer-console/docs/guides/authentication/",
    ),
    vendor(
        "sidekiq secret",
        "contribsys.com",
        r"[a-f0-9]{8}:([a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com",
        "https://github.com/sidekiq/sidekiq/wiki/Commercial-FAQ",
        before=20,
        span=group(1),
    ),
)
