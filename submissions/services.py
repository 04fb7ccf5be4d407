"""What happens to a submission: inviting its submitter, taking the upload, checking it in the queue, the review.

Files live in ``EEGAB_SUBMISSIONS_DIR/<id>/`` (outside the web root): the archive as uploaded, and what
it unpacks to once checked. A refused archive keeps nothing: its files are deleted and its row says
why. Approval imports the unpacked run (``runs.interchange.importing.import_official_run``) as a run
whose source is ``submission``, in one transaction with the submission's own change.
"""
from __future__ import annotations

import logging
import secrets
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from benchmark.models import ModelSpec, Suite
from runs.interchange.importing import import_official_run
from runs.interchange.official import InterchangeError
from runs.models import Run
from submissions.archive import ArchiveError, Limits, extract_archive
from submissions.checks import check_run
from submissions.models import Submission, Submitter

logger = logging.getLogger(__name__)
KEY_PREFIX = "eegab_sub_"
CHECK_TASK = "submissions.services.check_submission"
#: The check saves its progress at most this often (results checked).
PROGRESS_EVERY = 50
CARD_FIELDS = ("display_name", "provider_model", "organisation", "family", "parameters", "open_weights", "link",
               "methodology")


class SubmissionError(ValueError):
    """A submission that cannot be taken or reviewed; the message says why."""


def directory(submission: Submission) -> Path:
    return Path(settings.EEGAB_SUBMISSIONS_DIR) / str(submission.pk)


def _discard_files(submission: Submission) -> None:
    shutil.rmtree(directory(submission), ignore_errors=True)


# ── submitters ───────────────────────────────────────────────────────────────────────────────


def issue_key(submitter: Submitter) -> str:
    """Give ``submitter`` a new API token (the earlier one stops working) and return it, shown only now."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    submitter.key_hash = Submitter.hash_key(key)
    submitter.save(update_fields=["key_hash"])
    return key


@transaction.atomic
def invite_submitter(*, email: str, name: str = "") -> tuple[Submitter, str, str]:
    """Make a login for ``email`` and its API token; return the submitter, the password and the token (shown once)."""
    email = email.strip()
    if "@" not in email or len(email) > 150:
        raise SubmissionError(f"“{email[:60]}” is not an email address.")
    users = get_user_model()
    if users.objects.filter(username__iexact=email).exists():
        raise SubmissionError(f"There is already a login named {email}.")
    password = secrets.token_urlsafe(12)
    user = users.objects.create_user(username=email, email=email, password=password)
    submitter = Submitter.objects.create(user=user, name=name.strip() or email, key_hash=secrets.token_hex(32))
    return submitter, password, issue_key(submitter)


def submitter_for_key(key: str) -> Submitter | None:
    """The submitter whose API token is ``key``, or None."""
    if not key.startswith(KEY_PREFIX):
        return None
    return Submitter.objects.select_related("user").filter(key_hash=Submitter.hash_key(key), user__is_active=True).first()


# ── taking an upload ─────────────────────────────────────────────────────────────────────────

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def submission_rate() -> tuple[int, int]:
    """``EEGAB_SUBMISSION_RATE`` as (uploads, seconds): "10/day" is (10, 86400)."""
    count, _, period = str(settings.EEGAB_SUBMISSION_RATE).partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def over_rate(submitter: Submitter) -> str:
    """Why ``submitter`` may not upload now (their uploads within the period are at the rate), else ""."""
    count, seconds = submission_rate()
    since = timezone.now() - timedelta(seconds=seconds)
    if Submission.objects.filter(submitter=submitter, created_at__gte=since).count() >= count:
        return f"At most {count} uploads in {settings.EEGAB_SUBMISSION_RATE.partition('/')[2]}: try again later."
    return ""



def submittable_suites():
    """The suites that take submissions: those whose references are public (a held-out key stays unused)."""
    return Suite.objects.filter(references=Suite.References.PUBLIC).order_by("name")


def submit(*, submitter: Submitter, suite: Suite, card: dict, upload) -> Submission:
    """Take an uploaded archive (a Django ``UploadedFile``) with the model's card; its check is queued.

    Raises :class:`SubmissionError` for a held-out suite, an archive over the size cap or a submitter
    over ``EEGAB_SUBMISSION_RATE``, before anything is stored.
    """
    if suite.references != Suite.References.PUBLIC:
        raise SubmissionError(f"Suite {suite.name} holds its references out: it takes no submissions.")
    refused = over_rate(submitter)
    if refused:
        raise SubmissionError(refused)
    limit = settings.EEGAB_SUBMISSION_MAX_BYTES
    if upload.size > limit:
        raise SubmissionError(f"The archive is {upload.size} bytes; at most {limit} are taken.")
    with transaction.atomic():
        submission = Submission.objects.create(
            submitter=submitter, suite=suite, archive_name=_printable_name(upload.name), archive_bytes=upload.size,
            **{name: card[name] for name in CARD_FIELDS if name in card},
        )
        target = directory(submission)
        target.mkdir(parents=True, exist_ok=False)
        try:
            with open(target / "archive", "xb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
        except OSError:
            _discard_files(submission)
            raise
        transaction.on_commit(lambda: queue_check(submission.pk))
    return submission


def _printable_name(name) -> str:
    """An uploaded file's name as stored and shown: no control characters (PostgreSQL refuses NUL), 255 at most."""
    return "".join(character for character in str(name or "archive") if ord(character) >= 32 and ord(character) != 127)[:255]


def queue_check(submission_id: int) -> None:
    """Send the check to the queue workers."""
    from runs.queue.dispatch import send_task

    send_task(CHECK_TASK, submission_id, group=f"submission-{submission_id}")


# ── the check (a queue task) ─────────────────────────────────────────────────────────────────


def _refuse(submission: Submission, problems: list[str]) -> None:
    _discard_files(submission)
    Submission.objects.filter(pk=submission.pk).update(
        status=Submission.Status.REFUSED, verified=False, report={"problems": problems}, checked_at=timezone.now(),
    )


def check_submission(submission_id: int) -> str:
    """Unpack, check and rescore a submission; returns its status after the check.

    Only a submission being checked is touched (a task run twice does nothing the second time).
    """
    submission = Submission.objects.select_related("suite").filter(pk=submission_id).first()
    if submission is None or submission.status != Submission.Status.CHECKING:
        return submission.status if submission else "missing"
    unpacked = directory(submission) / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    try:
        root = extract_archive(directory(submission) / "archive", unpacked,
                               limits=Limits(archive_bytes=settings.EEGAB_SUBMISSION_MAX_BYTES))
    except ArchiveError as error:
        _refuse(submission, error.problems)
        return Submission.Status.REFUSED
    except FileNotFoundError:
        _refuse(submission, ["the archive was lost before it was checked: upload it again"])
        return Submission.Status.REFUSED

    def progress(done: int, total: int) -> None:
        if done % PROGRESS_EVERY == 0 or done == total:
            Submission.objects.filter(pk=submission.pk).update(progress={"done": done, "total": total})

    try:
        report = check_run(root, submission.suite, progress=progress)
    except Exception:  # a defect of ours must not leave the submission "being checked" for good
        logger.exception("submission %s could not be checked", submission.pk)
        _refuse(submission, ["the check failed on this site's side: staff were told; upload it again later"])
        return Submission.Status.REFUSED
    if report.problems:
        _refuse(submission, report.problems)
        return Submission.Status.REFUSED
    (directory(submission) / "archive").unlink(missing_ok=True)  # what it unpacked to is what is kept
    relative = str(root.relative_to(directory(submission)))
    Submission.objects.filter(pk=submission.pk, status=Submission.Status.CHECKING).update(
        status=Submission.Status.PENDING, verified=report.verified, report={**report.as_json(), "root": relative},
        checked_at=timezone.now(),
    )
    return Submission.Status.PENDING


# ── the review ───────────────────────────────────────────────────────────────────────────────


def _model_for(submission: Submission) -> ModelSpec:
    """The model of the card: the one of that name and provider string, or a new one."""
    existing = ModelSpec.objects.filter(name=submission.display_name).first()
    if existing is not None:
        if existing.provider_model != submission.provider_model:
            raise SubmissionError(f"A model named {submission.display_name} exists with another provider string "
                                  f"({existing.provider_model}); the card needs a name of its own.")
        return existing
    notes = "\n".join(part for part in (f"Organisation: {submission.organisation}",
                                        f"Link: {submission.link}" if submission.link else "",
                                        submission.methodology) if part)
    return ModelSpec.objects.create(
        name=submission.display_name, provider_model=submission.provider_model, family=submission.family,
        parameters="" if submission.parameters == "not reported" else submission.parameters[:32],
        is_open_weight=submission.open_weights, notes=notes,
    )


PUBLISH_TASK = "submissions.services.publish_submission"


@transaction.atomic
def request_approval(submission_id: int, *, by, reason: str = "") -> Submission:
    """Approve a checked submission from a page: it is published by a queue worker (importing a full run
    takes longer than a page should wait)."""
    submission = Submission.objects.select_for_update().get(pk=submission_id)
    if submission.status != Submission.Status.PENDING:
        raise SubmissionError(f"Submission {submission.pk} is {submission.get_status_display()}: only a checked "
                              "submission waiting for review can be approved.")
    submission.status = Submission.Status.PUBLISHING
    submission.review_reason, submission.reviewed_by, submission.reviewed_at = reason.strip(), by, timezone.now()
    submission.save(update_fields=["status", "review_reason", "reviewed_by", "reviewed_at"])

    def send() -> None:
        from runs.queue.dispatch import send_task

        send_task(PUBLISH_TASK, submission.pk, group=f"submission-{submission.pk}")

    transaction.on_commit(send)
    return submission


def publish_submission(submission_id: int) -> str:
    """The queue task of an approval: publish the submission, or put it back for review saying why not."""
    submission = Submission.objects.filter(pk=submission_id).first()
    if submission is None or submission.status != Submission.Status.PUBLISHING:
        return submission.status if submission else "missing"
    try:
        approve(submission_id, by=submission.reviewed_by, reason=submission.review_reason)
    except SubmissionError as error:
        report = {**(submission.report or {}), "publish_error": str(error)}
        Submission.objects.filter(pk=submission_id, status=Submission.Status.PUBLISHING).update(
            status=Submission.Status.PENDING, report=report)
        return Submission.Status.PENDING
    return Submission.Status.APPROVED


@transaction.atomic
def approve(submission_id: int, *, by, reason: str = "") -> Submission:
    """Publish a checked submission as a run of source ``submission``; an earlier approved one of the same
    model and suite is superseded. Raises :class:`SubmissionError`."""
    submission = Submission.objects.select_for_update().select_related("suite").get(pk=submission_id)
    if submission.status not in (Submission.Status.PENDING, Submission.Status.PUBLISHING):
        raise SubmissionError(f"Submission {submission.pk} is {submission.get_status_display()}: only a checked "
                              "submission waiting for review can be approved.")
    model = _model_for(submission)
    root = directory(submission) / submission.report.get("root", "unpacked")
    try:
        run = import_official_run(path=root, suite=submission.suite, model=model,
                                  name=f"{submission.display_name} (submission {submission.pk})")
    except InterchangeError as error:
        raise SubmissionError(f"The run could not be imported: {error}") from None
    run.source, run.created_by = Run.Source.SUBMISSION, by
    run.save(update_fields=["source", "created_by"])
    earlier = Submission.objects.filter(
        suite=submission.suite, provider_model=submission.provider_model, display_name=submission.display_name,
        status=Submission.Status.APPROVED,
    ).exclude(pk=submission.pk)
    earlier.update(status=Submission.Status.SUPERSEDED, superseded_by=submission)
    submission.status, submission.run = Submission.Status.APPROVED, run
    submission.review_reason, submission.reviewed_by, submission.reviewed_at = reason.strip(), by, timezone.now()
    submission.report = {key: value for key, value in (submission.report or {}).items() if key != "publish_error"}
    submission.save(update_fields=["status", "run", "review_reason", "reviewed_by", "reviewed_at", "report"])
    return submission


@transaction.atomic
def reject(submission_id: int, *, by, reason: str) -> Submission:
    """Reject a checked submission with a reason the submitter reads; its files are deleted."""
    if not reason.strip():
        raise SubmissionError("A rejection needs a reason: the submitter reads it.")
    submission = Submission.objects.select_for_update().get(pk=submission_id)
    if submission.status not in (Submission.Status.PENDING, Submission.Status.CHECKING):
        raise SubmissionError(f"Submission {submission.pk} is {submission.get_status_display()}: it cannot be rejected.")
    submission.status = Submission.Status.REJECTED
    submission.review_reason, submission.reviewed_by, submission.reviewed_at = reason.strip(), by, timezone.now()
    submission.save(update_fields=["status", "review_reason", "reviewed_by", "reviewed_at"])
    transaction.on_commit(lambda: _discard_files(submission))
    return submission
