"""A running total of each generation's model-visible text (see models.Generation)."""

from __future__ import annotations

from django.db import migrations, models
from django.db.models import Q, Sum
from django.db.models.functions import Cast, Coalesce, Length


def backfill(apps, schema_editor):
    Generation = apps.get_model("threadmem", "Generation")
    Message = apps.get_model("threadmem", "Message")
    visible = Q(model_visible=True, isolated=False, superseded_by__isnull=True)
    size = Length("content") + Length(Cast("tool_calls", models.TextField()))
    for generation in Generation.objects.filter(state="open").only("thread_id", "number"):
        total = (
            Message.objects.filter(visible, thread_id=generation.thread_id, generation=generation.number)
            .order_by()
            .aggregate(total=Coalesce(Sum(size), 0))["total"]
        )
        Generation.objects.filter(pk=generation.pk).update(visible_chars=total)


class Migration(migrations.Migration):
    dependencies = [("threadmem", "0003_compaction_claim")]

    operations = [
        migrations.AddField(model_name="generation", name="visible_chars", field=models.BigIntegerField(default=0)),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
