from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    # The library's application model by name: it is not swapped here (OAUTH2_PROVIDER_APPLICATION_MODEL is unset).
    dependencies = [("oauth2_provider", "0022_refreshtoken_token_family_index")]

    operations = [
        migrations.CreateModel(
            name="RedeemedCode",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("code_checksum", models.CharField(max_length=64, unique=True)),
                ("token_family", models.UUIDField(blank=True, null=True)),
                ("access_token_id", models.BigIntegerField(blank=True, null=True)),
                ("created", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "application",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="oauth2_provider.application",
                    ),
                ),
            ],
        ),
    ]
