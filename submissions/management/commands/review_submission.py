"""``manage.py review_submission ID --approve|--reject --reason TEXT``: publish a checked submission, or reject it."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from submissions.models import Submission
from submissions.services import SubmissionError, approve, reject


class Command(BaseCommand):
    help = (
        "Approve a checked submission (it becomes a run on its suite's leaderboard, marked submitted, verified or "
        "not) or reject it; the submitter reads the reason on their submissions page."
    )

    def add_arguments(self, parser):
        parser.add_argument("submission", type=int)
        decision = parser.add_mutually_exclusive_group(required=True)
        decision.add_argument("--approve", action="store_true")
        decision.add_argument("--reject", action="store_true")
        parser.add_argument("--reason", default="", help="Why (required to reject; the submitter reads it).")
        parser.add_argument("--by", default="", help="The staff user reviewing (default: none recorded).")

    def handle(self, *args, **options):
        reviewer = None
        if options["by"]:
            reviewer = get_user_model().objects.filter(username=options["by"], is_staff=True).first()
            if reviewer is None:
                raise CommandError(f"No staff user named {options['by']!r}.")
        if not Submission.objects.filter(pk=options["submission"]).exists():
            raise CommandError(f"No submission {options['submission']}.")
        try:
            if options["approve"]:
                submission = approve(options["submission"], by=reviewer, reason=options["reason"])
                self.stdout.write(f"Approved submission {submission.pk}: run {submission.run_id} on {submission.suite.name}, "
                                  f"{'verified' if submission.verified else 'unverified'}.")
            else:
                submission = reject(options["submission"], by=reviewer, reason=options["reason"])
                self.stdout.write(f"Rejected submission {submission.pk}: {submission.review_reason}")
        except SubmissionError as error:
            raise CommandError(str(error)) from None
