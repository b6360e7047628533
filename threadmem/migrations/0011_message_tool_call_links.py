"""Indexes pairing tool calls and their results by (thread, tool_call_id): search names both halves (contract §9)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("threadmem", "0010_resummarize_after_isolation"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                condition=models.Q(("tool_call_id", ""), _negated=True),
                fields=["thread", "tool_call_id"],
                name="message_tool_call",
            ),
        ),
        migrations.AddIndex(
            model_name="toolargument",
            index=models.Index(
                condition=models.Q(("tool_call_id", ""), _negated=True),
                fields=["thread", "tool_call_id"],
                name="toolarg_tool_call",
            ),
        ),
    ]
