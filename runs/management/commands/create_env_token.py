"""``manage.py create_env_token --agent NAME --suite S [--tasks T2 T5] [--limit N]``: an external run and its key."""
from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Suite
from benchmark.wording import PROMPT_SETS
from runs.environment import service as environment


class Command(BaseCommand):
    help = (
        "Open an external run of agent NAME on a suite (one pending episode per instance) and print the key "
        "that lets the agent drive it through the environment API (/api/env/). The key is shown only now."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agent", required=True, help="The agent's name, as the leaderboard shows it.")
        parser.add_argument("--suite", required=True)
        parser.add_argument("--tasks", nargs="+", help="Task codes (default: every task of the suite).")
        parser.add_argument("--limit", type=int, help="At most this many instances per task.")
        parser.add_argument("--name", default="", help="Display name of the run.")
        parser.add_argument("--prompt-set", choices=PROMPT_SETS,
                            help="The wording the agent reads (default: official where the package is installed).")

    def handle(self, *args, **options):
        suite = Suite.objects.filter(name=options["suite"]).first()
        if suite is None:
            raise CommandError(f"No suite is named {options['suite']!r}.")
        tasks = options["tasks"] or sorted(set(suite.instances.values_list("task__code", flat=True)))
        try:
            run, key = environment.open_external_run(
                agent=options["agent"], suite=suite, tasks=tasks, name=options["name"], limit=options["limit"],
                prompt_set=options["prompt_set"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Run {run.pk}: {run.model.name} on {suite.name}, {run.episodes.count()} episodes.")
        self.stdout.write(f"Key (shown only now): {key}")
