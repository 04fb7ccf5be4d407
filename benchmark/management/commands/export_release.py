"""``manage.py export_release SUITE --out DIR``: write a suite back in the official release layout."""

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Suite
from benchmark.releases import ReleaseError, export_release


class Command(BaseCommand):
    help = (
        "Write a suite's scenario, runtime and answer-key files (and manifest and benchmark.json) in the "
        "official layout, line for line as they were imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite", help="suite name (see list_suites)")
        parser.add_argument("--out", required=True, help="directory to write the release to")
        parser.add_argument("--with-data", action="store_true", help="copy the recordings too")

    def handle(self, *args, **options):
        try:
            suite = Suite.objects.select_related("release").get(name=options["suite"])
        except Suite.DoesNotExist:
            raise CommandError(f"no suite named {options['suite']!r}; see manage.py list_suites") from None
        try:
            written = export_release(suite=suite, out_dir=options["out"], with_data=options["with_data"])
        except ReleaseError as exc:
            raise CommandError("nothing exported:\n" + "\n".join(exc.problems)) from None
        self.stdout.write(f"Wrote {len(written)} file(s) to {options['out']}")
