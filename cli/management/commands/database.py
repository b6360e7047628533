"""``manage.py database``: make sure DATABASE_URL's database can be reached, creating it when it is missing.

``make run`` calls it before ``migrate``, so a PostgreSQL URL naming a
database that does not exist yet is created (the server is there, the
database is not: the usual first run) instead of failing with a traceback.
Any other failure is one line naming the problem.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection


class Command(BaseCommand):
    help = "Check that the configured database can be reached; create a missing PostgreSQL database."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            connection.ensure_connection()
            return
        except OperationalError as exc:
            if connection.vendor != "postgresql" or "does not exist" not in str(exc):
                raise CommandError(f"cannot reach the database of DATABASE_URL: {str(exc).strip()}") from None
        db = connection.settings_dict
        name = db["NAME"]
        params = {k: v for k, v in connection.get_connection_params().items() if k != "cursor_factory"}
        params["dbname"] = "postgres"
        try:
            with psycopg.connect(**params, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        except psycopg.Error as exc:
            raise CommandError(
                f"database {name!r} does not exist and could not be created ({str(exc).strip()}): "
                f"create it with `createdb -h {db['HOST'] or 'localhost'} -U {db['USER'] or 'postgres'} {name}`"
            ) from None
        self.stdout.write(f"created database {name!r}")
