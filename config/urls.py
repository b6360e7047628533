from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from api.views.metrics import MetricsView
from config.health import healthz

urlpatterns = [
    path("", RedirectView.as_view(url="/console/", permanent=False)),
    path("healthz", healthz, name="healthz"),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("console/", include("console.urls")),
    # OAuth for hosted MCP clients: discovery at /.well-known/, the endpoints under /oauth/.
    path("", include("oauth.urls")),
]

# JSON on /api/ paths, Django's pages elsewhere.
handler400 = "api.exceptions.bad_request"
handler404 = "api.exceptions.not_found"
handler500 = "api.exceptions.server_error"
