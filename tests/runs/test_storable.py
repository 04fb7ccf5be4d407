"""Whatever an agent sends is stored, and reads as it sent it, on SQLite and PostgreSQL alike.

PostgreSQL refuses a NUL character in ``text`` and ``jsonb`` and a NaN in ``jsonb``; no database takes
a lone surrogate. ``runs.db.storable`` writes U+FFFD for the first and last and ``"NaN"`` for a NaN,
wherever a step or an episode's outcome is written. CI runs this module on both databases.
"""
import json

import pytest

from runs import db
from runs.cost import Pricing, TokenUsage
from runs.model.reply import Reply
from runs.models import Episode, Status, Step
from runs.queue import worker
from runs.services import append_step
from tests.runs.queue.helpers import episodes_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("steps_keep_their_shapes")]

FFFD = "\ufffd"


@pytest.fixture
def running(random_run):
    """A running episode of the random run, with no step yet."""
    episode = episodes_of(random_run)[0]
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING)
    return episode


def test_nul_surrogates_and_nan_are_replaced_at_any_depth_and_in_keys():
    value = {"a": ["b\x00", {"c\x00": float("nan"), "d": [float("-inf"), 1.5, ("t\ud800",)]}], "e": "ok", "f": 7}
    assert db.storable(value) == {"a": ["b\ufffd", {"c\ufffd": "NaN", "d": ["-Infinity", 1.5, ["t\ufffd"]]}], "e": "ok", "f": 7}
    assert value["a"][0] == "b\x00"  # a copy: the caller's value is left as it was
    assert db.storable("\x00\x00 x \udc80") == "\ufffd\ufffd x \ufffd"
    assert db.storable(float("inf")) == "Infinity"


def test_a_value_with_nothing_to_replace_is_returned_itself():
    value = {"text": "Alpha 8–12 Hz, µV ✓ \U0001f600", "numbers": [1, 2.5, None, True], "nested": {"k": []}}
    assert db.storable(value) is value


def test_a_value_nested_as_deep_as_json_reads_is_made_storable():
    value = json.loads("[" * 900 + '"\\u0000"' + "]" * 900)  # Python's json reads no deeper than ~1,000
    stored = db.storable(value)
    for _ in range(900):
        stored = stored[0]
    assert stored == FFFD


class NulAgent:
    """A text-protocol agent whose replies hold NUL characters everywhere an agent's text goes."""

    protocol = "text"
    pricing = Pricing.free()

    def __init__(self):
        self.turn = 0

    def respond(self, messages, *, tools=None):
        self.turn += 1
        if self.turn == 1:
            action = {"action": "tool_call", "tool_name": "compute_psd", "arguments": {"channels": ["EEG\x00Fz"]}}
        else:
            action = {"action": "final_answer", "classification": "clean", "findings": []}
        return Reply(content="I look\x00 " + json.dumps(action), reasoning="because\x00", usage=TokenUsage(10, 5),
                     finish_reason="stop")


def stored_rows(episode) -> list[dict]:
    """Every value of the episode's row and of its steps, as read back."""
    return list(Step.objects.filter(episode=episode).values()) + list(Episode.objects.filter(pk=episode.pk).values())


def test_a_model_that_sends_nul_characters_has_its_episode_played_and_stored_readably(random_run):
    t2 = random_run.episodes.get(instance__task__code="T2")
    tool_result = {"channels": ["EEG\x00Fz"], "power": float("nan")}  # a tool echoing the argument, and a NaN
    played = worker.play_episode(episode_id=t2.pk, agent=NulAgent(), tool_runner=lambda *args: tool_result)

    assert played.status == Status.COMPLETED and played.scores
    steps = list(played.steps.order_by("index"))
    message, tool = steps[1], steps[2]
    assert message.text.startswith("I look\ufffd ") and message.reasoning == "because\ufffd"
    assert tool.arguments == {"channels": ["EEG\ufffdFz"]}
    assert tool.result["content"] == {"channels": ["EEG\ufffdFz"], "power": "NaN"}
    assert steps[-1].text == "I look\ufffd"  # the final answer's thought: the text outside its JSON
    rows = stored_rows(played)
    assert db.storable(rows) == rows  # nothing left to replace (a NaN would not even equal itself)


def test_the_loops_own_record_of_a_step_is_what_was_stored(running):
    episode = running
    step = Step(episode_id=episode.pk, index=0, kind=Step.Kind.NUDGE, text="x\x00", result={"reason": "r\x00"})
    db.insert_step(step)
    assert (step.text, step.result) == ("x\ufffd", {"reason": "r\ufffd"})  # the conversation goes on from these
    read = Step.objects.get(episode=episode, index=0)
    assert (read.text, read.result) == (step.text, step.result)


def test_an_episodes_outcome_with_nul_characters_is_stored(running):
    episode = running
    values = {"final_answer": {"answer": "B\x00"}, "error_message": "ValueError: bad \x00 byte", "status": Status.FAILED}
    assert db.update_episode(episode.pk, values, status=Status.RUNNING) == 1
    episode.refresh_from_db()
    assert episode.final_answer == {"answer": "B\ufffd"} and episode.error_message == "ValueError: bad \ufffd byte"


def test_a_step_appended_with_nul_characters_is_stored(running):
    step = append_step(episode=running, kind=Step.Kind.ERROR, error="Traceback ... '\x00'")
    assert Step.objects.get(pk=step.pk).error == "Traceback ... '\ufffd'"
