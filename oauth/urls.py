"""The authorization server's routes: the discovery documents at the root, the OAuth endpoints under /oauth/.

The library's views find each other by these names in its namespace.
"""

from __future__ import annotations

from django.urls import path
from oauth2_provider import views as library

from oauth import views

app_name = "oauth2_provider"

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        library.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource",
        views.ProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>",
        views.ProtectedResourceMetadataView.as_view(),
        name="oauth-resource-metadata-path",
    ),
    path("oauth/authorize/", views.storable_parameters(views.ConsentView.as_view()), name="authorize"),
    path("oauth/token/", views.storable_parameters(library.TokenView.as_view()), name="token"),
    path("oauth/revoke/", views.storable_parameters(library.RevokeTokenView.as_view()), name="revoke-token"),
    path("oauth/register/", views.RegistrationView.as_view(), name="dcr-register"),
    path("oauth/register/<str:client_id>/", views.RegistrationManagementView.as_view(), name="dcr-register-management"),
]
