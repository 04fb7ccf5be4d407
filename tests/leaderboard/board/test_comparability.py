"""Which runs are comparable with the paper's rows: ranked among them, or shown with a mark and the reasons."""
import pytest
from django.urls import reverse

from benchmark.models import ModelSpec
from leaderboard.analysis.selectors import TaskAnalysis
from leaderboard.analysis.views import _by_task_score
from leaderboard.board import ordering, ranking
from leaderboard.board.comparability import comparability
from leaderboard.board.published import import_published
from runs.models import Run
from tests.leaderboard.boards import add_run, model_spec, official_suite

pytestmark = pytest.mark.django_db

PAPER = {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}


@pytest.fixture
def paper_board():
    suite = official_suite()
    import_published()
    return suite


def run_on(suite, name="Model", **fields):
    return Run.objects.create(suite=suite, model=model_spec(name), tasks=["T1"], **fields)


@pytest.mark.parametrize("fields, reasons", [
    ({"prompt_set": "official", "settings": PAPER}, []),
    ({"prompt_set": "platform", "settings": PAPER}, ["paraphrased prompts"]),
    ({"prompt_set": "official", "settings": {**PAPER, "tool_protocol": "native"}}, ["tool protocol native"]),
    ({"prompt_set": "official", "settings": {"temperature": 0, "max_tokens": 2048}},
     ["tool protocol auto", "max_tokens 2048 (the paper's: 8192)"]),
    ({"prompt_set": "official", "settings": {**PAPER, "temperature": 0.7}}, ["temperature 0.7 (the paper's: 0)"]),
    ({"prompt_set": "official", "settings": {}, "source": Run.Source.IMPORTED},
     ["tool protocol not recorded", "max_tokens not recorded", "temperature not recorded"]),
    ({"prompt_set": "official", "settings": PAPER, "source": Run.Source.EXTERNAL},
     ["an external agent, called with settings of its own"]),
])
def test_a_run_is_comparable_only_when_made_as_the_papers_runs(paper_board, fields, reasons):
    assert list(comparability(run_on(paper_board, **fields)).reasons) == reasons


def test_a_baseline_or_another_suite_is_not_comparable(paper_board):
    baseline = Run.objects.create(
        suite=paper_board, model=ModelSpec.objects.create(name="heuristic", provider_model="baseline/heuristic"),
        tasks=["T1"], prompt_set="official", settings=PAPER,
    )
    assert comparability(baseline).reasons == ("a built-in baseline, not a model",)
    other = official_suite(name="my-copy")
    assert comparability(run_on(other, prompt_set="official", settings=PAPER)).reasons == ("not the official suite",)
    demo = official_suite(name="eegagentbench-demo", synthetic=True)
    assert "not the official suite" in comparability(run_on(demo, "Other", prompt_set="official")).reasons


def test_only_comparable_runs_are_ranked_among_the_papers_rows(paper_board):
    comparable = add_run(suite=paper_board, model=model_spec("Comparable"), skill=0.95, seed=1)
    paraphrased = add_run(suite=paper_board, model=model_spec("Paraphrased"), skill=0.99, seed=2, prompt_set="platform")
    board = ranking.leaderboard()
    rows = {row.run_id: row for row in board.rows if row.run_id}
    assert board.among_paper_rows
    assert rows[comparable.pk].rank is not None and rows[comparable.pk].comparable
    assert rows[paraphrased.pk].rank is None and rows[paraphrased.pk].comparability.reasons == ("paraphrased prompts",)
    ranked = [row for row in board.rows if row.rank is not None]
    assert [row.rank for row in ranked] == list(range(1, 31))  # the paper's 29 and the comparable run
    # The unranked run keeps its place by Overall (it scores best), without a number.
    assert board.rows[0].run_id == paraphrased.pk and board.rows[1].rank == 1


def test_runs_are_ranked_among_themselves_where_the_paper_has_no_rows(db):
    suite = official_suite(name="my-copy")
    first = add_run(suite=suite, model=model_spec("One"), skill=0.9, seed=1, prompt_set="platform")
    second = add_run(suite=suite, model=model_spec("Two"), skill=0.2, seed=2)
    board = ranking.leaderboard(suite="my-copy")
    assert not board.among_paper_rows
    assert [(row.run_id, row.rank) for row in board.rows] == [(first.pk, 1), (second.pk, 2)]


def test_the_task_page_ranks_comparable_rows_and_marks_the_others(client, paper_board):
    add_run(suite=paper_board, model=model_spec("Paraphrased"), skill=0.99, seed=2, prompt_set="platform",
            tasks=["T3"])  # fmt: skip
    response = client.get(reverse("leaderboard:task", args=["T3"]), {"suite": "eegagentbench"})
    rows = response.context["rows"]
    marked = [row for row in rows if not row["comparable"]]
    assert len(marked) == 1 and marked[0]["task_rank"] is None and marked[0]["reasons"] == ("paraphrased prompts",)
    assert [row["task_rank"] for row in rows if row["comparable"]] == list(range(1, 30))
    html = response.content.decode()
    assert "not comparable</span> <span class=\"reasons\">paraphrased prompts</span>" in html


def test_the_board_run_page_and_api_show_the_mark_and_its_reasons(client, paper_board):
    run = add_run(suite=paper_board, model=model_spec("Native"), skill=0.5, seed=3,
                  settings={**PAPER, "tool_protocol": "native"})  # fmt: skip
    board = client.get(reverse("leaderboard:index")).content.decode()
    assert "not comparable</span>" in board and "tool protocol native" in board
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert "not comparable with the paper</span> tool protocol native" in page
    assert "Prompt set <strong>official</strong>" in page and "max_tokens <strong>8192</strong>" in page
    assert "temperature <strong>0</strong>" in page
    detail = client.get(f"/api/runs/{run.pk}/").json()
    assert detail["comparability"] == {"comparable": False, "reasons": ["tool protocol native"]}
    assert detail["prompt_set"] == "official" and detail["settings"]["tool_protocol"] == "native"
    listed = {row["id"]: row for row in client.get("/api/runs/").json()["results"]}
    assert listed[run.pk]["comparability"]["reasons"] == ["tool protocol native"]
    rows = client.get("/api/leaderboard/").json()["rows"]
    api_row = next(row for row in rows if row["run_id"] == run.pk)
    assert api_row["rank"] is None and api_row["comparable"] is False
    assert api_row["not_comparable_because"] == ["tool protocol native"]
    assert all(row["comparable"] for row in rows if row["source"] == "published")


def test_a_comparable_run_says_so_on_its_page(client, paper_board):
    run = add_run(suite=paper_board, model=model_spec("Good"), skill=0.5, seed=4)
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert '<span class="badge comparable">comparable with the paper</span>' in page


def test_the_task_page_and_the_board_number_rows_by_one_rule():
    def row(name, score, *, shown=True, comparable=True):
        return {"name": name, "metrics": {"macro_f1": score}, "shown_by_default": shown, "comparable": comparable}

    rows = [row("none", None), row("low", 0.2), row("hidden", 0.9, shown=False), row("odd", 0.8, comparable=False),
            row("high", 0.7)]
    numbered = _by_task_score(TaskAnalysis(suite="s", task="T3", name="s", is_synthetic=False, rows=rows,
                                           among_paper_rows=True))
    # a row without a score on the task is listed last without a number, as the board leaves it
    assert [(entry["name"], entry["task_rank"]) for entry in numbered] == [
        ("hidden", None), ("odd", None), ("high", 1), ("low", 2), ("none", None)]
    assert not ordering.is_ranked(None, shown_by_default=True, comparable=True, among_paper_rows=False)
