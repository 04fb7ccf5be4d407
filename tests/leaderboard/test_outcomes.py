"""One rule of a correct answer: the episodes' query (``leaderboard.outcomes``) and ``is_correct`` agree on every case."""
import pytest

from benchmark.scoring.epochs import T6_CORRECT_MACRO_F1, is_correct
from leaderboard.outcomes import with_outcome

pytestmark = pytest.mark.django_db

CASES = {
    "T1": [{"correct": True}, {"correct": False}, {}],
    "T3": [{"correct": True}, {"correct": False}, {"correct": None}],
    "T5": [{"fn": 0, "fp": 0, "tp": 2}, {"fn": 0, "fp": 0, "tp": 0}, {"fn": 1, "fp": 0}, {"fn": 0, "fp": 1}, {}],
    "T6": [{"macro_f1": T6_CORRECT_MACRO_F1}, {"macro_f1": T6_CORRECT_MACRO_F1 - 1e-9}, {"macro_f1": 0.99},
           {"macro_f1": None}, {}],
}


@pytest.mark.parametrize("task", CASES)
def test_the_query_and_is_correct_name_the_same_answers_correct(bench, task):
    episode = bench.episode(bench.alpha, task)
    episodes = type(episode).objects.filter(pk=episode.pk)
    for scores in CASES[task]:
        episodes.update(scores=scores)
        expected = "correct" if is_correct(task, scores) else "wrong"
        assert with_outcome(episodes).get().outcome == expected, (task, scores)
