"""``manage.py invite_submitter EMAIL [--name NAME]``: let a researcher submit runs, with a login and an API token."""
from django.core.management.base import BaseCommand, CommandError

from submissions.services import SubmissionError, invite_submitter


class Command(BaseCommand):
    help = (
        "Make a login for EMAIL and an API token, both printed here once, to be sent to them. Submitters upload "
        "runs at /submissions/new/ or POST /api/submissions/ (Authorization: Token ...) and see only their own."
    )

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("--name", default="", help="How the submitter is named on their submissions (default: EMAIL).")

    def handle(self, *args, **options):
        try:
            submitter, password, key = invite_submitter(email=options["email"], name=options["name"])
        except SubmissionError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Invited {submitter.name} <{submitter.user.email}> as submitter {submitter.pk}.")
        self.stdout.write(f"Login {submitter.user.get_username()}, password (shown only now): {password}")
        self.stdout.write(f"API token (shown only now): {key}")
        self.stdout.write("They sign in at /accounts/login/ and submit at /submissions/new/, or send "
                          "POST /api/submissions/ with the header 'Authorization: Token <token>'.")
