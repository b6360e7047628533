"""The threads list: counts, filters, pagination, a fixed number of queries."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from console.selectors import THREADS_PER_PAGE
from tests.support.factories import append, make_thread, make_user
from threadmem.domain import services
from threadmem.models import Compaction, Generation

URL = "/console/"


def channels_listed(response) -> list[str]:
    return re.findall(r'class="channel" href="[^"]+">([^<]+)</a>', response.content.decode())


def test_it_lists_threads_with_counts_and_last_activity(operator_console, owner):
    make_thread(owner, "quiet")
    busy = make_thread(owner, "busy", title="the busy one")
    append(busy, *[{"role": "user", "content": f"m{i}"} for i in range(7)])
    Generation.objects.create(thread=busy, number=2)

    response = operator_console.get(URL)

    assert response.status_code == 200
    rows = {t.channel: t for t in response.context["page"].object_list}
    assert rows["busy"].message_count == 7
    assert rows["busy"].generation_count == 2
    assert rows["quiet"].message_count == 0
    assert rows["quiet"].generation_count == 1
    assert channels_listed(response) == ["busy", "quiet"]  # last activity first
    assert "the busy one" in response.content.decode()


def test_it_filters_by_channel_or_title_text(operator_console, owner):
    make_thread(owner, "slack:C042/1", title="deploy staging")
    make_thread(owner, "slack:C099/2", title="billing report")

    assert channels_listed(operator_console.get(URL, {"q": "c042"})) == ["slack:C042/1"]
    assert channels_listed(operator_console.get(URL, {"q": "BILLING"})) == ["slack:C099/2"]


def test_it_filters_by_owner(operator_console, owner, other):
    make_thread(owner, "mine")
    make_thread(other, "theirs")

    assert channels_listed(operator_console.get(URL, {"owner": "other"})) == ["theirs"]


def test_it_filters_by_isolation(operator_console, owner, admin):
    hidden = make_thread(owner, "hidden")
    make_thread(owner, "open")
    services.thread_set_isolated(thread=hidden, isolated=True, actor=admin)

    assert channels_listed(operator_console.get(URL, {"isolated": "yes"})) == ["hidden"]
    assert channels_listed(operator_console.get(URL, {"isolated": "no"})) == ["open"]
    response = operator_console.get(URL)
    assert sorted(channels_listed(response)) == ["hidden", "open"]
    assert "flag-isolated" in response.content.decode()


def test_it_filters_threads_with_a_failed_compaction(operator_console, owner):
    broken = make_thread(owner, "broken")
    fine = make_thread(owner, "fine")
    Compaction.objects.create(thread=broken, generation=1, status=Compaction.Status.FAILED, error="model down")
    Compaction.objects.create(thread=fine, generation=1, status=Compaction.Status.SUCCEEDED)

    response = operator_console.get(URL, {"failed": "on"})

    assert channels_listed(response) == ["broken"]
    assert "compaction failed" in response.content.decode()


def test_it_paginates(operator_console, owner):
    for i in range(THREADS_PER_PAGE + 3):
        make_thread(owner, f"t-{i:03d}")

    first = operator_console.get(URL)
    second = operator_console.get(URL, {"page": 2})

    assert len(channels_listed(first)) == THREADS_PER_PAGE
    assert len(channels_listed(second)) == 3
    assert set(channels_listed(first)).isdisjoint(channels_listed(second))
    assert "Page 1 of 2" in first.content.decode()
    assert operator_console.get(URL, {"page": 3}).status_code == 404


def test_it_keeps_filters_in_the_page_links(operator_console, owner):
    for i in range(THREADS_PER_PAGE + 1):
        make_thread(owner, f"keep-{i:03d}")

    body = operator_console.get(URL, {"q": "keep"}).content.decode()

    assert "?q=keep&amp;page=2" in body


@pytest.mark.parametrize("count", [3, 30])
def test_it_lists_threads_in_a_fixed_number_of_queries(operator_console, owner, count, django_assert_num_queries):
    users = [owner, make_user(f"u{count}")]
    for i in range(count):
        thread = make_thread(users[i % 2], f"q-{i}", project="/srv/app")
        append(thread, {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"})
        Compaction.objects.create(thread=thread, generation=1, status=Compaction.Status.FAILED)

    # session, user, count, page, the project box's suggestions
    with django_assert_num_queries(5):
        response = operator_console.get(URL)
    assert len(response.context["page"].object_list) == count
    with django_assert_num_queries(5):
        operator_console.get(URL, {"q": "q-", "failed": "on", "isolated": "no", "owner": "u", "project": "/srv/app"})


def test_it_links_each_thread_to_its_page(operator_console, thread):
    body = operator_console.get(URL).content.decode()
    assert reverse("console:thread", args=[thread.id]) in body
