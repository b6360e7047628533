"""An agent turn's search_memory with a project: the model's call searches that project's threads alone, the
tool's schema sent to the model declares it, and a current thread outside the project is a refusal it reads."""

from __future__ import annotations

import pytest

from tests.support.factories import make_thread
from tests.support.projects import APP, SHOP, two_projects
from tests.support.turns import CHANNEL, run_turn, search_call, stored


@pytest.fixture
def projects(owner, other):
    here = make_thread(owner, CHANNEL, project=APP)
    _, ids = two_projects(owner, other)
    return here, ids


@pytest.mark.django_db
def test_a_models_project_search_finds_only_that_projects_threads(owner_api, projects, fake_openai):
    here, ids = projects
    fake_openai.push_chat(tool_calls=[{"id": "c1", **search_call("zebrafish", channel="*", project=APP)}])
    fake_openai.push_chat(tool_calls=[{"id": "c2", **search_call("zebrafish", channel="*", project=SHOP)}])
    fake_openai.push_chat(tool_calls=[{"id": "c3", **search_call("zebrafish", project=SHOP)}])
    fake_openai.push_chat("done")

    response = run_turn(owner_api, "where did the zebrafish migration fail?")

    assert response.status_code == 200, response.json()
    in_app, in_shop, current = (m.content for m in stored(here) if m.role == "tool")
    assert f"messageId={ids['claude-code:app']} " in in_app
    assert f"messageId={ids['claude-code:shop']} " not in in_app
    assert f"messageId={ids['claude-code:foreign']} " not in in_app
    assert f"messageId={ids['claude-code:shop']} " in in_shop and f"messageId={ids['claude-code:app']} " not in in_shop
    # Without a channel a turn searches its own thread, which is in the other project: the model reads why not.
    assert current.startswith("error: ") and f"in project {APP!r}" in current
    (request, *_) = fake_openai.chat_requests()
    search = next(tool for tool in request["tools"] if tool["function"]["name"] == "search_memory")
    assert "project" in search["function"]["parameters"]["properties"]
