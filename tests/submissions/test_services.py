"""A submission from upload to publication: checked in the queue, verified or not, refused keeping nothing,
approved into a run of source submission that scores as the run it came from, superseded, rejected."""
import pytest

from benchmark.models import ModelSpec, Suite
from leaderboard.summaries.scoring import refresh_run_summary
from runs.models import Episode, Run
from submissions import services
from submissions.models import Submission
from tests.submissions.conftest import CARD, upload, zip_directory

pytestmark = pytest.mark.django_db


@pytest.fixture
def submit(django_capture_on_commit_callbacks):
    """Submit as the upload does; the check it queues runs when the upload's transaction commits."""

    def submitted(submitter, suite, data: bytes, **card) -> Submission:
        with django_capture_on_commit_callbacks(execute=True):
            submission = services.submit(submitter=submitter, suite=suite, card={**CARD, **card}, upload=upload(data))
        submission.refresh_from_db()
        return submission

    return submitted


def files(settings) -> list:
    return sorted(path for path in settings.EEGAB_SUBMISSIONS_DIR.rglob("*") if path.is_file())


def test_an_exported_run_is_checked_verified_approved_and_scores_as_the_run_it_came_from(played, submitter, staff_user, submit):
    suite, original, root = played
    submission = submit(submitter, suite, zip_directory(root))
    assert submission.status == Submission.Status.PENDING and submission.verified is True
    assert submission.report["reasons"] == [] and submission.progress["done"] == submission.progress["total"] > 0
    assert Run.objects.filter(source=Run.Source.SUBMISSION).count() == 0  # nothing published before review
    approved = services.approve(submission.pk, by=staff_user, reason="looks right")
    run = approved.run
    assert run.source == Run.Source.SUBMISSION and run.model.name == CARD["display_name"]
    assert run.episodes.count() == original.episodes.count()
    ours, theirs = refresh_run_summary(run).tasks, refresh_run_summary(original).tasks
    assert {task: ours[task]["primary_score"] for task in ours} == {task: theirs[task]["primary_score"] for task in theirs}
    for task, entry in submission.report["tasks"].items():
        assert entry["score"] == pytest.approx(theirs[task]["primary_score"])
    with pytest.raises(services.SubmissionError, match="only a checked submission"):
        services.approve(submission.pk, by=staff_user)


def test_a_missing_trajectory_leaves_it_unverified_saying_which(exported, submitter, submit):
    suite, _, root = exported
    missing = sorted((root / "T3" / "trajectories").iterdir())[0]
    submission = submit(submitter, suite, zip_directory(root, skip={f"T3/trajectories/{missing.name}"}))
    assert submission.status == Submission.Status.PENDING and submission.verified is False
    assert submission.report["reasons"] == [f"{missing.stem}: no trajectory (T3/trajectories/{missing.name})"]


@pytest.mark.parametrize("extra, expected", [
    ({"../escape.jsonl": b"{}"}, "../escape.jsonl: a path that climbs out of the archive (..)"),
    ({"heuristic-run/trajectories/bomb.jsonl": b"\0" * (40 << 20)}, "decompression bomb"),
])
def test_a_hostile_archive_is_refused_with_its_reason_and_nothing_is_kept(exported, submitter, settings, extra, expected, submit):
    suite, _, root = exported
    submission = submit(submitter, suite, zip_directory(root, extra=extra))
    assert submission.status == Submission.Status.REFUSED and submission.verified is False
    assert any(expected in problem for problem in submission.report["problems"]), submission.report
    assert files(settings) == [] and not Run.objects.filter(source=Run.Source.SUBMISSION).exists()


def test_a_duplicated_scenario_line_is_refused_naming_its_file_and_line(exported, submitter, settings, submit):
    suite, _, root = exported
    rows = (root / "T2" / "runs.jsonl").read_text().splitlines()
    (root / "T2" / "runs.jsonl").write_text("\n".join([*rows, rows[0]]) + "\n")
    submission = submit(submitter, suite, zip_directory(root))
    assert submission.status == Submission.Status.REFUSED
    assert any(problem.startswith(f"T2/runs.jsonl, line {len(rows) + 1}: scenario ") and "is there twice" in problem
               for problem in submission.report["problems"])
    assert files(settings) == [] and Episode.objects.filter(run__source=Run.Source.SUBMISSION).count() == 0


def test_a_held_out_suite_or_an_archive_too_large_is_not_taken(exported, submitter, settings, submit):
    suite, _, root = exported
    settings.EEGAB_SUBMISSION_MAX_BYTES = 100
    with pytest.raises(services.SubmissionError, match="at most 100 are taken"):
        submit(submitter, suite, zip_directory(root))
    Suite.objects.filter(pk=suite.pk).update(references=Suite.References.HELD_OUT)
    suite.refresh_from_db()
    with pytest.raises(services.SubmissionError, match="takes no submissions"):
        submit(submitter, suite, b"PK")
    assert Submission.objects.count() == 0 and files(settings) == []


def test_a_later_approval_supersedes_the_earlier_and_a_rejection_keeps_its_reason(
    exported, submitter, staff_user, settings, submit, django_capture_on_commit_callbacks
):
    suite, _, root = exported
    first = services.approve(submit(submitter, suite, zip_directory(root)).pk, by=staff_user)
    second = services.approve(submit(submitter, suite, zip_directory(root)).pk, by=staff_user)
    first.refresh_from_db()
    assert first.status == Submission.Status.SUPERSEDED and first.superseded_by == second
    assert first.run.model == second.run.model  # one model: the later run is its row by default
    third = submit(submitter, suite, zip_directory(root))
    with pytest.raises(services.SubmissionError, match="needs a reason"):
        services.reject(third.pk, by=staff_user, reason=" ")
    with django_capture_on_commit_callbacks(execute=True):  # the files go once the rejection is committed
        rejected = services.reject(third.pk, by=staff_user, reason="Trajectories were edited by hand.")
    assert rejected.status == Submission.Status.REJECTED and rejected.review_reason == "Trajectories were edited by hand."
    assert not (settings.EEGAB_SUBMISSIONS_DIR / str(third.pk)).exists()


def test_a_card_may_not_take_the_name_of_another_model(exported, submitter, staff_user, submit):
    suite, _, root = exported
    taken = ModelSpec.objects.create(name="Taken-1", provider_model="other/taken-1")
    submission = submit(submitter, suite, zip_directory(root), display_name=taken.name)
    with pytest.raises(services.SubmissionError, match="exists with another provider string"):
        services.approve(submission.pk, by=staff_user)
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.PENDING


def test_an_approval_from_a_page_is_published_by_a_queue_worker_or_put_back_saying_why(
    exported, submitter, staff_user, submit, django_capture_on_commit_callbacks
):
    suite, _, root = exported
    taken = ModelSpec.objects.create(name="Taken-1", provider_model="other/taken-1")
    submission = submit(submitter, suite, zip_directory(root), display_name=taken.name)  # a name taken
    with django_capture_on_commit_callbacks(execute=True):
        services.request_approval(submission.pk, by=staff_user, reason="ok")
    submission.refresh_from_db()
    assert submission.status == Submission.Status.PENDING and "exists with another provider string" in submission.report["publish_error"]
    Submission.objects.filter(pk=submission.pk).update(display_name="A name of its own")
    with django_capture_on_commit_callbacks(execute=True):
        services.request_approval(submission.pk, by=staff_user, reason="ok")
    submission.refresh_from_db()
    assert submission.status == Submission.Status.APPROVED and "publish_error" not in submission.report
    assert submission.run.source == Run.Source.SUBMISSION and submission.reviewed_by == staff_user
    assert services.publish_submission(submission.pk) == Submission.Status.APPROVED  # a task run twice does nothing
    assert Run.objects.filter(source=Run.Source.SUBMISSION).count() == 1


def test_an_archive_name_with_control_characters_is_stored_without_them_and_a_failing_check_refuses(
    exported, submitter, submit, monkeypatch, settings
):
    suite, _, root = exported
    submission = services.submit(submitter=submitter, suite=suite, card=CARD,
                                 upload=upload(zip_directory(root), name="run\x00\x1b.zip"))
    assert submission.archive_name == "run.zip"

    def broken(*args, **kwargs):
        raise KeyError("a defect of ours")

    monkeypatch.setattr(services, "check_run", broken)
    assert services.check_submission(submission.pk) == Submission.Status.REFUSED
    submission.refresh_from_db()
    assert submission.report["problems"] == ["the check failed on this site's side: staff were told; upload it again later"]
    assert files(settings) == []
