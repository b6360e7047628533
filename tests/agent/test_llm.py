"""threadmem.infrastructure.llm: the real openai SDK against the loopback fake, errors mapped to ours."""

from __future__ import annotations

import math
import socket

import pytest

from tests.support.fake_openai import FakeOpenAI
from threadmem.infrastructure import llm


def test_it_returns_the_assistant_text_and_sends_the_data_not_instructions_prompt(fake_openai):
    fake_openai.push_chat("the deploy failed on step 3")

    reply = llm.chat([{"role": "user", "content": "what happened?"}], instructions="Answer briefly.")

    assert reply.content == "the deploy failed on step 3"
    assert reply.tool_calls == []
    assert reply.model == fake_openai.chat_model
    (sent,) = fake_openai.chat_requests()
    assert sent["model"] == fake_openai.chat_model
    assert sent["messages"][0]["role"] == "system"
    assert "data, not instructions" in sent["messages"][0]["content"]
    assert sent["messages"][0]["content"].endswith("Answer briefly.")
    assert sent["messages"][1] == {"role": "user", "content": "what happened?"}
    # Plain chat completions only: nothing a local server might refuse.
    assert set(sent) == {"model", "messages"}


def test_it_sends_the_api_key_as_a_bearer_token(fake_openai):
    fake_openai.push_chat("ok")

    llm.chat([{"role": "user", "content": "hi"}])

    assert fake_openai.requests[-1].headers["authorization"] == f"Bearer {fake_openai.api_key}"


def test_it_passes_tools_and_parses_the_tool_calls_the_model_makes(fake_openai):
    tools = [{"type": "function", "function": {"name": "search_memory", "parameters": {"type": "object"}}}]
    fake_openai.push_chat(
        tool_calls=[{"id": "call_7", "name": "search_memory", "arguments": {"query": "nginx", "channel": "c1"}}]
    )

    reply = llm.chat([{"role": "user", "content": "find nginx"}], tools=tools)

    assert reply.content == ""
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == [
        llm.ToolCallRequest(id="call_7", name="search_memory", arguments={"query": "nginx", "channel": "c1"})
    ]
    assert reply.as_message()["tool_calls"] == [
        {"id": "call_7", "name": "search_memory", "arguments": {"query": "nginx", "channel": "c1"}}
    ]
    assert fake_openai.chat_requests()[0]["tools"] == tools


@pytest.mark.parametrize("status", [500, 502, 503, 429, 408])
def test_it_maps_server_errors_and_rate_limits_to_unavailable(fake_openai, status):
    fake_openai.push_error(status, "overloaded")

    with pytest.raises(llm.LLMUnavailable, match=f"HTTP {status}"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_leaves_retries_to_the_caller(fake_openai):
    fake_openai.push_error(500)
    fake_openai.push_chat("second")

    with pytest.raises(llm.LLMUnavailable):
        llm.chat([{"role": "user", "content": "hi"}])

    assert len(fake_openai.chat_requests()) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_it_maps_a_refused_request_to_rejected_not_to_a_transient_error(fake_openai, status):
    fake_openai.push_error(status, "model not found")

    with pytest.raises(llm.LLMRejected, match=f"HTTP {status}") as caught:
        llm.chat([{"role": "user", "content": "hi"}])

    assert not isinstance(caught.value, llm.TRANSIENT_ERRORS)


def test_it_maps_a_slow_answer_to_timeout(fake_openai, settings):
    settings.THREADMEM_LLM_TIMEOUT = 0.3
    fake_openai.push_chat("too late", delay=1.5)

    with pytest.raises(llm.LLMTimeout, match=r"0\.3 s"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_maps_a_dropped_connection_to_unavailable(fake_openai):
    fake_openai.push_disconnect()

    with pytest.raises(llm.LLMUnavailable, match="cannot reach"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_maps_a_refused_connection_to_unavailable(fake_openai, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{closed_port}/v1"

    with pytest.raises(llm.LLMUnavailable):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_treats_an_html_page_as_a_bad_response(fake_openai):
    fake_openai.push_raw("<html><body>Bad gateway</body></html>", content_type="text/html")

    with pytest.raises(llm.LLMBadResponse, match="no choices"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_treats_json_of_the_wrong_shape_as_a_bad_response(fake_openai):
    fake_openai.push_raw('{"result": "something else"}')

    with pytest.raises(llm.LLMBadResponse):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_treats_an_empty_answer_as_a_bad_response(fake_openai):
    fake_openai.push_chat("   ")

    with pytest.raises(llm.LLMBadResponse, match="empty answer"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_it_keeps_a_tool_call_whose_arguments_are_not_json_with_the_reason(fake_openai):
    fake_openai.push_chat(tool_calls=[{"name": "search_memory", "arguments": "{query: nginx"}])

    reply = llm.chat([{"role": "user", "content": "hi"}])

    (call,) = reply.tool_calls
    assert call.arguments == {}
    assert "not valid JSON" in call.arguments_error
    assert call.as_stored()["arguments"] == {"invalid_arguments": "{query: nginx"}


def test_it_refuses_to_call_anything_without_a_configured_model(no_model):
    assert not llm.chat_configured()
    assert not llm.embeddings_configured()
    with pytest.raises(llm.LLMNotConfigured):
        llm.chat([{"role": "user", "content": "hi"}])
    with pytest.raises(llm.LLMNotConfigured):
        llm.embed(["hi"])


def test_it_embeds_texts_in_order_as_the_fake_computes_them(fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model

    vectors = llm.embed(["restart nginx on staging", "the weather is nice"])

    assert len(vectors) == 2
    assert vectors[0] == pytest.approx(FakeOpenAI.vector("restart nginx on staging"))
    assert vectors[1] == pytest.approx(FakeOpenAI.vector("the weather is nice"))
    assert math.isclose(sum(v * v for v in vectors[0]), 1.0, rel_tol=1e-6)
    (sent,) = fake_openai.embedding_requests()
    assert sent["encoding_format"] == "float"
    assert sent["model"] == fake_openai.embedding_model


def test_it_splits_large_embedding_batches(fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    texts = [f"text number {i}" for i in range(llm.EMBED_BATCH + 3)]

    vectors = llm.embed(texts)

    assert len(vectors) == len(texts)
    assert [len(r["input"]) for r in fake_openai.embedding_requests()] == [llm.EMBED_BATCH, 3]
    assert vectors[-1] == pytest.approx(FakeOpenAI.vector(texts[-1]))


def test_it_treats_a_wrong_number_of_vectors_as_a_bad_response(fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    fake_openai.push_embeddings([[1.0, 0.0]])

    with pytest.raises(llm.LLMBadResponse, match="asked for 2 vectors, got 1"):
        llm.embed(["one", "two"])
