"""/api/v1/ routes.

Channels may contain '/' (``slack:C042/1700000000.1``), so thread routes use
the ``path`` converter and every suffixed route comes before the bare thread
route. A client may also send the slash encoded as %2F.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.views import compaction, exports, imports, memory, threads, turns

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
]

# --- threads, messages, context (api/views/threads.py) ---
urlpatterns += [
    path("threads/", threads.ThreadListView.as_view(), name="thread-list"),
    path("threads/<path:channel>/messages/", threads.MessageListView.as_view(), name="thread-messages"),
    path("threads/<path:channel>/context/", threads.ContextView.as_view(), name="thread-context"),
]

# --- search, audit read, tool-call log, tools (api/views/memory.py) ---
urlpatterns += [
    path("search/", memory.SearchView.as_view(), name="search"),
    # str, not int: a malformed id answers the API's JSON 404, not Django's page.
    path("messages/<str:message_id>/", memory.MessageView.as_view(), name="message-detail"),
    path("tool-calls/", memory.ToolCallListView.as_view(), name="tool-call-list"),
    path("tools/", memory.ToolsView.as_view(), name="tools"),
]

# --- compaction (api/views/compaction.py) ---
urlpatterns += [
    path("threads/<path:channel>/compact/", compaction.CompactView.as_view(), name="thread-compact"),
    path("threads/<path:channel>/compactions/", compaction.CompactionListView.as_view(), name="thread-compactions"),
]

# --- agent turns (api/views/turns.py) ---
urlpatterns += [
    path("threads/<path:channel>/turns/", turns.TurnView.as_view(), name="thread-turns"),
]

# --- a thread's export (api/views/exports.py) ---
urlpatterns += [
    path("threads/<path:channel>/export/", exports.ThreadExportView.as_view(), name="thread-export"),
]

# --- imports (api/views/imports.py) ---
urlpatterns += [
    path("imports/", imports.ImportListView.as_view(), name="import-list"),
    # Before imports/<id>/, which would take "catalogue" for an id.
    path("imports/catalogue/", imports.SessionCatalogueView.as_view(), name="import-catalogue"),
    path("imports/<str:import_id>/", imports.ImportDetailView.as_view(), name="import-detail"),
]

# Bare thread routes last: see the module docstring.
urlpatterns += [
    path("threads/<path:channel>/", threads.ThreadDetailView.as_view(), name="thread-detail"),
]
