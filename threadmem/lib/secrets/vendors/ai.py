"""AI providers' keys."""

from __future__ import annotations

from threadmem.lib.secrets.rule import Rule, vendor
from threadmem.lib.secrets.vendors.patterns import END, END_ALNUM

RULES: tuple[Rule, ...] = (
    vendor(
        "openai key",
        ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
        rf"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{{20,400}}{END}",
        "https://platform.openai.com/docs/api-reference/authentication (project, service-account and admin keys)",
        after=420,
    ),
    vendor(
        "openai key",
        "T3BlbkFJ",
        rf"\bsk-[A-Za-z0-9_-]{{16,200}}T3BlbkFJ[A-Za-z0-9_-]{{16,200}}{END}",
        "https://platform.openai.com/docs/api-reference/authentication (the key's base64 marker T3BlbkFJ)",
        before=210,
        after=210,
    ),
    vendor(
        "anthropic key",
        "sk-ant-",
        rf"\bsk-ant-(?:api\d\d|admin\d\d|oat\d\d|ort\d\d|sid\d\d)-[A-Za-z0-9_-]{{32,200}}{END}",
        "https://docs.anthropic.com/en/api/getting-started (x-api-key: sk-ant-api03-…; admin keys sk-ant-admin01-…)",
    ),
    vendor(
        "google api key",
        "AIza",
        rf"\bAIza[A-Za-z0-9_-]{{35}}{END}",
        "https://cloud.google.com/docs/authentication/api-keys (keys start AIza, 39 characters)",
    ),
    vendor(
        "google oauth secret",
        "GOCSPX-",
        rf"\bGOCSPX-[A-Za-z0-9_-]{{28}}{END}",
        "https://developers.google.com/identity/protocols/oauth2 (client secrets GOCSPX-…)",
    ),
    vendor(
        "google oauth token",
        "ya29.",
        rf"\bya29\.[A-Za-z0-9_-]{{20,2048}}{END}",
        "https://developers.google.com/identity/protocols/oauth2 (access tokens ya29.…)",
        after=2060,
    ),
    vendor(
        "hugging face token",
        ("hf_", "api_org_"),
        rf"\b(?:hf_|api_org_)[A-Za-z]{{34}}{END_ALNUM}",
        "https://huggingface.co/docs/hub/security-tokens (hf_ and 34 letters; organization tokens api_org_)",
    ),
    vendor(
        "perplexity key",
        "pplx-",
        rf"\bpplx-[A-Za-z0-9]{{48}}{END}",
        "https://docs.perplexity.ai/guides/getting-started",
    ),
    vendor("groq key", "gsk_", rf"\bgsk_[A-Za-z0-9]{{52}}{END}", "https://console.groq.com/docs/api-keys"),
    vendor(
        "replicate token",
        "r8_",
        rf"\br8_[A-Za-z0-9]{{37}}{END}",
        "https://replicate.com/docs/reference/http#authentication",
    ),
)
