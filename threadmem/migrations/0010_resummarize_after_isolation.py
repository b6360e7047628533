"""Re-summaries after isolation (trigger "isolation") may succeed on a generation already compacted."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0009_imports")]

    operations = [
        migrations.RemoveConstraint(model_name="compaction", name="compaction_one_success_per_generation"),
        migrations.AddConstraint(
            model_name="compaction",
            constraint=models.UniqueConstraint(
                condition=models.Q(status="succeeded") & ~models.Q(trigger="isolation"),
                fields=("thread", "generation"),
                name="compaction_one_success_per_generation",
            ),
        ),
    ]
