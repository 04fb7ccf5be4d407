"""``manage.py import_published``: load the paper's published results onto the board of its suite."""
from django.core.management.base import BaseCommand, CommandError

from leaderboard.board.published import FIXTURE_DIR, PAPER_BOARD, PublishedDataError, import_published


class Command(BaseCommand):
    help = (
        "Load the paper's Tables 2, 4, 5 and 6 (shipped in leaderboard/fixtures/published/) onto a board, "
        "so its 29 models are shown beside this site's runs. Safe to repeat."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--board", default=PAPER_BOARD,
            help=f"Name of the suite whose board shows the rows (default {PAPER_BOARD}, the official release's suite).",
        )
        parser.add_argument(
            "--directory", default=str(FIXTURE_DIR), help="Folder holding the four table CSV files.",
        )

    def handle(self, *args, board, directory, **options):
        try:
            result = import_published(board=board, directory=directory)
        except (PublishedDataError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Board {result.board}: the paper's {result.rows} published rows are loaded. "
            f"{result.models_created} of their models were new to the platform and added; "
            f"{result.models_completed} already known had blank details (family, size, context window, prices) "
            f"filled in from the paper; {result.rows_removed} rows of an earlier import that the paper "
            "no longer lists were removed."
        )
