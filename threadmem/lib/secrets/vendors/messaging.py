"""Messaging, mail and collaboration services' tokens."""

from __future__ import annotations

from threadmem.lib.secrets.rule import Rule, checked, group, vendor, whole
from threadmem.lib.secrets.vendors.patterns import END, HEX, random_looking

RULES: tuple[Rule, ...] = (
    vendor(
        "slack token",
        ("xapp-", "xoxe"),
        r"\b(?:xapp-\d-[A-Z0-9]{9,12}-\d{10,16}-[a-z0-9]{64}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{140,200}|xoxe-\d{10,13}-[\w-]{20,200})",
        "https://api.slack.com/authentication/token-types",
    ),
    vendor(
        "slack token",
        "xox",
        rf"\bxox[abposr]-[0-9A-Za-z-]{{10,250}}{END}",
        "https://api.slack.com/authentication/token-types",
    ),
    vendor(
        "slack webhook",
        "hooks.slack.com",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{30,120}",
        "https://api.slack.com/messaging/webhooks",
        before=8,
    ),
    vendor(
        "discord webhook",
        "/api/webhooks/",
        r"/api/webhooks/\d{15,20}/([\w-]{60,80})",
        "https://discord.com/developers/docs/resources/webhook",
        span=group(1),
    ),
    vendor(
        "teams webhook",
        ".webhook.office.com",
        r"https://[a-z0-9-]{1,50}\.webhook\.office\.com/webhookb2/[\w@/-]{40,300}",
        "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook",
        before=60,
        after=330,
    ),
    vendor(
        "telegram token",
        ":A",
        r"(?<![\w:])\d{5,16}:A[0-9A-Za-z_-]{34}(?![\w-])",
        "https://core.telegram.org/bots/api#authorizing-your-bot",
        before=17,
        after=36,
    ),
    vendor(
        "sendgrid key",
        "SG.",
        r"\bSG\.[\w-]{20,24}\.[\w-]{39,50}\b",
        "https://docs.sendgrid.com/ui/account-and-settings/api-keys",
    ),
    vendor(
        "brevo key",
        ("xkeysib-", "xsmtpsib-"),
        rf"\bx(?:keysib|smtpsib)-{HEX}{{64}}-[A-Za-z0-9]{{16}}\b",
        "https://developers.brevo.com/docs/getting-started",
    ),
    vendor(
        "mailgun key",
        ("key-", "pubkey-"),
        rf"(?<![\w-])(?:pub)?key-{HEX}{{32}}\b",
        "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication/",
    ),
    vendor(
        "linear key",
        ("lin_api_", "lin_oauth_"),
        r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b",
        "https://developers.linear.app/docs/graphql/working-with-the-graphql-api#personal-api-keys",
    ),
    vendor(
        "notion token",
        ("secret_", "ntn_"),
        r"\b(?:secret_[A-Za-z0-9]{43}|ntn_\d{11}[A-Za-z0-9]{32,35})\b",
        "https://developers.notion.com/docs/authorization",
    ),
    vendor(
        "contentful token",
        "CFPAT-",
        r"\bCFPAT-[A-Za-z0-9_-]{43}",
        "https://www.contentful.com/developers/docs/references/authentication/",
    ),
    vendor(
        "typeform token",
        "tfp_",
        r"\btfp_[A-Za-z0-9_.=-]{59}",
        "https://www.typeform.com/developers/get-started/personal-access-token/",
    ),
    vendor(
        "dropbox token",
        ("sl.", "sl.u."),
        r"\bsl\.(?:u\.)?[A-Za-z0-9_=-]{130,1000}",
        "https://developers.dropbox.com/oauth-guide",
        after=1020,
    ),
    vendor(
        "facebook token",
        ("EAAC", "EAAG", "EAAM"),
        r"\bEAA[CGM][A-Za-z0-9]{100,400}",
        "https://developers.facebook.com/docs/facebook-login/guides/access-tokens",
        after=420,
    ),
    vendor(
        "twitter bearer token",
        "AAAAAAAAAAAAAAAAAAAA",
        r"\bA{20,24}[A-Za-z0-9%]{50,200}",
        "https://developer.x.com/en/docs/authentication/oauth-2-0/bearer-tokens",
        span=checked(whole, random_looking),
    ),
    vendor(
        "mapbox secret token",
        "sk.eyJ",
        r"\bsk\.eyJ[A-Za-z0-9_-]{50,200}\.[A-Za-z0-9_-]{20,40}",
        "https://docs.mapbox.com/accounts/guides/tokens/",
    ),
)
