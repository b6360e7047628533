"""Code hosts', package registries' and CI services' tokens."""

from __future__ import annotations

from threadmem.lib.secrets.rule import Rule, vendor, whole
from threadmem.lib.secrets.vendors.patterns import END, END_ALNUM, HEX

RULES: tuple[Rule, ...] = (
    vendor(
        "github token",
        "github_pat_",
        r"\bgithub_pat_\w{82}",
        "https://github.blog/2022-10-18-introducing-fine-grained-personal-access-tokens-for-github/",
    ),
    vendor(
        "github token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        rf"\bgh[pousr]_[A-Za-z0-9]{{36,255}}{END_ALNUM}",
        "https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/",
    ),
    vendor(
        "gitlab token",
        "glpat-",
        rf"\bglpat-[\w-]{{20,300}}(?:\.[\w-]{{2,20}})?{END}",
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
        rf"\bATBB[A-Za-z0-9_=.-]{{32,300}}{END}",
        "https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/",
        after=310,
    ),
    vendor(
        "atlassian token",
        ("ATATT3", "ATCTT3"),
        rf"\bAT[AC]TT3[A-Za-z0-9_=-]{{50,300}}{END}",
        "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
        after=310,
    ),
    vendor(
        "npm token",
        "npm_",
        rf"\bnpm_[A-Za-z0-9]{{36}}{END}",
        "https://github.blog/2021-09-23-announcing-npms-new-access-token-format/",
    ),
    vendor("pypi token", "pypi-", r"\bpypi-AgE[A-Za-z0-9_-]{50,400}", "https://pypi.org/help/#apitoken", after=420),
    vendor(
        "rubygems token", "rubygems_", rf"\brubygems_{HEX}{{48}}{END}", "https://guides.rubygems.org/api-key-scopes/"
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
        rf"\bdckr_pat_[A-Za-z0-9_-]{{27,40}}{END}",
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
        rf"\bsq[upa]_{HEX}{{40}}{END}",
        "https://docs.sonarsource.com/sonarqube/latest/user-guide/user-account/generating-and-using-tokens/",
    ),
    vendor(
        "sourcegraph token",
        "sgp_",
        r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b",
        "https://sourcegraph.com/docs/cli/how-tos/creating_an_access_token",
    ),
    vendor(
        "prefect key", "pnu_", rf"\bpnu_[A-Za-z0-9]{{36}}{END}", "https://docs.prefect.io/latest/cloud/users/api-keys/"
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
        rf"\bPMAK-{HEX}{{24}}-{HEX}{{34}}{END}",
        "https://learning.postman.com/docs/developer/postman-api/authentication/",
        span=whole,
    ),
    vendor(
        "infracost key",
        "ico-",
        rf"\bico-[A-Za-z0-9]{{32}}{END}",
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
        rf"\bsm_(?:pat|aat|sat)_[A-Za-z0-9]{{16}}{END}",
        "https://console.settlemint.com/documentation/platform-components/security-and-authentication/personal-access-tokens",
    ),
)
