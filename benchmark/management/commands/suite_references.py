"""``manage.py suite_references SUITE {public,held-out}``: publish a suite's references or hold them out."""
from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Suite
from benchmark.releases import set_references


class Command(BaseCommand):
    help = (
        "Say who may learn a suite's answers. public: its answer keys are published (as the official "
        "release's are) and ended episodes are shown to everyone; held-out: only staff see its episodes, "
        "instances and per-item scores, and everyone else, agents included, run-level scores only."
    )

    def add_arguments(self, parser):
        parser.add_argument("suite", help="the suite's name (manage.py list_suites)")
        parser.add_argument("references", choices=Suite.References.values)

    def handle(self, *args, **options):
        suite = Suite.objects.filter(name=options["suite"]).first()
        if suite is None:
            raise CommandError(f"no suite is named {options['suite']!r}; manage.py list_suites lists them")
        if set_references(suite, options["references"]):
            self.stdout.write(f"Suite {suite.name}: references are now {suite.references}.")
        else:
            self.stdout.write(f"Suite {suite.name}: references were already {suite.references}; nothing changed.")
