"""/api/v1/schema/ (OpenAPI 3) and /api/v1/docs/ (Swagger UI from local assets)."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from api.serializers import CHANNEL_PATTERN
from threadmem.domain.services import _check_channel
from threadmem.errors import InvalidInput
from threadmem.models import Compaction


@pytest.mark.django_db
def test_it_generates_a_valid_schema_without_warnings(tmp_path):
    GENERATOR_STATS.reset()
    stderr = io.StringIO()
    try:
        call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "s.yaml"), stderr=stderr)
    except Exception as exc:
        pytest.fail(f"{exc}\n{stderr.getvalue()}")
    assert (tmp_path / "s.yaml").read_text().startswith("openapi: 3.")


@pytest.mark.django_db
def test_it_serves_the_schema_of_threads_messages_and_context(owner_api):
    response = owner_api.get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    assert set(paths["/api/v1/threads/"]) >= {"get", "post"}
    assert set(paths["/api/v1/threads/{channel}/"]) >= {"get", "patch"}
    assert set(paths["/api/v1/threads/{channel}/messages/"]) >= {"get", "post"}
    assert "get" in paths["/api/v1/threads/{channel}/context/"]
    append = paths["/api/v1/threads/{channel}/messages/"]["post"]
    assert set(append["responses"]) >= {"201", "400", "404", "413"}
    components = schema["components"]["schemas"]
    one_of = components["MessageAppend"]["oneOf"]
    assert one_of[0] == {"$ref": "#/components/schemas/MessageRequest"}
    assert one_of[1]["type"] == "array"
    assert set(components["ThreadDetail"]["properties"]) >= {"channel", "generations", "current_generation"}
    assert "results" in components["PaginatedMessageList"]["properties"]
    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "cookieAuth"}


@pytest.mark.django_db
def test_it_serves_swagger_ui_from_local_assets(owner_api):
    client = owner_api
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/api/v1/schema/" in html
    scripts = re.findall(r'src="([^"]+)"', html)
    bundle = [src for src in scripts if src.endswith("swagger-ui-bundle.js")]
    assert bundle, scripts
    assert not [src for src in scripts if src.startswith(("http:", "https:", "//"))], scripts
    asset = client.get(bundle[0])
    assert asset.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/schema/", "/api/v1/docs/"])
def test_it_keeps_the_schema_from_anonymous_callers(path, owner_api):
    assert APIClient().get(path).status_code == 401
    assert owner_api.get(path).status_code == 200


@pytest.mark.django_db
def test_an_automatic_compactions_requested_by_is_null_and_the_schema_says_it_may_be(owner_api, thread):
    Compaction.objects.create(thread=thread, generation=1, trigger="auto", requested_by=None)
    answered = owner_api.get(f"/api/v1/threads/{thread.channel}/compactions/").json()["results"]
    assert answered[0]["requested_by"] is None
    schema = owner_api.get("/api/v1/schema/", {"format": "json"}).json()
    assert schema["components"]["schemas"]["Compaction"]["properties"]["requested_by"]["nullable"] is True


@pytest.mark.django_db
def test_the_schema_states_minimums_non_empty_strings_and_closed_bodies(owner_api):
    schema = owner_api.get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    assert components["SearchRequest"]["properties"]["query"]["minLength"] == 1
    assert components["SearchRequest"]["additionalProperties"] is False
    assert components["ThreadCreateRequest"]["properties"]["channel"]["minLength"] == 1
    read = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/messages/{message_id}/"]["get"]["parameters"]}
    assert read["message_id"]["minimum"] == 1 and read["offset"]["minimum"] == 0
    listing = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/threads/"]["get"]["parameters"]}
    assert listing["page"]["minimum"] == 1 and listing["page_size"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
    }
    assert owner_api.get("/api/v1/threads/", {"page_size": "null"}).status_code == 400
    assert owner_api.get("/api/v1/threads/", {"page_size": "1001"}).status_code == 400


# Pieces a channel grammar trips on: separators, dot segments, '*', whitespace and control characters of
# several kinds (ASCII, Latin-1, Unicode), the routes' names.
CHANNEL_PIECES = ["a", "x:y", "/", ".", "..", "*", " ", "\t", "\n", "\x85", "\xa0", "\u2028", "\u3000", "\x7f"]
CHANNEL_PIECES += ["messages", "turns", "export"]


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(CHANNEL_PIECES), max_size=6).map("".join) | st.text(max_size=8))
def test_the_schemas_channel_pattern_accepts_what_thread_creation_accepts(channel):
    try:
        _check_channel(channel)
        accepted = True
    except InvalidInput:
        accepted = False
    # A JSON Schema pattern's closing $ is the end of the text; Python's also matches before a final newline.
    assert bool(re.search(CHANNEL_PATTERN.removesuffix("$") + r"\Z", channel)) == accepted, repr(channel)


@pytest.mark.django_db
def test_the_schema_states_what_the_domain_refuses_across_fields(owner_api):
    schema = owner_api.get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    assert components["PatchedThreadUpdateRequest"]["minProperties"] == 1  # "nothing to change"
    assert components["PatchedMessageIsolationRequest"]["required"] == ["isolated"]
    assert components["ImportRequest"]["properties"]["file"]["format"] == "binary"  # a file part, not text
    kind = components["MessageRequest"]["properties"]["kind"]
    kinds = [components[branch["$ref"].rsplit("/", 1)[1]]["enum"] for branch in kind["oneOf"] if "$ref" in branch]
    assert ["message", "machine_event"] in kinds and not any("summary" in k for k in kinds)  # compaction's only
    assert components["MessageRequest"]["allOf"] and components["SearchRequest"]["anyOf"]
    assert components["MessageRequest"]["properties"]["supersedes"]["minimum"] == 1
    (batch,) = (branch for branch in components["MessageAppend"]["oneOf"] if branch.get("type") == "array")
    assert batch["minItems"] == 1
    listing = schema["paths"]["/api/v1/threads/{channel}/messages/"]
    assert {p["name"]: p["schema"] for p in listing["get"]["parameters"]}["generation"]["minimum"] == 1
    assert listing["post"]["requestBody"]["required"] is True
