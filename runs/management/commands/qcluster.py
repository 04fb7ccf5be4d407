"""``manage.py qcluster``: django-q2's cluster, with what episodes use loaded once before its workers fork.

django-q2 forks its worker processes from the cluster's process. Without this, every worker
imports litellm and the tool registry on its first episode (seconds of processor time each, so
a cluster of 16 workers spends a minute on imports before its episodes move) and holds its own
copy of them; loaded here, the workers share the parent's pages. Each worker then warms up as it
starts (``runs.queue.worker.warm_worker``), before it takes a task.

The cluster also counts its free workers (``runs.queue.dispatch.count_free_workers``): a worker
counts itself free once it has warmed up and each time it ends a task, and the cluster pulls a
task off the broker only for a free worker (``runs.queue.dispatch.cluster_broker``).
"""
from django.db import connections
from django_q.conf import Conf
from django_q.management.commands.qcluster import Command as ClusterCommand
from django_q.signals import post_execute_in_worker, post_spawn

from runs.queue.dispatch import count_free_workers, worker_free
from runs.queue.worker import settle_process, warm_worker


def warm_spawned_worker(sender, proc_name, **kwargs):
    """django-q2's ``post_spawn``: a worker process has started; once warmed up, it is free for a task."""
    warm_worker(proc_name)
    worker_free()


def free_after_task(sender, **kwargs):
    """django-q2's ``post_execute_in_worker``: the worker has ended a task and takes the next."""
    worker_free()


class Command(ClusterCommand):
    help = ClusterCommand.help + " Episodes' modules (litellm, the EEG tools) are loaded before the workers fork."

    def handle(self, *args, **options):
        import runs.tasks  # noqa: F401  (the queue task's module, shared by the forked workers)

        settle_process(model=None)
        count_free_workers(int(Conf.WORKERS))
        post_spawn.connect(warm_spawned_worker, dispatch_uid="runs.warm_spawned_worker")
        post_execute_in_worker.connect(free_after_task, dispatch_uid="runs.free_after_task")
        connections.close_all()  # a forked worker must not share the parent's database connection
        super().handle(*args, **options)
