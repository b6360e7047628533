from __future__ import annotations

from django.contrib.auth.views import LogoutView
from django.urls import path, register_converter

from console import views
from threadmem.domain.services import MAX_ROW_ID

app_name = "console"


class RowId:
    """A row's id in a path: past 64 bits no row has it, so the URL matches nothing (404) rather than reach the
    database, whose driver cannot take the number."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ROW_ID:
            raise ValueError(f"{number} is past the ids' 64 bits")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(RowId, "id")

urlpatterns = [
    path("", views.threads, name="threads"),
    path("login/", views.ConsoleLoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
    path("threads/<id:thread_id>/", views.thread, name="thread"),
    path("threads/<id:thread_id>/compact/", views.thread_compact, name="thread-compact"),
    path("threads/<id:thread_id>/compactions/", views.thread_compactions, name="thread-compactions"),
    path("threads/<id:thread_id>/isolation/", views.thread_isolation, name="thread-isolation"),
    path("c/<path:channel>/", views.thread_by_channel, name="thread-by-channel"),
    path("messages/<id:message_id>/", views.message, name="message"),
    path("messages/<id:message_id>/model/", views.message_model_read, name="message-model-read"),
    path("messages/<id:message_id>/raw/", views.message_raw, name="message-raw"),
    path("messages/<id:message_id>/isolation/", views.message_isolation, name="message-isolation"),
    path("search/", views.search, name="search"),
    path("tool-calls/", views.tool_calls, name="tool-calls"),
    path("tool-calls/<id:call_id>/", views.tool_call, name="tool-call"),
    path("deletions/", views.deletions, name="deletions"),
    path("connectors/", views.connectors, name="connectors"),
    path("connectors/<id:application_id>/revoke/", views.connector_revoke, name="connector-revoke"),
]
