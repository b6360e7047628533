"""Payment and commerce services' keys."""

from __future__ import annotations

from threadmem.lib.secrets.rule import Rule, vendor
from threadmem.lib.secrets.vendors.patterns import END, HEX

RULES: tuple[Rule, ...] = (
    vendor(
        "stripe key",
        ("sk_test_", "sk_live_", "rk_test_", "rk_live_", "sk_prod_", "rk_prod_"),
        rf"\b[sr]k_(?:test|live|prod)_[A-Za-z0-9]{{10,247}}{END}",
        "https://docs.stripe.com/keys#obtain-api-keys",
    ),
    vendor(
        "stripe webhook secret",
        "whsec_",
        rf"\bwhsec_[A-Za-z0-9+/=]{{24,80}}{END}",
        "https://docs.stripe.com/webhooks#verify-official-libraries",
    ),
    vendor(
        "square token",
        ("EAAA", "sq0atp-", "sq0csp-"),
        rf"\b(?:EAAA[\w-]{{60}}|sq0atp-[\w-]{{22}}|sq0csp-[\w-]{{43}}){END}",
        "https://developer.squareup.com/docs/build-basics/access-tokens",
    ),
    vendor(
        "shopify token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
        "https://shopify.dev/docs/apps/auth/access-token-types",
    ),
    vendor(
        "plaid token",
        "access-",
        r"\baccess-(?:sandbox|development|production)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}\b",
        "https://plaid.com/docs/api/tokens/",
    ),
    vendor(
        "flutterwave key",
        ("FLWSECK", "FLWPUBK"),
        r"\bFLW(?:SECK|PUBK)_TEST-?[a-hA-H0-9]{12,32}(?:-X)?\b",
        "https://developer.flutterwave.com/docs/integration-guides/authentication",
    ),
    vendor(
        "duffel token",
        "duffel_",
        rf"\bduffel_(?:test|live)_[A-Za-z0-9_=-]{{43}}{END}",
        "https://duffel.com/docs/api/overview/making-requests/authentication",
    ),
    vendor(
        "easypost key", ("EZAK", "EZTK"), r"\bEZ[AT]K[a-zA-Z0-9]{54}\b", "https://docs.easypost.com/docs/authentication"
    ),
    vendor(
        "shippo token",
        "shippo_",
        rf"\bshippo_(?:live|test)_{HEX}{{40}}{END}",
        "https://docs.goshippo.com/docs/guides_general/authentication/",
    ),
    vendor(
        "coinbase key",
        "organizations/",
        r"organizations/[a-f0-9-]{36}/apiKeys/[a-f0-9-]{36}",
        "https://docs.cdp.coinbase.com/get-started/docs/cdp-api-keys",
    ),
)
