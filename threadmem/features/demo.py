"""Demo data for `make run`: a few threads with realistic agent histories.

``demo_load()`` is idempotent: a thread whose channel exists is left alone,
so running it on every start adds nothing twice. Everything goes through the
services, so the rows are exactly what the API would have stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token

from threadmem.domain import services
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.models import Message, Thread

ADMIN_USERNAME = "admin"
DEMO_OWNER = "demo-agent"
DEPLOY_CHANNEL = "slack:C042/1700000000.1"
MIGRATION_CHANNEL = "cli:ops/db-migration-2024-11"
FORK_CHANNEL = "slack:C042/1700000000.1-rollback"
# The one line of the long journal that matters; search should find it.
JOURNAL_NEEDLE = (
    'api[4121]: FATAL: could not connect to db-primary.internal:5432: password authentication failed for user "api_rw"'
)
JOURNAL_TARGET_CHARS = 50_000


@dataclass
class DemoResult:
    owner: AbstractBaseUser
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def long_journal() -> str:
    """About 50,000 characters of service log with one meaningful line in the middle."""
    lines: list[str] = []
    size = 0
    minute = 0
    while size < JOURNAL_TARGET_CHARS:
        second = len(lines) % 60
        stamp = f"Nov 03 14:{minute % 60:02d}:{second:02d} staging-7"
        if len(lines) % 60 == 59:
            minute += 1
        if len(lines) % 7 == 0:
            line = f"{stamp} api[4121]: GET /v1/orders?page={len(lines)} 200 {12 + len(lines) % 40}ms"
        elif len(lines) % 11 == 0:
            line = f"{stamp} api[4121]: worker heartbeat ok (queue depth {len(lines) % 17})"
        else:
            line = f"{stamp} api[4121]: pool stats: active=4 idle={len(lines) % 9} waiting=0 reused={len(lines) * 3}"
        lines.append(line)
        size += len(line) + 1
    lines.insert(len(lines) // 2, f"Nov 03 14:31:07 staging-7 {JOURNAL_NEEDLE}")
    return "\n".join(lines)


def deploy_history() -> list[dict[str, Any]]:
    session = "sess-2024-11-03-a"
    return [
        {"role": "system", "content": "You are the ops agent for the staging fleet. Be careful with production."},
        {
            "role": "user",
            "session_id": session,
            "content": (
                "The API on staging-7 is returning 502s since this morning. Can you check it and fix the deploy?"
            ),
        },
        {
            "role": "assistant",
            "session_id": session,
            "content": "Let me look at the service on the box first.",
            "tool_calls": [
                _call("call_ssh_1", "shell", {"command": "ssh deploy@staging-7.example.net 'systemctl status api'"})
            ],
        },
        {
            "role": "tool",
            "session_id": session,
            "tool_call_id": "call_ssh_1",
            "content": (
                "● api.service - Orders API\n"
                "     Loaded: loaded (/etc/systemd/system/api.service; enabled)\n"
                "     Active: activating (auto-restart) (Result: exit-code) since Sun 2024-11-03 14:31:08 UTC\n"
                "    Process: 4121 ExecStart=/srv/api/bin/start (code=exited, status=1/FAILURE)"
            ),
        },
        {
            "role": "assistant",
            "session_id": session,
            "tool_calls": [
                _call(
                    "call_journal_1",
                    "shell",
                    {"command": "ssh deploy@staging-7.example.net 'journalctl -u api --since today --no-pager'"},
                )
            ],
        },
        {"role": "tool", "session_id": session, "tool_call_id": "call_journal_1", "content": long_journal()},
        {
            "role": "system",
            "kind": "machine_event",
            "session_id": session,
            "content": "tool output of call_journal_1 was 50 KB; only the model's own summary of it should be quoted",
        },
        {
            "role": "assistant",
            "session_id": session,
            "content": (
                "The journal shows the API cannot log in to db-primary.internal as api_rw: the password in the "
                "environment file is stale. I will check the published health page and then fix the env file."
            ),
            "tool_calls": [_call("call_fetch_1", "fetch_url", {"url": "https://status.example.net/api/health"})],
        },
        {
            "role": "tool",
            "session_id": session,
            "tool_call_id": "call_fetch_1",
            "content": '{"status": "degraded", "components": {"api": "down", "db": "ok", "queue": "ok"}}',
        },
        {
            "role": "assistant",
            "session_id": session,
            "tool_calls": [
                _call(
                    "call_write_1",
                    "write_files",
                    {
                        "files": [
                            {
                                "path": "/srv/api/shared/.env.staging",
                                "content": "DATABASE_URL=postgres://api_rw:${API_DB_PASSWORD}@db-primary.internal/orders",
                            }
                        ],
                        "mode": "0600",
                    },
                ),
                _call(
                    "call_write_2",
                    "write_files",
                    {
                        "files": [
                            {
                                "path": "C:\\Users\\ops\\deploy.ps1",
                                "content": "ssh deploy@staging-7.example.net 'sudo systemctl restart api'",
                            }
                        ]
                    },
                ),
            ],
        },
        {"role": "tool", "session_id": session, "tool_call_id": "call_write_1", "content": "wrote 1 file (78 bytes)"},
        {"role": "tool", "session_id": session, "tool_call_id": "call_write_2", "content": "wrote 1 file (63 bytes)"},
        {
            "role": "system",
            "session_id": session,
            "model_visible": False,
            "content": "operator note: the rotated password lives in vault at secret/staging/api_rw, not in the thread",
        },
        {
            "role": "assistant",
            "session_id": session,
            "tool_calls": [
                _call(
                    "call_ssh_2", "shell", {"command": "ssh deploy@staging-7.example.net 'sudo systemctl restart api'"}
                )
            ],
        },
        {
            "role": "tool",
            "session_id": session,
            "tool_call_id": "call_ssh_2",
            "content": "● api.service - Orders API\n     Active: active (running) since Sun 2024-11-03 15:02:44 UTC",
        },
        {
            "role": "assistant",
            "session_id": session,
            "content": (
                "Fixed: the API on staging-7 failed to start because the DATABASE_URL in /srv/api/shared/.env.staging "
                "used a stale password for api_rw. I rewrote the env file to read the password from the environment "
                "and restarted the service; it is running and the status page should recover within a minute. "
                "I also saved C:\\Users\\ops\\deploy.ps1 for restarting it from the Windows jump host."
            ),
        },
    ]


def migration_history() -> list[dict[str, Any]]:
    session = "sess-2024-11-05-b"
    return [
        {
            "role": "user",
            "session_id": session,
            "content": "Plan the orders table migration that adds the customer_id index without locking writes.",
        },
        {
            "role": "assistant",
            "session_id": session,
            "tool_calls": [
                _call(
                    "call_psql_1",
                    "shell",
                    {
                        "command": "psql -h db-primary.internal -U ops orders -c '\\d+ orders'",
                        "env": {"PGCONNECT_TIMEOUT": "5"},
                    },
                )
            ],
        },
        {
            "role": "tool",
            "session_id": session,
            "tool_call_id": "call_psql_1",
            "content": (
                'Table "public.orders"\n id | bigint | not null\n customer_id | bigint | not null\n'
                ' created_at | timestamptz | not null\nIndexes:\n    "orders_pkey" PRIMARY KEY, btree (id)\n'
                "Rows (estimated): 48,210,331"
            ),
        },
        {
            "role": "assistant",
            "session_id": session,
            "content": (
                "orders has 48M rows and no index on customer_id. Use CREATE INDEX CONCURRENTLY in its own "
                "migration (atomic = False) so writes keep flowing; it takes a few minutes and must not run inside "
                "a transaction."
            ),
            "tool_calls": [
                _call(
                    "call_write_3",
                    "write_files",
                    {
                        "files": [
                            {
                                "path": "orders/migrations/0042_orders_customer_id_idx.py",
                                "content": "CREATE INDEX CONCURRENTLY orders_customer_id_idx ON orders (customer_id);",
                            }
                        ]
                    },
                )
            ],
        },
        {"role": "tool", "session_id": session, "tool_call_id": "call_write_3", "content": "wrote 1 file (74 bytes)"},
        {
            "role": "system",
            "kind": "machine_event",
            "session_id": session,
            "content": "steering: the user is offline until Monday; leave the migration unapplied",
        },
        {
            "role": "assistant",
            "session_id": session,
            "content": (
                "The migration is written to orders/migrations/0042_orders_customer_id_idx.py and left unapplied."
            ),
        },
    ]


def after_compaction_history() -> list[dict[str, Any]]:
    """What the agent did next, in generation 2, after the summary."""
    return [
        {"role": "user", "content": "Is the status page green again?"},
        {
            "role": "assistant",
            "tool_calls": [_call("call_fetch_2", "fetch_url", {"url": "https://status.example.net/api/health"})],
        },
        {
            "role": "tool",
            "tool_call_id": "call_fetch_2",
            "content": '{"status": "ok", "components": {"api": "up", "db": "ok", "queue": "ok"}}',
        },
        {"role": "assistant", "content": "Yes: the status page reports the API up again."},
    ]


def _ensure_thread(
    result: DemoResult, *, channel: str, title: str, history: list[dict[str, Any]], fork_from: Message | None = None
) -> Thread:
    existing = Thread.objects.filter(channel=channel).first()
    if existing is not None:
        result.existing.append(channel)
        return existing
    # Thread and history together: a half-made thread would count as "existing" forever.
    with transaction.atomic():
        thread = services.thread_create(owner=result.owner, channel=channel, title=title, fork_from=fork_from)
        services.messages_append(thread=thread, messages=services.messages_parse(history))
    result.created.append(channel)
    return thread


def admin_ensure(*, password: str | None) -> tuple[AbstractBaseUser, str]:
    """The operator login and its API token (kept across runs); ``password`` replaces its password, None keeps it
    (a new admin then has no usable password until a server start gives it one)."""
    with transaction.atomic():
        admin, created = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
        admin.is_staff = admin.is_superuser = admin.is_active = True
        if password is not None:
            admin.set_password(password)
        elif created:
            admin.set_unusable_password()
        admin.save()
        token, _ = Token.objects.get_or_create(user=admin)
    return admin, token.key


def demo_load() -> DemoResult:
    """Create the demo owner and the demo threads that are missing."""
    owner, created = get_user_model().objects.get_or_create(username=DEMO_OWNER)
    if created:
        owner.set_unusable_password()
        owner.save(update_fields=["password"])
    result = DemoResult(owner=owner)
    deploy = _ensure_thread(
        result, channel=DEPLOY_CHANNEL, title="API on staging-7 returns 502", history=deploy_history()
    )
    if DEPLOY_CHANNEL in result.created:
        # A compacted thread: generation 2 opens with the summary, whose section 10 points at real messages.
        compaction_run_now(thread=deploy, trigger="demo")
        services.messages_append(thread=deploy, messages=services.messages_parse(after_compaction_history()))
    _ensure_thread(
        result, channel=MIGRATION_CHANNEL, title="orders.customer_id index migration", history=migration_history()
    )
    # A fork from just after the diagnosis: another attempt that rolls back instead.
    fork_point = Message.objects.filter(thread=deploy, tool_call_id="call_fetch_1").order_by("seq").first()
    _ensure_thread(
        result,
        channel=FORK_CHANNEL,
        title="staging-7: roll back instead of fixing forward",
        fork_from=fork_point,
        history=[
            {"role": "user", "content": "Actually, roll back to yesterday's release instead of editing the env."},
            {
                "role": "assistant",
                "tool_calls": [
                    _call(
                        "call_rb_1",
                        "shell",
                        {"command": "ssh deploy@staging-7.example.net 'sudo /srv/api/bin/rollback 2024-11-02'"},
                    )
                ],
            },
            {"role": "tool", "tool_call_id": "call_rb_1", "content": "rolled back to release 2024-11-02.3"},
        ],
    )
    return result
