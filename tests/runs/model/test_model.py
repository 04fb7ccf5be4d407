"""The model adapter over real HTTP (a local fake server), through litellm and directly; its single retry layer and costs."""
import http.client
import json
from decimal import Decimal

import pytest

from benchmark.models import ModelSpec
from runs.model import litellm_transport, openai_http
from runs.model.agent import ModelAgent
from runs.model.reply import ProviderError
from runs.model.retry import FATAL, TRANSIENT, RetryPolicy, fitted_max_tokens
from runs.model.routing import TRANSPORTS, choose_protocol, choose_transport
from runs.cost import Pricing, TokenUsage, kept_litellm_rates, total_cost
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM

MESSAGES = [{"role": "system", "content": "You analyse EEG."}, {"role": "user", "content": "Record rec-1."}]


@pytest.fixture
def server():
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-secret")


@pytest.fixture
def sleeps():
    return []


@pytest.fixture(params=["litellm", "direct"])
def transport(request):
    """Every test of the adapter runs through litellm and through the direct OpenAI-format transport."""
    return request.param


@pytest.fixture
def make_agent(server, sleeps, transport):
    def make(*, settings=None, pricing=None, max_retries=3):
        return ModelAgent(
            model="openai/fake-model",
            api_base=server.api_base,
            api_key_env="FAKE_LLM_KEY",
            settings={"timeout_sec": 2, "transport": transport, **(settings or {})},
            pricing=pricing,
            retry=RetryPolicy(max_retries=max_retries, base_delay_sec=0.01, max_delay_sec=0.04),
            sleep=sleeps.append,
        )

    return make


# ── replies ──────────────────────────────────────────────────────────────────────────────────


def test_text_reply_with_reasoning_and_every_token_count(server, make_agent):
    usage = fake_llm.usage(100, 20, cached=60, cache_write=10, reasoning=5)
    server.add(fake_llm.text("hello", reasoning="alpha looks slow", usage_body=usage))
    reply = make_agent().respond(MESSAGES)
    assert reply.content == "hello"
    assert reply.reasoning == "alpha looks slow"
    assert reply.usage == TokenUsage(
        prompt_tokens=100, completion_tokens=20, cache_read_tokens=60, cache_write_tokens=10, reasoning_tokens=5
    )
    assert reply.failed_attempts == ()
    assert reply.latency_ms > 0
    assert reply.cost_usd is None  # openai/fake-model is in no price map


def test_usage_details_that_are_absent_stay_none(server, make_agent):
    server.add(fake_llm.text("ok"))
    assert make_agent().respond(MESSAGES).usage == TokenUsage(prompt_tokens=100, completion_tokens=20)


def test_request_has_the_official_decoding_defaults_and_the_key_from_the_named_variable(server, make_agent):
    server.add(fake_llm.text("ok"))
    make_agent().respond(MESSAGES)
    request = server.requests[0]
    assert request["messages"] == MESSAGES
    assert (request["temperature"], request["max_tokens"]) == (0, 8192)  # the official configs' settings
    assert "tools" not in request and "tool_choice" not in request  # the text protocol
    assert server.headers[0]["authorization"] == "Bearer sk-test-secret"


def test_decoding_settings_are_passed_and_control_settings_are_not(server, make_agent):
    server.add(fake_llm.text("ok"))
    settings = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 100, "tool_protocol": "text"}
    make_agent(settings=settings).respond(MESSAGES)
    request = server.requests[0]
    assert (request["temperature"], request["top_p"], request["max_tokens"]) == (0.7, 0.9, 100)
    assert "tool_protocol" not in request and "timeout_sec" not in request


def test_native_tool_calls_come_back_as_sent(server, make_agent):
    parameters = {"type": "object", "properties": {}}
    tools = [{"type": "function", "function": {"name": "compute_psd", "parameters": parameters}}]
    server.add(fake_llm.tool_calls(("compute_psd", {"record_id": "rec-1"}), ("compute_psd", "{broken")))
    reply = make_agent(settings={"tool_protocol": "native"}).respond(MESSAGES, tools=tools)
    assert reply.tool_calls == (
        ("call_0", "compute_psd", '{"record_id": "rec-1"}'),
        ("call_1", "compute_psd", "{broken"),
    )
    assert reply.content == ""
    assert server.requests[0]["tools"] == tools
    assert server.requests[0]["tool_choice"] == "auto"


# ── the retry layer ──────────────────────────────────────────────────────────────────────────


def test_429_and_500_are_retried_with_exponential_backoff(server, make_agent, sleeps):
    server.add(fake_llm.http_error(429, "slow down"), fake_llm.http_error(500), fake_llm.text("ok"))
    reply = make_agent().respond(MESSAGES)
    assert reply.content == "ok"
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.02]
    errors = [attempt.error.split(":")[0] for attempt in reply.failed_attempts]
    assert errors == ["RateLimitError (HTTP 429)", "InternalServerError (HTTP 500)"]


def test_retries_run_out_into_a_provider_error_with_no_hidden_retries(server, make_agent, sleeps):
    server.add(*[fake_llm.http_error(503)] * 5)
    with pytest.raises(ProviderError) as raised:
        make_agent(max_retries=3).respond(MESSAGES)
    # 1 call + 3 retries reached the server: neither litellm nor the OpenAI SDK retried on its own.
    assert len(server.requests) == 4
    assert sleeps == [0.01, 0.02, 0.04]
    assert len(raised.value.attempts) == 4
    assert not raised.value.context_exceeded


def test_backoff_is_capped():
    policy = RetryPolicy(max_retries=5, base_delay_sec=2, max_delay_sec=5)
    assert list(policy.delays()) == [2, 4, 5, 5, 5]
    assert list(RetryPolicy().delays()) == [2.0, 4.0, 8.0, 16.0, 32.0]


def test_a_timeout_is_retried(server, make_agent):
    server.add(fake_llm.delayed(1.0, fake_llm.text("too late")), fake_llm.text("in time"))
    reply = make_agent(settings={"timeout_sec": 0.3}).respond(MESSAGES)
    assert reply.content == "in time"
    assert reply.failed_attempts[0].error.startswith("Timeout")


def test_empty_and_non_json_bodies_are_retried_and_their_tokens_kept(server, make_agent):
    server.add(
        fake_llm.empty_choices(usage_body=fake_llm.usage(50, 0)),
        fake_llm.raw(b""),
        fake_llm.raw(b"<html>bad gateway</html>", content_type="text/html"),
        fake_llm.text("ok"),
    )
    reply = make_agent().respond(MESSAGES)
    assert reply.content == "ok"
    assert len(reply.failed_attempts) == 3
    assert reply.failed_attempts[0].usage == TokenUsage(prompt_tokens=50, completion_tokens=0)
    assert reply.failed_attempts[1].usage is None


def test_a_connection_the_server_closed_while_idle_is_replaced(server, make_agent, sleeps, transport):
    server.add(fake_llm.hanging_up(fake_llm.text("first")), fake_llm.text("second"))
    agent = make_agent()
    assert agent.respond(MESSAGES).content == "first"
    reply = agent.respond(MESSAGES)
    assert reply.content == "second"
    assert len(server.requests) == 2
    if transport == "direct":  # through litellm, httpx sometimes reports the dead connection: one retry then
        assert reply.failed_attempts == () and sleeps == []


def test_an_unreachable_server_is_a_provider_error_after_the_retries(make_agent, server, sleeps):
    server.stop()
    with pytest.raises(ProviderError) as raised:
        make_agent(max_retries=2).respond(MESSAGES)
    assert len(raised.value.attempts) == 3 and sleeps == [0.01, 0.02]


def test_408_is_a_timeout_and_retried(server, make_agent, sleeps):
    server.add(fake_llm.http_error(408, "request timeout"), fake_llm.text("after"))
    assert make_agent().respond(MESSAGES).content == "after"
    assert len(server.requests) == 2 and sleeps == [0.01]


def test_llama_cpp_context_errors_are_context_errors(server, make_agent):
    overflow = "the request exceeds the available context size, try increasing it"
    server.add(fake_llm.http_error(400, overflow), fake_llm.http_error(400, overflow), fake_llm.text("unused"))
    with pytest.raises(ProviderError) as raised:
        make_agent().respond(MESSAGES)
    assert raised.value.context_exceeded
    assert [request["max_tokens"] for request in server.requests] == [8192, 4096]


def test_a_client_error_is_not_retried(server, make_agent, sleeps):
    server.add(fake_llm.http_error(401, "bad key"), fake_llm.text("unused"))
    with pytest.raises(ProviderError, match="bad key"):
        make_agent().respond(MESSAGES)
    assert len(server.requests) == 1
    assert sleeps == []


def test_context_overflow_shrinks_max_tokens_and_retries_once(server, make_agent, sleeps):
    server.add(fake_llm.context_overflow(max_context=16384, prompt_tokens=16000), fake_llm.text("short"))
    reply = make_agent().respond(MESSAGES)
    assert reply.content == "short"
    assert [request["max_tokens"] for request in server.requests] == [8192, 383]
    assert sleeps == []


def test_context_overflow_again_is_context_exceeded(server, make_agent):
    server.add(fake_llm.context_overflow(), fake_llm.context_overflow(), fake_llm.text("unused"))
    with pytest.raises(ProviderError) as raised:
        make_agent().respond(MESSAGES)
    assert raised.value.context_exceeded
    assert len(server.requests) == 2


def test_a_missing_key_variable_fails_before_any_request(server, make_agent, monkeypatch):
    monkeypatch.delenv("FAKE_LLM_KEY")
    with pytest.raises(ProviderError, match="FAKE_LLM_KEY"):
        make_agent().respond(MESSAGES)
    assert server.requests == []


def litellm_agent(server, sleeps, **kwargs) -> ModelAgent:
    return ModelAgent(
        model="openai/fake-model", api_base=server.api_base, settings={"timeout_sec": 2, "transport": "litellm"},
        retry=RetryPolicy(max_retries=3, base_delay_sec=0.01, max_delay_sec=0.04), sleep=sleeps.append, **kwargs,
    )


def test_a_key_litellm_finds_missing_fails_at_once_though_litellm_calls_it_a_500(server, sleeps, monkeypatch):
    """No --api-key-env and OPENAI_API_KEY unset: the OpenAI SDK's "Missing credentials", which litellm raises as
    an InternalServerError (HTTP 500), was retried as a server failure (five backoffs, 62 s an episode)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add(fake_llm.text("unused"))
    with pytest.raises(ProviderError, match="Missing credentials") as raised:
        litellm_agent(server, sleeps).respond(MESSAGES)
    assert server.requests == [] and sleeps == []
    assert [attempt.error.split(":")[0] for attempt in raised.value.attempts] == ["InternalServerError (HTTP 500)"]


@pytest.mark.parametrize("status", [401, 500])
def test_a_key_the_provider_refuses_is_not_retried_whatever_its_status(server, sleeps, status):
    """OpenAI's words for a wrong key, answered as a 401 (AuthenticationError) or by a proxy as a 500."""
    server.add(fake_llm.http_error(status, "Incorrect API key provided: sk-test-****cret."), fake_llm.text("unused"))
    with pytest.raises(ProviderError, match="Incorrect API key") as raised:
        litellm_agent(server, sleeps, api_key_env="FAKE_LLM_KEY").respond(MESSAGES)
    assert len(server.requests) == 1 and sleeps == [] and len(raised.value.attempts) == 1
    assert server.headers[0]["authorization"] == "Bearer sk-test-secret"


@pytest.mark.parametrize(
    ("error", "message", "kind"),
    [
        ("InternalServerError", "OpenAIException - Missing credentials. Please pass an `api_key`", FATAL),
        ("APIConnectionError", "Missing Gemini API key. Set the GEMINI_API_KEY or GOOGLE_API_KEY", FATAL),
        ("InternalServerError", "Missing Anthropic API Key - A call is being made to anthropic but no key is set", FATAL),
        ("AuthenticationError", "invalid x-api-key", FATAL),
        ("InternalServerError", "OpenAIException - Connection error.", TRANSIENT),
        ("APIConnectionError", "[Errno -2] Name or service not known", TRANSIENT),
    ],
)
def test_litellm_errors_naming_a_missing_or_refused_key_are_fatal(error, message, kind):
    import litellm

    exc = getattr(litellm, error)(message=message, llm_provider="openai", model="gpt-4o")
    assert litellm_transport.classify(exc) == kind


@pytest.mark.parametrize(
    ("error", "max_tokens", "fitted"),
    [
        ("maximum context length is 8192 tokens. However, you requested 9000 tokens "
         "(7000 in the messages, 2000 in the completion).", 2000, 1191),
        ("maximum context length is 262144 tokens. However, you requested 32768 output tokens and "
         "your prompt contains at least 229377 input tokens, for a total of 262145 tokens.", 32768, 32766),
        ("maximum context length is 8192 tokens. However, you requested 9000 tokens "
         "(8192 in the messages, 808 in the completion).", 808, None),
        ("prompt is too long: 210000 tokens > 200000 maximum", 2048, 1024),
        ("prompt is too long", 1, None),
    ],
)  # fmt: skip
def test_fitted_max_tokens(error, max_tokens, fitted):
    assert fitted_max_tokens(error, max_tokens) == fitted


@pytest.mark.parametrize(
    ("model", "requested", "protocol"),
    [
        ("openai/gpt-4o", "auto", "native"),
        ("openai/fake-model", "auto", "text"),
        ("openai/gpt-4o", "text", "text"),
        ("openai/fake-model", "native", "native"),
        ("no-such-provider/model", "auto", "text"),
    ],
)
def test_protocol_is_chosen_per_model_and_can_be_forced(model, requested, protocol):
    assert choose_protocol(model, requested) == protocol


@pytest.mark.parametrize(
    ("model", "api_base", "requested", "transport"),
    [
        ("openai/Qwen3-8B", "http://127.0.0.1:8001/v1", "auto", "direct"),
        ("hosted_vllm/Qwen3-8B", "http://127.0.0.1:8001/v1", "auto", "direct"),
        ("openai/gpt-4o", "https://gateway.example/v1", "auto", "litellm"),  # listed: litellm adapts its parameters
        ("openai/Qwen3-8B", None, "auto", "litellm"),
        ("anthropic/claude-sonnet-4-5", "https://gateway.example", "auto", "litellm"),
        ("openai/Qwen3-8B", "http://127.0.0.1:8001/v1", "litellm", "litellm"),
        ("openai/gpt-4o", "https://gateway.example/v1", "direct", "direct"),
    ],
)
def test_transport_is_direct_only_for_self_hosted_openai_format_models(model, api_base, requested, transport):
    assert choose_transport(model, api_base, requested) == transport


def test_an_unknown_transport_is_refused():
    with pytest.raises(ValueError, match="transport"):
        choose_transport("openai/Qwen3-8B", "http://127.0.0.1:8001/v1", "grpc")


@pytest.mark.parametrize(
    ("model", "api_base", "problem"),
    [
        ("gpt-4o", "https://gateway.example/v1", "needs a model under openai/ or hosted_vllm/"),
        ("anthropic/claude-sonnet-4-5", "https://gateway.example", "needs a model under"),
        ("openai/Qwen3-8B", None, "needs the --api-base"),
        ("openai/Qwen3-8B", "127.0.0.1:8001/v1", "must be an http\\(s\\) URL"),
        ("openai/Qwen3-8B", "http://127.0.0.1:99999/v1", "invalid port"),
    ],
)
def test_the_direct_transport_is_refused_where_it_cannot_work(model, api_base, problem):
    with pytest.raises(ValueError, match=problem):
        choose_transport(model, api_base, "direct")


@pytest.mark.django_db
def test_a_run_that_cannot_use_its_transport_is_refused_when_created(suite):
    from benchmark.models import ModelSpec
    from runs.models import Run
    from runs.services import create_run

    model = ModelSpec.objects.create(name="hosted", provider_model="gpt-4o")
    with pytest.raises(ValueError, match="needs a model under"):
        create_run(suite=suite, model=model, tasks=["T1"], settings={"transport": "direct"})
    assert not Run.objects.exists()


def test_an_ipv6_api_base_without_a_port_reaches_the_default_port(monkeypatch):
    opened = []
    monkeypatch.setattr(openai_http, "_connection", lambda *args: opened.append(args[:3]) or _Refusing())
    with pytest.raises(openai_http.APIConnectionError):
        openai_http.complete({"model": "openai/m", "api_base": "http://[::1]/v1", "messages": []})
    assert opened == [("http", "::1", 80)]


def test_a_redirect_names_where_to_and_is_not_retried():
    with pytest.raises(openai_http.ProviderHTTPError, match="redirects to https://llm.example/v1/chat/completions") as raised:
        openai_http._raise_for_status(308, b"", "Permanent Redirect", "https://llm.example/v1/chat/completions")
    assert raised.value.status_code == 308 and openai_http.classify(raised.value) == FATAL


class _Refusing:
    sock = None

    def request(self, *args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    def close(self):
        pass


def test_an_interrupted_request_leaves_the_connection_ready_for_the_next(server, monkeypatch):
    request = {"model": "openai/fake-model", "api_base": server.api_base, "messages": MESSAGES, "timeout": 2}
    server.add(fake_llm.text("first"), fake_llm.text("second"))
    assert openai_http.complete(request)["choices"][0]["message"]["content"] == "first"
    real_getresponse = http.client.HTTPConnection.getresponse

    def interrupted(self):
        raise KeyboardInterrupt  # after the request went out, before its answer was read

    monkeypatch.setattr(http.client.HTTPConnection, "getresponse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        openai_http.complete(request)
    monkeypatch.setattr(http.client.HTTPConnection, "getresponse", real_getresponse)
    server.add(fake_llm.text("third"))
    content = openai_http.complete(request)["choices"][0]["message"]["content"]
    assert content in ("second", "third")  # not CannotSendRequest: the half-used connection was closed
    openai_http.close_connections()


def test_both_transports_send_the_same_request_and_read_the_same_reply(server, sleeps):
    usage = fake_llm.usage(300, 40, cached=200, reasoning=7)
    tools = [{"type": "function", "function": {"name": "compute_psd", "parameters": {"type": "object"}}}]
    replies = []
    for transport in TRANSPORTS:
        server.add(
            fake_llm.http_error(503),
            fake_llm.tool_calls(("compute_psd", {"record_id": "rec-1"}), content="checking alpha", usage_body=usage),
        )
        agent = ModelAgent(
            model="openai/fake-model",
            api_base=server.api_base,
            api_key_env="FAKE_LLM_KEY",
            settings={"transport": transport, "tool_protocol": "native", "top_p": 0.5, "seed": 7},
            retry=RetryPolicy(max_retries=1, base_delay_sec=0.01),
            sleep=sleeps.append,
        )
        assert agent.transport == transport
        reply = agent.respond(MESSAGES, tools=tools)
        replies.append(
            (reply.content, reply.tool_calls, reply.usage, reply.finish_reason, len(reply.failed_attempts))
        )
    through_litellm, direct = server.requests[1], server.requests[3]
    assert direct == through_litellm
    assert server.headers[3]["authorization"] == server.headers[1]["authorization"] == "Bearer sk-test-secret"
    assert replies[0] == replies[1]
    assert replies[0][2] == TokenUsage(300, 40, cache_read_tokens=200, reasoning_tokens=7)


def test_an_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="tool_protocol"):
        choose_protocol("openai/gpt-4o", "xml")


# ── cost ─────────────────────────────────────────────────────────────────────────────────────


def spec(provider_model="openai/fake-model", **prices):
    return ModelSpec(name=provider_model, provider_model=provider_model, **prices)


def test_litellm_price_map_charges_cache_reads_at_the_cached_rate():
    pricing = Pricing.for_model(spec("openai/gpt-4o"))
    assert pricing.source == "litellm"
    # gpt-4o: $2.50 input, $1.25 cached input, $10 output per million tokens.
    cost = pricing.call_cost(TokenUsage(prompt_tokens=1000, completion_tokens=100, cache_read_tokens=800))
    assert cost == Decimal("0.00250000")
    assert pricing.paper_cost(1000, 100) == Decimal("0.00350000")  # all input at the standard rate


def test_model_spec_prices_win_and_price_each_kind_of_token():
    pricing = Pricing.for_model(
        spec("openai/gpt-4o", input_price_per_mtok=2, output_price_per_mtok=8, cached_input_price_per_mtok="0.5")
    )
    assert pricing.source == "model_spec"
    usage = TokenUsage(
        prompt_tokens=1_000_000, completion_tokens=500_000, cache_read_tokens=400_000, cache_write_tokens=100_000
    )
    # 500k uncached + 100k cache writes at $2, 400k cache reads at $0.5, 500k output at $8.
    assert pricing.call_cost(usage) == Decimal("5.4")
    assert pricing.paper_cost(1_000_000, 500_000) == Decimal("6")


def test_without_a_cached_price_cache_reads_cost_the_input_price():
    pricing = Pricing.for_model(spec(input_price_per_mtok=1, output_price_per_mtok=1))
    assert pricing.call_cost(TokenUsage(prompt_tokens=1_000_000, cache_read_tokens=1_000_000)) == Decimal("1")


def test_half_a_price_falls_back_to_the_price_map():
    assert Pricing.for_model(spec("openai/gpt-4o", input_price_per_mtok=1)).source == "litellm"


def test_unpriced_is_none_never_zero():
    pricing = Pricing.for_model(spec(input_price_per_mtok=1))
    assert not pricing.is_priced
    assert pricing.call_cost(TokenUsage(prompt_tokens=10, completion_tokens=1)) is None
    assert pricing.paper_cost(10, 1) is None
    assert total_cost([None, None], priced=False) is None


def test_a_priced_call_without_usage_costs_none_and_adds_nothing():
    pricing = Pricing.for_model(spec(input_price_per_mtok=1, output_price_per_mtok=1))
    assert pricing.call_cost(None) is None
    assert total_cost([Decimal("0.5"), None, Decimal("0.25")], priced=True) == Decimal("0.75")
    assert total_cost([], priced=True) == Decimal(0)


PRICE_WITHOUT_LITELLM = """
import json, os, sys
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from benchmark.models import ModelSpec
from runs.cost import Pricing

kept = json.loads(sys.argv[1])
pricing = Pricing.for_model(ModelSpec(name="m", provider_model=kept["model"], litellm_rates=kept))
cost = pricing.paper_cost(1000, 100)
print(json.dumps({"source": pricing.source, "cost": None if cost is None else str(cost), "litellm": "litellm" in sys.modules}))
"""


def price_in_a_fresh_process(kept: dict) -> dict:
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", PRICE_WITHOUT_LITELLM, json.dumps(kept)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=120, check=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_spec_keeps_its_map_rates_and_a_page_prices_it_without_loading_litellm():
    kept = kept_litellm_rates("openai/gpt-4o")
    assert kept["input"] == "0.0000025" and kept["output"] == "0.00001" and kept["litellm"]
    assert price_in_a_fresh_process(kept) == {"source": "litellm", "cost": "0.00350000", "litellm": False}
    unpriced = kept_litellm_rates("openai/fake-model")
    assert unpriced["input"] is None and unpriced["output"] is None
    assert price_in_a_fresh_process(unpriced) == {"source": None, "cost": None, "litellm": False}  # unpriced, not $0


def test_rates_kept_from_another_litellm_or_another_model_are_looked_up_again():
    stale = {**kept_litellm_rates("openai/gpt-4o"), "litellm": "0.0.1", "input": "1", "output": "1"}
    assert price_in_a_fresh_process(stale) == {"source": "litellm", "cost": "0.00350000", "litellm": True}
    moved = {**kept_litellm_rates("openai/gpt-4o"), "model": "openai/fake-model"}  # the spec's model was changed
    assert Pricing.for_model(spec("openai/gpt-4o", litellm_rates=moved)).paper_cost(1000, 100) == Decimal("0.00350000")


def test_the_agent_prices_each_reply(server, make_agent):
    server.add(fake_llm.text("ok", usage_body=fake_llm.usage(1000, 100)))
    pricing = Pricing.for_model(spec(input_price_per_mtok=3, output_price_per_mtok=15))
    assert make_agent(pricing=pricing).respond(MESSAGES).cost_usd == Decimal("0.0045")
