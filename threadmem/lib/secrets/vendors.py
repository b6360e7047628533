"""Vendors' tokens, each from the vendor's published format: a prefix (the keyword), an alphabet and a length.

Written for Python's ``re`` from each vendor's documentation (the ``source`` of each rule), and checked against
the true positives gitleaks publishes for its rules of the same vendors (``make bench-secrets``; no file of
gitleaks is copied here). Every rule is bounded on both sides (``\\b`` or no token character next to it) and every
quantifier has an upper bound, so that a match costs the same whatever the length of the line it is in.
"""

from __future__ import annotations

from threadmem.lib.secrets import shapes
from threadmem.lib.secrets.detect_secrets import private_key
from threadmem.lib.secrets.rule import Rule, checked, group, vendor, whole

# No token character right after a match: the token is whole.
_END = r"(?![A-Za-z0-9_-])"
_END_ALNUM = r"(?![A-Za-z0-9])"
_HEX = "[a-f0-9]"


def _random(value: str) -> bool:
    return shapes.entropy(value) >= 3.0


def _aws_key_id(value: str) -> bool:
    # A key id's 16 characters are base32 (A-Z, 2-7): a run of capitals with no digit is a word or a DNA sequence
    # (ASIAPACIFIC…, ACCAGT…). Random ids without a digit (1 in 28) stay; the id alone is no secret (AWS says so),
    # the secret access key beside it goes.
    return any(c.isdigit() for c in value[4:])


RULES: tuple[Rule, ...] = (
    # AI providers.
    vendor(
        "openai key",
        ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
        rf"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{{20,400}}{_END}",
        "https://platform.openai.com/docs/api-reference/authentication (project, service-account and admin keys)",
        after=420,
    ),
    vendor(
        "openai key",
        "T3BlbkFJ",
        rf"\bsk-[A-Za-z0-9_-]{{16,200}}T3BlbkFJ[A-Za-z0-9_-]{{16,200}}{_END}",
        "https://platform.openai.com/docs/api-reference/authentication (the key's base64 marker T3BlbkFJ)",
        before=210,
        after=210,
    ),
    vendor(
        "anthropic key",
        "sk-ant-",
        rf"\bsk-ant-(?:api\d\d|admin\d\d|oat\d\d|ort\d\d|sid\d\d)-[A-Za-z0-9_-]{{32,200}}{_END}",
        "https://docs.anthropic.com/en/api/getting-started (x-api-key: sk-ant-api03-…; admin keys sk-ant-admin01-…)",
    ),
    vendor(
        "google api key",
        "AIza",
        rf"\bAIza[A-Za-z0-9_-]{{35}}{_END}",
        "https://cloud.google.com/docs/authentication/api-keys (keys start AIza, 39 characters)",
    ),
    vendor(
        "google oauth secret",
        "GOCSPX-",
        rf"\bGOCSPX-[A-Za-z0-9_-]{{28}}{_END}",
        "https://developers.google.com/identity/protocols/oauth2 (client secrets GOCSPX-…)",
    ),
    vendor(
        "google oauth token",
        "ya29.",
        rf"\bya29\.[A-Za-z0-9_-]{{20,2048}}{_END}",
        "https://developers.google.com/identity/protocols/oauth2 (access tokens ya29.…)",
        after=2060,
    ),
    vendor(
        "hugging face token",
        ("hf_", "api_org_"),
        rf"\b(?:hf_|api_org_)[A-Za-z]{{34}}{_END_ALNUM}",
        "https://huggingface.co/docs/hub/security-tokens (hf_ and 34 letters; organization tokens api_org_)",
    ),
    vendor(
        "perplexity key",
        "pplx-",
        rf"\bpplx-[A-Za-z0-9]{{48}}{_END}",
        "https://docs.perplexity.ai/guides/getting-started",
    ),
    vendor("groq key", "gsk_", rf"\bgsk_[A-Za-z0-9]{{52}}{_END}", "https://console.groq.com/docs/api-keys"),
    vendor(
        "replicate token",
        "r8_",
        rf"\br8_[A-Za-z0-9]{{37}}{_END}",
        "https://replicate.com/docs/reference/http#authentication",
    ),
    # Cloud providers.
    vendor(
        "aws access key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
        "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids",
        span=checked(whole, _aws_key_id),
    ),
    vendor(
        "azure ad client secret",
        "Q~",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~-]|\.[A-Za-z0-9_~-])",
        "https://learn.microsoft.com/en-us/entra/identity-platform/how-to-add-credentials (client secret values)",
        before=4,
        after=36,
    ),
    vendor(
        "azure sas signature",
        ("sig=", "Sig="),
        r"(?<=[?&;])(?:sig|Sig)=([A-Za-z0-9%+/]{20,120}(?:%3D|=){0,2})",
        "https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas (the sig parameter)",
        before=1,
        span=group(1),
    ),
    vendor(
        "azure key",
        ("SharedAccessKey=", "AccessKey=", "SharedAccessSignature="),
        r"(?:SharedAccessKey|AccessKey|SharedAccessSignature)=([A-Za-z0-9+/%&=:._-]{20,300})",
        "https://learn.microsoft.com/en-us/azure/service-bus-messaging/service-bus-sas (connection strings)",
        span=group(1),
        after=330,
    ),
    vendor(
        "alibaba access key",
        "LTAI",
        rf"\bLTAI[A-Za-z0-9]{{20}}{_END}",
        "https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair",
    ),
    vendor(
        "digitalocean token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        rf"\bdo[opr]_v1_{_HEX}{{64}}{_END}",
        "https://docs.digitalocean.com/reference/api/create-personal-access-token/",
    ),
    vendor(
        "cloudflare origin ca key",
        "v1.0-",
        rf"\bv1\.0-{_HEX}{{24}}-{_HEX}{{146}}{_END}",
        "https://developers.cloudflare.com/fundamentals/api/get-started/ca-keys/",
    ),
    vendor(
        "heroku token",
        "HRKU-",
        rf"\bHRKU-[A-Za-z0-9_-]{{20,80}}{_END}",
        "https://devcenter.heroku.com/articles/authentication",
    ),
    vendor(
        "fly.io token",
        ("fo1_", "fm1r_", "fm1a_", "fm2_"),
        r"\b(?:fo1_[\w-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,900}={0,3}|fm2_[A-Za-z0-9+/]{100,900}={0,3})",
        "https://fly.io/docs/security/tokens/",
        after=920,
    ),
    vendor("scalingo token", "tk-us-", rf"\btk-us-[\w-]{{48}}{_END}", "https://doc.scalingo.com/platform/cli/login"),
    vendor(
        "dynatrace token",
        "dt0c01.",
        r"\bdt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}\b",
        "https://docs.dynatrace.com/docs/manage/identity-access-management/access-tokens-and-oauth-clients/access-tokens",
    ),
    vendor(
        "new relic key",
        ("NRAK-", "NRJS-", "NRII-"),
        rf"\bNR(?:AK|JS|II)-[A-Za-z0-9]{{19,40}}{_END}",
        "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/",
    ),
    vendor(
        "grafana token",
        ("glsa_", "glc_"),
        r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})",
        "https://grafana.com/docs/grafana/latest/administration/service-accounts/",
        after=420,
    ),
    vendor(
        "grafana api key",
        "eyJrIjoi",
        r"\beyJrIjoi[A-Za-z0-9]{70,400}={0,2}",
        "https://grafana.com/docs/grafana/latest/developers/http_api/auth/",
        after=420,
    ),
    vendor(
        "sentry token",
        ("sntrys_", "sntryu_"),
        r"\b(?:sntrys_eyJ[A-Za-z0-9+/=_]{60,400}|sntryu_[a-f0-9]{64})",
        "https://docs.sentry.io/account/auth-tokens/",
        after=420,
    ),
    vendor(
        "sentry dsn key",
        ("sentry.io", "ingest."),
        r"https?://([a-f0-9]{32})(?::[a-f0-9]{32})?@[\w.-]{0,100}(?:sentry\.io|ingest\.)",
        "https://docs.sentry.io/concepts/key-terms/dsn-explainer/",
        before=160,
        after=20,
        span=group(1),
    ),
    vendor(
        "datadog key",
        ("ddapi_", "ddapp_"),
        rf"\bdd(?:api|app)_[A-Za-z0-9]{{30,50}}{_END}",
        "https://docs.datadoghq.com/account_management/api-app-keys/",
    ),
    vendor(
        "hashicorp vault token",
        ("hvs.", "hvb.", "hvr."),
        r"\bhv[sbr]\.[A-Za-z0-9_-]{24,400}",
        "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes",
        after=420,
    ),
    vendor(
        "terraform cloud token",
        ".atlasv1.",
        r"\b[a-zA-Z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
        "https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens",
        before=15,
        after=80,
    ),
    vendor(
        "pulumi token",
        "pul-",
        rf"\bpul-{_HEX}{{40}}{_END}",
        "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/",
    ),
    vendor(
        "doppler token",
        "dp.",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b",
        "https://docs.doppler.com/reference/auth-token-formats",
    ),
    vendor(
        "planetscale token",
        "pscale_",
        r"\bpscale_(?:tkn|pw|oauth)_[\w=.-]{32,64}",
        "https://planetscale.com/docs/concepts/service-tokens",
    ),
    vendor(
        "databricks token",
        "dapi",
        rf"\bdapi{_HEX}{{32}}(?:-\d)?{_END}",
        "https://docs.databricks.com/en/dev-tools/auth/pat.html",
    ),
    vendor(
        "openshift token",
        "sha256~",
        r"\bsha256~[\w-]{43}(?![\w-])",
        "https://docs.openshift.com/container-platform/latest/authentication/tokens-scoping.html",
    ),
    # Code hosts, registries and CI.
    vendor(
        "github token",
        "github_pat_",
        r"\bgithub_pat_\w{82}",
        "https://github.blog/2022-10-18-introducing-fine-grained-personal-access-tokens-for-github/",
    ),
    vendor(
        "github token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        rf"\bgh[pousr]_[A-Za-z0-9]{{36,255}}{_END_ALNUM}",
        "https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/",
    ),
    vendor(
        "gitlab token",
        "glpat-",
        rf"\bglpat-[\w-]{{20,300}}(?:\.[\w-]{{2,20}})?{_END}",
        "https://docs.gitlab.com/ee/security/tokens/#token-prefixes",
        after=330,
    ),
    vendor(
        "gitlab token",
        ("glptt-", "glrt-", "gldt-", "glft-", "glsoat-", "glcbt-", "glimt-", "glagent-", "gloas-", "glffct-", "glwt-"),
        r"\bgl(?:ptt|rt|dt|ft|soat|cbt|imt|agent|oas|ffct|wt)-[\w-]{20,300}",
        "https://docs.gitlab.com/ee/security/tokens/#token-prefixes",
        after=310,
    ),
    vendor(
        "bitbucket token",
        "ATBB",
        rf"\bATBB[A-Za-z0-9_=.-]{{32,300}}{_END}",
        "https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/",
        after=310,
    ),
    vendor(
        "atlassian token",
        ("ATATT3", "ATCTT3"),
        rf"\bAT[AC]TT3[A-Za-z0-9_=-]{{50,300}}{_END}",
        "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
        after=310,
    ),
    vendor(
        "npm token",
        "npm_",
        rf"\bnpm_[A-Za-z0-9]{{36}}{_END}",
        "https://github.blog/2021-09-23-announcing-npms-new-access-token-format/",
    ),
    vendor("pypi token", "pypi-", r"\bpypi-AgE[A-Za-z0-9_-]{50,400}", "https://pypi.org/help/#apitoken", after=420),
    vendor(
        "rubygems token", "rubygems_", rf"\brubygems_{_HEX}{{48}}{_END}", "https://guides.rubygems.org/api-key-scopes/"
    ),
    vendor(
        "nuget key", "oy2", r"\boy2[a-z0-9]{43}\b", "https://learn.microsoft.com/en-us/nuget/nuget-org/scoped-api-keys"
    ),
    vendor(
        "clojars token",
        "CLOJARS_",
        r"\bCLOJARS_[a-z0-9]{60}\b",
        "https://github.com/clojars/clojars-web/wiki/Deploy-Tokens",
    ),
    vendor(
        "docker hub token",
        "dckr_pat_",
        rf"\bdckr_pat_[A-Za-z0-9_-]{{27,40}}{_END}",
        "https://docs.docker.com/security/for-developers/access-tokens/",
    ),
    vendor(
        "jfrog token",
        "cmVmdGtu",
        r"\bcmVmdGtuOjAxOj[A-Za-z0-9+/=]{40,120}",
        "https://jfrog.com/help/r/jfrog-platform-administration-documentation/access-tokens",
    ),
    vendor(
        "sonar token",
        ("squ_", "sqp_", "sqa_"),
        rf"\bsq[upa]_{_HEX}{{40}}{_END}",
        "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/",
    ),
    vendor(
        "sourcegraph token",
        "sgp_",
        r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b",
        "https://sourcegraph.com/docs/cli/how-tos/creating_an_access_token",
    ),
    vendor(
        "prefect key", "pnu_", rf"\bpnu_[A-Za-z0-9]{{36}}{_END}", "https://docs.prefect.io/latest/cloud/users/api-keys/"
    ),
    vendor(
        "readme key",
        "rdme_",
        r"\brdme_[a-z0-9]{70}\b",
        "https://docs.readme.com/main/reference/intro-to-the-readme-api",
    ),
    vendor(
        "postman key",
        "PMAK-",
        rf"\bPMAK-{_HEX}{{24}}-{_HEX}{{34}}{_END}",
        "https://learning.postman.com/docs/developer/postman-api/authentication/",
        span=whole,
    ),
    vendor(
        "infracost key",
        "ico-",
        rf"\bico-[A-Za-z0-9]{{32}}{_END}",
        "https://www.infracost.io/docs/features/cli_commands/",
    ),
    vendor(
        "defined networking key",
        "dnkey-",
        r"\bdnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52}\b",
        "https://docs.defined.net/guides/automatically-creating-hosts-and-api-keys/",
    ),
    vendor(
        "harness token",
        ("pat.", "sat."),
        r"\b(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}\b",
        "https://developer.harness.io/docs/platform/automation/api/add-and-manage-api-keys/",
    ),
    vendor(
        "octopus deploy key",
        "API-",
        r"\bAPI-[A-Z0-9]{26}\b",
        "https://octopus.com/docs/octopus-rest-api/how-to-create-an-api-key",
    ),
    vendor(
        "settlemint token",
        ("sm_pat_", "sm_aat_", "sm_sat_"),
        rf"\bsm_(?:pat|aat|sat)_[A-Za-z0-9]{{16}}{_END}",
        "https://console.settlemint.com/documentation/platform-components/security-and-authentication/personal-access-tokens",
    ),
    # Payments and commerce.
    vendor(
        "stripe key",
        ("sk_test_", "sk_live_", "rk_test_", "rk_live_", "sk_prod_", "rk_prod_"),
        rf"\b[sr]k_(?:test|live|prod)_[A-Za-z0-9]{{10,247}}{_END}",
        "https://docs.stripe.com/keys#obtain-api-keys",
    ),
    vendor(
        "stripe webhook secret",
        "whsec_",
        rf"\bwhsec_[A-Za-z0-9+/=]{{24,80}}{_END}",
        "https://docs.stripe.com/webhooks#verify-official-libraries",
    ),
    vendor(
        "square token",
        ("EAAA", "sq0atp-", "sq0csp-"),
        rf"\b(?:EAAA[\w-]{{60}}|sq0atp-[\w-]{{22}}|sq0csp-[\w-]{{43}}){_END}",
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
        rf"\bduffel_(?:test|live)_[A-Za-z0-9_=-]{{43}}{_END}",
        "https://duffel.com/docs/api/overview/making-requests/authentication",
    ),
    vendor(
        "easypost key", ("EZAK", "EZTK"), r"\bEZ[AT]K[a-zA-Z0-9]{54}\b", "https://docs.easypost.com/docs/authentication"
    ),
    vendor(
        "shippo token",
        "shippo_",
        rf"\bshippo_(?:live|test)_{_HEX}{{40}}{_END}",
        "https://docs.goshippo.com/docs/guides_general/authentication/",
    ),
    vendor(
        "coinbase key",
        "organizations/",
        r"organizations/[a-f0-9-]{36}/apiKeys/[a-f0-9-]{36}",
        "https://docs.cdp.coinbase.com/get-started/docs/cdp-api-keys",
    ),
    # Messaging, mail and collaboration.
    vendor(
        "slack token",
        ("xapp-", "xoxe"),
        r"\b(?:xapp-\d-[A-Z0-9]{9,12}-\d{10,16}-[a-z0-9]{64}|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{140,200}|xoxe-\d{10,13}-[\w-]{20,200})",
        "https://api.slack.com/authentication/token-types",
    ),
    vendor(
        "slack token",
        "xox",
        rf"\bxox[abposr]-[0-9A-Za-z-]{{10,250}}{_END}",
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
        rf"\bx(?:keysib|smtpsib)-{_HEX}{{64}}-[A-Za-z0-9]{{16}}\b",
        "https://developers.brevo.com/docs/getting-started",
    ),
    vendor(
        "mailgun key",
        ("key-", "pubkey-"),
        rf"(?<![\w-])(?:pub)?key-{_HEX}{{32}}\b",
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
        span=checked(whole, _random),
    ),
    vendor(
        "mapbox secret token",
        "sk.eyJ",
        r"\bsk\.eyJ[A-Za-z0-9_-]{50,200}\.[A-Za-z0-9_-]{20,40}",
        "https://docs.mapbox.com/accounts/guides/tokens/",
    ),
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
    vendor("twilio key", "SK", rf"\bSK{_HEX}{{32}}\b", "https://www.twilio.com/docs/iam/api-keys"),
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
        rf"\bs-s4t2(?:ud|af)-{_HEX}{{64}}\b",
        "https://api.intra.42.fr/apidoc/guides/getting_started",
    ),
    vendor(
        "yandex key",
        ("AQVN", "t1."),
        r"\b(?:AQVN[A-Za-z0-9_-]{35,38}|t1\.[A-Z0-9a-z_-]{1,200}={0,2}\.[A-Z0-9a-z_-]{86}={0,2})(?![\w-])",
        "https://yandex.cloud/en/docs/iam/concepts/authorization/api-key",
        span=checked(whole, _random),
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
