"""``manage.py qcluster``: django-q2's cluster, with what episodes use loaded once before its workers fork.

django-q2 forks its worker processes from the cluster's process. Without this, every worker
imports litellm and the tool registry on its first episode (seconds of processor time each, so
a cluster of 16 workers spends a minute on imports before its episodes move) and holds its own
copy of them; loaded here, the workers share the parent's pages.
"""
from django.db import connections
from django_q.management.commands.qcluster import Command as ClusterCommand

from runs.queue.worker import settle_process


class Command(ClusterCommand):
    help = ClusterCommand.help + " Episodes' modules (litellm, the EEG tools) are loaded before the workers fork."

    def handle(self, *args, **options):
        import runs.tasks  # noqa: F401  (the queue task's module, shared by the forked workers)

        settle_process(model=None)
        connections.close_all()  # a forked worker must not share the parent's database connection
        super().handle(*args, **options)
