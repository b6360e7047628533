from __future__ import annotations

from django.contrib.auth.views import LogoutView
from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("", views.threads, name="threads"),
    path("login/", views.ConsoleLoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
    path("threads/<int:thread_id>/", views.thread, name="thread"),
    path("threads/<int:thread_id>/compact/", views.thread_compact, name="thread-compact"),
    path("threads/<int:thread_id>/compactions/", views.thread_compactions, name="thread-compactions"),
    path("threads/<int:thread_id>/isolation/", views.thread_isolation, name="thread-isolation"),
    path("c/<path:channel>/", views.thread_by_channel, name="thread-by-channel"),
    path("messages/<int:message_id>/", views.message, name="message"),
    path("messages/<int:message_id>/model/", views.message_model_read, name="message-model-read"),
    path("messages/<int:message_id>/raw/", views.message_raw, name="message-raw"),
    path("messages/<int:message_id>/isolation/", views.message_isolation, name="message-isolation"),
    path("search/", views.search, name="search"),
    path("tool-calls/", views.tool_calls, name="tool-calls"),
    path("tool-calls/<int:call_id>/", views.tool_call, name="tool-call"),
    path("deletions/", views.deletions, name="deletions"),
    path("connectors/", views.connectors, name="connectors"),
    path("connectors/<int:application_id>/revoke/", views.connector_revoke, name="connector-revoke"),
]
