"""``manage.py list_suites``: the suites, one name a line."""

from django.core.management.base import BaseCommand

from benchmark.models import Suite


class Command(BaseCommand):
    help = "Print the name of every suite, one a line."

    def handle(self, *args, **options):
        for name in Suite.objects.order_by("name").values_list("name", flat=True):
            self.stdout.write(name)
