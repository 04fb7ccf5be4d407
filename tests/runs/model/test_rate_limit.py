"""Rate limits: how long a run waits while its last minute is full, counting calls in flight."""
import pytest

from runs.model.rate_limit import RateLimitedAgent, RateLimits, in_flight_calls, rate_limit_wait
from runs.models import Step
from runs.services import append_step
from tests.runs.queue.helpers import episodes_of
from tests.runs.scripted_agent import T2_ANSWER, ScriptedAgent

Kind = Step.Kind


@pytest.mark.parametrize(
    "calls, limits, in_flight, expected",
    [
        ([], RateLimits(1, None), 0, 0.0),
        ([(40.0, 10)], RateLimits(2, None), 0, 0.0),
        ([(40.0, 10), (50.0, 10)], RateLimits(2, None), 0, 40.0),  # the call at 40 s leaves at 100 s
        ([(40.0, 10)], RateLimits(2, None), 1, 40.0),  # one more in flight fills the minute
        ([(40.0, 10)], RateLimits(1, None), 1, 60.0),  # only calls in flight: wait for them
        ([(-5.0, 10)], RateLimits(1, None), 0, 0.0),  # older than the window
        ([(30.0, 600), (45.0, 500)], RateLimits(None, 1000), 0, 30.0),  # 1100 tokens: the first must leave
        ([(30.0, 600), (45.0, 500)], RateLimits(None, 500), 0, 45.0),  # both must leave
        ([(30.0, 100)], RateLimits(None, 1000), 0, 0.0),
    ],
)
def test_rate_limit_wait(calls, limits, in_flight, expected):
    assert rate_limit_wait(calls, now=60.0, limits=limits, in_flight=in_flight) == pytest.approx(expected)


@pytest.mark.django_db
def test_a_rate_limited_agent_waits_while_the_last_minute_is_full(random_run):
    episode = episodes_of(random_run)[0]
    for _ in range(2):
        append_step(episode=episode, kind=Kind.AGENT_MESSAGE, prompt_tokens=10, completion_tokens=5)
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 3:
            raise TimeoutError

    inner = ScriptedAgent([T2_ANSWER])
    agent = RateLimitedAgent(lambda: inner, run_id=random_run.pk, limits=RateLimits(2, None), sleep=sleep)
    with pytest.raises(TimeoutError):
        agent.respond([])
    assert waits == [1.0, 1.0, 1.0] and inner.turn == 0

    free = RateLimitedAgent(lambda: inner, run_id=random_run.pk, limits=RateLimits(3, None), sleep=sleep)
    assert free.respond([]).content and inner.turn == 1 and free.protocol == "text"


@pytest.mark.django_db
def test_calls_in_flight_in_this_process_count_against_the_limit(random_run):
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        raise TimeoutError

    agent = RateLimitedAgent(lambda: ScriptedAgent([T2_ANSWER]), run_id=random_run.pk, limits=RateLimits(1, None),
                             sleep=sleep)  # fmt: skip
    with in_flight_calls.call(random_run.pk), pytest.raises(TimeoutError):
        agent.respond([])
    assert waits == [1.0]
    assert agent.respond([]).content  # once the other call has ended
