"""Made-up secrets in the shapes the redactor knows, and text that must survive it unchanged.

Every secret is built by concatenation (or is a vendor's documented example value), so that no scanner reading
this source, GitHub's push protection included, sees a credential in it.
"""

from __future__ import annotations

import json
from typing import Any

# AWS's own documentation examples.
AWS_KEY_ID = "AKIA" + "IOSFODNN7" + "EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "R8x2Lq" * 6
SLACK_TOKEN = "xoxb-" + "1234567890" + "-" + "9876543210" + "-" + "q7w8e9r0t1y2u3i4"
STRIPE_KEY = "sk_" + "live_" + "51Hq" + "x9Kd" * 6
DB_PASSWORD = "Tr0ub4dor" + "-horse-staple"
DATABASE_URL = "postgres://app:" + DB_PASSWORD + "@db.internal:5432/orders"
KEY_LINES = ["MIIEowIBAAKCAQEA" + "q3Zx9Wv2Lp8Rt5Ny" * 3, "Hk7Jm2Nb4Vc6Xz8Q" * 4, "Lw3Er5Ty7Ui9Op1A" * 2 + "sD=="]
PRIVATE_KEY = "\n".join(["-----BEGIN RSA " + "PRIVATE KEY-----", *KEY_LINES, "-----END RSA " + "PRIVATE KEY-----"])

# A GitHub classic token (ghp_ and 36 letters and digits, made up, mixed enough for a rule with an entropy floor),
# for the fields around messages: titles, tool names, import problems.
CLASSIC_TOKEN = "ghp_" + "Zq7Xk2mW9v" + "B4nR8tL1yH" + "6cJ3pD5sF0" + "gA2eUw"
CLASSIC_REDACTED = "[redacted: github token]"

# What each one becomes, in order of SECRETS.
SECRETS = {
    AWS_KEY_ID: "[redacted: aws access key]",
    AWS_SECRET: "[redacted: aws secret access key]",
    GITHUB_TOKEN: "[redacted: github token]",
    SLACK_TOKEN: "[redacted: slack token]",
    STRIPE_KEY: "[redacted: stripe key]",
    DB_PASSWORD: "[redacted: password]",
    KEY_LINES[1]: "[redacted: private key]",
}

# A tool result holding every one of them, as a `cat .env` and a key file would print them.
ENV_FILE = f"""AWS_ACCESS_KEY_ID={AWS_KEY_ID}
aws_secret_access_key = "{AWS_SECRET}"
GITHUB_TOKEN={GITHUB_TOKEN}
SLACK_BOT_TOKEN={SLACK_TOKEN}
STRIPE_SECRET_KEY={STRIPE_KEY}
DATABASE_URL={DATABASE_URL}
"""
SECRET_RESULT = ENV_FILE + "\n" + PRIVATE_KEY + "\n"
REDACTED_RESULT = """AWS_ACCESS_KEY_ID=[redacted: aws access key]
aws_secret_access_key = "[redacted: aws secret access key]"
GITHUB_TOKEN=[redacted: github token]
SLACK_BOT_TOKEN=[redacted: slack token]
STRIPE_SECRET_KEY=[redacted: stripe key]
DATABASE_URL=postgres://app:[redacted: password]@db.internal:5432/orders

[redacted: private key]
"""
# Tool-call arguments holding secrets at several depths, and what they become.
SECRET_ARGUMENTS = {
    "command": f"curl -H 'Authorization: token {GITHUB_TOKEN}' https://api.github.com/user",
    "env": {"DATABASE_URL": DATABASE_URL, "RETRIES": 3},
    "files": [{"path": "/srv/api/.env", "content": f"STRIPE_SECRET_KEY={STRIPE_KEY}\n"}],
}
REDACTED_ARGUMENTS = {
    "command": "curl -H 'Authorization: token [redacted: github token]' https://api.github.com/user",
    "env": {"DATABASE_URL": "postgres://app:[redacted: password]@db.internal:5432/orders", "RETRIES": 3},
    "files": [{"path": "/srv/api/.env", "content": "STRIPE_SECRET_KEY=[redacted: stripe key]\n"}],
}

# Identifiers search must find: none of them is touched.
IDENTIFIERS = [
    "/srv/api/shared/.env.staging",
    "C:\\Users\\ops\\deploy.ps1",
    "orders/migrations/0042_orders_customer_id_idx.py",
    "staging-7.example.net db-primary.internal 10.4.2.17:5432",
    "commit de55153a8f3c2e1b9d7a6f5e4c3b2a1908f7e6d5 (short de55153)",
    '"sha": "879b1ac0f3e2d4c5b6a7980123456789abcdef01"',
    "258c7280-ae70-4798-800f-63464d01a85d",
    "image@sha256:9b7c3d2e1f0a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c",
    'id="3f9a2c7e81b04d65" request 0x7ffd5e8a1c20 trace 4bf92f3577b34da6a3ce929d0e0e4736',
    "toolu_01VpPeBD2ziigLLpybShAGoU msg_01MKH1ccEGrZGNPvu8pYiiQa req_011CY15QS2LGwAeBxdfa6e1V",
    'data: "aGVsbG8gd29ybGQgdGhpcyBpcyBvcmRpbmFyeSBkYXRhIGVuY29kZWQ="',
    "postgres://postgres@127.0.0.1:5432/threadmem https://user:${DB_PASSWORD}@host/",
    "if line.startswith('-----BEGIN RSA PRIVATE KEY-----'):",
    "python -m pytest -q tests/api/test_messages.py::test_it_appends -k 'token and password'",
]


def claude_code_session(session_id: str = "0b5e7c1a-2f4d-4e8a-9c6b-1d2e3f4a5b6c", *, stream: bool = False) -> bytes:
    """A small Claude Code session: a prompt, a call reading .env with its result, a compaction and its summary.

    ``stream``: the assistant message in two records (its text, then its tool call), as Claude Code streams it.
    """

    def record(kind: str, uuid: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        base = {"type": kind, "uuid": uuid, "sessionId": session_id, "cwd": "/srv/api", "message": message}
        return {**base, **extra}

    text = {"type": "text", "text": "Reading the env file."}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": SECRET_ARGUMENTS}
    records = [
        record("user", "u1", {"role": "user", "content": f"deploy with {DATABASE_URL}"}),
        *(
            record("assistant", f"a1-{index}", {"id": "msg_a1", "role": "assistant", "content": blocks})
            for index, blocks in enumerate([[text, call]] if not stream else [[text], [call]])
        ),
        record(
            "user",
            "u2",
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": SECRET_RESULT}]},
        ),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "s1",
            "sessionId": session_id,
            "content": "compacted",
        },
        record(
            "user",
            "u3",
            {"role": "user", "content": f"Summary: the app reads {AWS_KEY_ID} from .env"},
            isCompactSummary=True,
        ),
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)
