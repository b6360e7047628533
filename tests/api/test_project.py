"""REST and a thread's project: search by project in the body and the query string, threads that show theirs, and
the schema that says so."""

from __future__ import annotations

import pytest

from tests.support.projects import APP, SHOP, two_projects

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects(owner, other):
    (app, shop, foreign), ids = two_projects(owner, other)
    return app, shop, foreign, ids


def hit_ids(body) -> set[int]:
    return {hit["message_id"] for hit in body["hits"]}


def test_each_project_finds_only_its_own_over_the_body_and_the_query_string(owner_api, projects):
    app, shop, _, ids = projects
    for project, channel in ((APP, app.channel), (SHOP, shop.channel)):
        posted = owner_api.post("/api/v1/search/", {"query": "zebrafish", "project": project}, format="json")
        got = owner_api.get("/api/v1/search/", {"query": "zebrafish", "project": project})
        assert posted.status_code == got.status_code == 200
        assert hit_ids(posted.json()) == hit_ids(got.json()) == {ids[channel]}
        assert f'project: "{project}"' in posted.json()["text"]


def test_a_channel_outside_the_project_is_a_400_naming_project_and_another_owners_a_404(owner_api, other_api, projects):
    app, shop, foreign, _ = projects
    body = {"query": "zebrafish", "channel": shop.channel, "project": APP}
    refused = owner_api.post("/api/v1/search/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["field"] == "project"
    assert other_api.post("/api/v1/search/", {**body, "channel": app.channel}, format="json").status_code == 404
    # The other owner's search of the project holds their thread alone.
    theirs = other_api.post("/api/v1/search/", {"query": "zebrafish", "project": APP}, format="json").json()
    assert theirs["literal_hits_total"] == 1
    assert other_api.get("/api/v1/threads/").json()["results"][0]["channel"] == foreign.channel


def test_threads_show_their_project_and_a_fork_takes_its_parents(owner_api, projects):
    app = projects[0]
    listed = {t["channel"]: t["project"] for t in owner_api.get("/api/v1/threads/").json()["results"]}
    assert listed == {"claude-code:app": APP, "claude-code:shop": SHOP}
    assert owner_api.get(f"/api/v1/threads/{app.channel}/").json()["project"] == APP
    created = owner_api.post("/api/v1/threads/", {"channel": "t-new", "project": "/srv/x/"}, format="json")
    assert created.status_code == 201 and created.json()["project"] == "/srv/x"
    message_id = projects[3][app.channel]
    fork = {"channel": "t-fork", "fork_from": {"channel": app.channel, "message_id": message_id}}
    assert owner_api.post("/api/v1/threads/", fork, format="json").json()["project"] == APP


def test_the_schema_states_project_for_search_and_threads(owner_api):
    schema = owner_api.get("/api/v1/schema/", {"format": "json"}).json()
    search = schema["paths"]["/api/v1/search/"]
    assert "project" in [parameter["name"] for parameter in search["get"]["parameters"]]
    components = schema["components"]["schemas"]
    assert components["SearchRequest"]["properties"]["project"]["maxLength"] == 1000
    assert "project" in components["Thread"]["properties"]
    assert "project" in components["ThreadCreateRequest"]["properties"]
