"""The model adapter over real HTTP (a local fake server), through litellm and directly; its single retry layer, costs, and the baselines."""
import http.client
import json
from decimal import Decimal

import pytest

from benchmark.models import ModelSpec
from runs.baselines.heuristic import T1_FIXED_LETTER, HeuristicAgent, windows_per_call
from runs.baselines.random import RandomAgent
from runs.model import openai_http
from runs.model.agent import ModelAgent
from runs.model.reply import ProviderError
from runs.model.retry import FATAL, RetryPolicy, fitted_max_tokens
from runs.model.routing import TRANSPORTS, choose_protocol, choose_transport
from runs.cost import Pricing, TokenUsage, kept_litellm_rates, total_cost
from runs.protocol import TOOL_RESULT_PREFIX, final_answer_errors, parse_text_action
from tools_app.views import result_text
from tests.runs import fake_llm
from tests.runs.fake_llm import FakeLLM
from tests.runs.test_protocol import OUTPUT_SCHEMAS

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
    assert errors == ["RateLimitError", "InternalServerError"]


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
                          cwd=Path(__file__).resolve().parents[2], timeout=120, check=True)  # fmt: skip
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


# ── baselines ────────────────────────────────────────────────────────────────────────────────


def visible_instance(task, **extra):
    return {"record_id": "rec-9c1e", "task": task, "duration_sec": None, "n_epochs": None, "metadata": {}, **extra}


INSTANCES = {
    "T1": visible_instance("T1"),
    "T2": visible_instance("T2", duration_sec=2.0),
    "T3": visible_instance("T3", duration_sec=23.6),
    "T4": visible_instance("T4", duration_sec=600.0),
    "T5": visible_instance("T5", duration_sec=3600.0),
    "T6": visible_instance("T6", duration_sec=27090.0, n_epochs=903),
}


def drive(agent, tool, *, max_turns=60):
    """Play an agent against ``tool(name, arguments)`` the way the text protocol does; return (answer, calls)."""
    messages = list(MESSAGES)
    calls = []
    for _ in range(max_turns):
        reply = agent.respond(messages)
        action = parse_text_action(reply.content)
        messages.append({"role": "assistant", "content": reply.content})
        if action.kind == "final_answer":
            return action.final_answer, calls
        assert action.kind == "tool_call", reply.content
        call = action.tool_calls[0]
        calls.append(call)
        result = result_text(call.name, tool(call.name, call.arguments))
        messages.append({"role": "user", "content": TOOL_RESULT_PREFIX + result})
    raise AssertionError("no final answer")


@pytest.mark.parametrize("task", sorted(INSTANCES))
def test_random_baseline_gives_a_valid_answer_in_one_turn(task):
    answer, calls = drive(RandomAgent(INSTANCES[task], seed=1), tool=None)
    assert calls == []
    assert final_answer_errors(answer, OUTPUT_SCHEMAS[task], task=task, n_epochs=903) == []


def test_random_baseline_is_seeded():
    def answer(seed, record_id="rec-9c1e"):
        return drive(RandomAgent({**INSTANCES["T6"], "record_id": record_id}, seed=seed), tool=None)[0]

    assert answer(1) == answer(1)
    assert answer(1) != answer(2)
    assert answer(1) != answer(1, record_id="rec-other")


def test_baselines_are_free():
    reply = HeuristicAgent(INSTANCES["T1"]).respond(MESSAGES)
    assert reply.cost_usd == Decimal(0)
    assert reply.usage is None


def test_heuristic_t1_answers_its_fixed_letter_without_tools():
    assert T1_FIXED_LETTER == "C"
    assert drive(HeuristicAgent(INSTANCES["T1"]), tool=None) == ({"action": "final_answer", "answer": "C"}, [])


def test_heuristic_t1_letter_does_not_follow_the_official_answers():
    """The letter is not the official set's most frequent answer (A, 15 of 38), which the old rule answered."""
    from collections import Counter

    from tests.datafiles import OFFICIAL

    answers = Counter(json.loads(line)["gold"]["answer"]
                      for line in (OFFICIAL / "answer_keys" / "T1.jsonl").read_text().splitlines())
    assert answers.most_common(1)[0][0] != T1_FIXED_LETTER
    assert "reads no answer key" in HeuristicAgent.__doc__


def band_power_result(relative, ratios=None):
    return {"channels": [{"channel": "EEG", "relative_power": relative, "ratios": ratios or {}}]}


@pytest.mark.parametrize(
    ("relative", "peak_to_peak", "label"),
    [
        ({"delta": 0.2, "theta": 0.1, "alpha": 0.2, "beta": 0.3, "gamma": 0.2}, 100, "muscle_contaminated"),
        ({"delta": 0.7, "theta": 0.1, "alpha": 0.1, "beta": 0.05, "gamma": 0.05}, 300, "ocular_contaminated"),
        ({"delta": 0.7, "theta": 0.1, "alpha": 0.1, "beta": 0.05, "gamma": 0.05}, 60, "clean"),
        ({"delta": 0.3, "theta": 0.2, "alpha": 0.4, "beta": 0.07, "gamma": 0.03}, 100, "clean"),
    ],
)
def test_heuristic_t2_rules(relative, peak_to_peak, label):
    results = {
        "compute_band_power": band_power_result(relative),
        "compute_temporal_features": {
            "channels": [{"channel": "EEG", "rms_uv": 20.0, "peak_to_peak_uv": peak_to_peak}]
        },
    }
    answer, calls = drive(HeuristicAgent(INSTANCES["T2"]), lambda name, arguments: results[name])
    assert [call.name for call in calls] == ["compute_band_power", "compute_temporal_features"]
    assert all(call.arguments["record_id"] == "rec-9c1e" for call in calls)
    assert answer["classification"] == label
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T2"]) == []


@pytest.mark.parametrize(
    ("rms", "line_length", "label"), [(40, 3000, "normal"), (300, 3000, "epileptic"), (60, 15000, "epileptic")]
)
def test_heuristic_t3_rules(rms, line_length, label):
    result = {"channels": [{"channel": "EEG", "rms_uv": rms, "line_length_uv_s": line_length}]}
    answer, _ = drive(HeuristicAgent(INSTANCES["T3"]), lambda name, arguments: result)
    assert answer["classification"] == label


@pytest.mark.parametrize(
    ("peak", "ratio", "label"), [(10.0, 0.5, "HC"), (8.0, 0.5, "FTD"), (10.0, 1.4, "FTD"), (8.0, 1.4, "AD")]
)
def test_heuristic_t4_rules(peak, ratio, label):
    results = {
        "compute_psd": {"global_alpha_peak_hz": peak},
        "compute_band_power": band_power_result({}, {"theta_alpha_ratio": ratio}),
    }
    answer, _ = drive(HeuristicAgent(INSTANCES["T4"]), lambda name, arguments: results[name])
    assert answer["classification"] == label


def official_budget_tokens(features, n_channels, n_windows):
    """compute_windowed_features' output estimate (REFERENCE §1.1), which must stay within 8,000 tokens."""
    row = len(json.dumps({**{f: -12.3456 for f in sorted(features)}, "t_start": 0.0, "t_end": 0.0})) + 2
    return (n_windows * n_channels * row + 60 * n_channels) // 4


class FakeWindowedRecording:
    """Just enough of the tools for the heuristic: recording info and windowed features from a value function."""

    def __init__(self, duration, channels, value):
        self.duration, self.channels, self.value = duration, channels, value
        self.budgets = []

    def __call__(self, name, arguments):
        if name == "get_recording_info":
            return {"duration_sec": self.duration, "channel_names": self.channels}
        assert name == "compute_windowed_features"
        window, tmin, tmax = arguments["window_sec"], arguments["tmin"], arguments["tmax"]
        channels = arguments.get("channels", self.channels)
        starts = [tmin + i * window for i in range(int(round((tmax - tmin) / window)))]
        self.budgets.append(official_budget_tokens(arguments["features"], len(channels), len(starts)))
        return {
            "channels": [
                {
                    "channel": channel,
                    "windows": [
                        {**self.value(t, arguments["features"]), "t_start": t, "t_end": t + window} for t in starts
                    ],
                }
                for channel in channels
            ]
        }


def test_heuristic_t5_screens_then_refines_a_seizure_within_the_output_budget():
    def line_length(t, features):
        return {"line_length_uv_s": 600.0 if 1000 <= t < 1085 else 100.0}

    recording = FakeWindowedRecording(3600.0, [f"CH{i}" for i in range(23)], line_length)
    answer, calls = drive(HeuristicAgent(INSTANCES["T5"]), recording)
    assert answer == {"action": "final_answer", "seizure_events": [{"onset_sec": 1000.0, "offset_sec": 1085.0}]}
    assert calls[0].name == "get_recording_info"
    assert max(recording.budgets) <= 8000
    assert windows_per_call(["line_length_uv_s"], 23) * 30 < 3600  # the screen needed several calls
    assert len(calls) < 20


def test_heuristic_t5_finds_a_focal_seizure_on_one_channel():
    def line_length(t, features):
        return {"line_length_uv_s": 100.0}

    class Focal(FakeWindowedRecording):
        def __call__(self, name, arguments):
            result = super().__call__(name, arguments)
            for window in result.get("channels", [{}])[0].get("windows", []):
                if 300 <= window["t_start"] < 360:
                    window["line_length_uv_s"] = 300.0
            return result

    answer, _ = drive(HeuristicAgent(INSTANCES["T5"]), Focal(600.0, ["CH0", "CH1", "CH2"], line_length))
    assert answer["seizure_events"] == [{"onset_sec": 300.0, "offset_sec": 360.0}]


def test_heuristic_t5_finds_nothing_in_a_flat_record():
    recording = FakeWindowedRecording(3600.0, ["CH0", "CH1"], lambda t, f: {"line_length_uv_s": 100.0})
    answer, _ = drive(HeuristicAgent(INSTANCES["T5"]), recording)
    assert answer["seizure_events"] == []


def test_heuristic_t6_stages_every_epoch_from_band_powers():
    def relative(t, features):
        epoch = int(t // 30)
        pattern = {  # wake, N2 with spindles, N3, REM
            0: {"delta": 0.3, "theta": 0.1, "alpha": 0.35, "sigma": 0.05, "beta": 0.15, "gamma": 0.05},
            1: {"delta": 0.6, "theta": 0.15, "alpha": 0.05, "sigma": 0.12, "beta": 0.06, "gamma": 0.02},
            2: {"delta": 0.85, "theta": 0.08, "alpha": 0.02, "sigma": 0.02, "beta": 0.02, "gamma": 0.01},
            3: {"delta": 0.5, "theta": 0.3, "alpha": 0.08, "sigma": 0.05, "beta": 0.05, "gamma": 0.02},
        }[min(epoch // 200, 3)]
        return {f"{band}_relative": value for band, value in pattern.items()}

    channels = ["EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal", "Resp oro-nasal", "EMG submental"]
    recording = FakeWindowedRecording(27090.0, channels, relative)
    answer, calls = drive(HeuristicAgent(INSTANCES["T6"]), recording)
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T6"], task="T6", n_epochs=903) == []
    assert [(s["start_epoch"], s["end_epoch"], s["stage"]) for s in answer["hypnogram_rle"]] == [
        (0, 199, "W"), (200, 399, "N2"), (400, 599, "N3"), (600, 902, "REM"),
    ]  # fmt: skip
    assert answer["architecture"] == {"REM_pct": round(303 / 903, 4), "N3_pct": round(200 / 903, 4),
                                      "sleep_efficiency": round(703 / 903, 4)}  # fmt: skip
    assert all(call.arguments.get("channels") == ["EEG Fpz-Cz"] for call in calls[1:])
    assert max(recording.budgets) <= 8000
