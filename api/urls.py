"""/api/v1/ routes.

Channels may contain '/' (``slack:C042/1700000000.1``), so thread routes use
the ``path`` converter and every suffixed route comes before the bare thread
route. A client may also send the slash encoded as %2F.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
]

# --- threads, messages, context (api/views/threads.py) ---
urlpatterns += []

# --- search, audit read, tool-call log, tools (api/views/memory.py) ---
urlpatterns += []

# --- compaction (api/views/compaction.py) ---
urlpatterns += []

# --- agent turns (api/views/turns.py) ---
urlpatterns += []

# Bare thread routes last: see the module docstring.
urlpatterns += []
