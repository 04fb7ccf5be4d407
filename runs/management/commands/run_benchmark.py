"""``manage.py run_benchmark``: run a model on a suite, in this process (``--sync``) or on the queue workers.

A run that cannot start (its key unset, a model name litellm does not know) is refused before
anything is stored; a run that does not complete ends the command with its reason and exit
status 1 (``runs.management.console``).
"""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from benchmark.models import Suite
from benchmark.scoring import TASK_IDS
from benchmark.wording import PROMPT_SETS, default_prompt_set
from runs import specs
from runs.management.console import check_can_start, drive, end_lost_runs, positive
from runs.model.agent import PAPER_MAX_TOKENS, PAPER_PROTOCOL, PAPER_TEMPERATURE
from runs.model.routing import check_key_env
from runs.models import MAX_EPOCHS
from runs.services import create_run

DEFAULT_SUITE = "demo"


def resolve_suite(name: str | None) -> Suite:
    suite = Suite.objects.select_related("release").filter(name=name or DEFAULT_SUITE).first()
    if suite is not None:
        return suite
    known = ", ".join(Suite.objects.order_by("name").values_list("name", flat=True)) or "none"
    if name is None:
        raise CommandError(
            f"No --suite given and there is no '{DEFAULT_SUITE}' suite (suites: {known}). "
            "Build the demo with `python manage.py build_demo_release` or import a release."
        )
    raise CommandError(f"Unknown suite {name!r}; the suites are: {known}.")


def resolve_tasks(value: str | None, suite: Suite) -> list[str]:
    available = sorted(set(suite.instances.values_list("task__code", flat=True)))
    if value is None:
        return available
    tasks = [code.strip().upper() for code in value.split(",") if code.strip()]
    unknown = [code for code in tasks if code not in TASK_IDS]
    if unknown or not tasks:
        named = ", ".join(unknown) if unknown else repr(value)
        raise CommandError(f"Unknown task(s) {named}; the tasks are {', '.join(TASK_IDS)}.")
    missing = [code for code in tasks if code not in available]
    if missing:
        raise CommandError(f"Suite {suite.name} has no instances of {', '.join(missing)}.")
    return tasks


class Command(BaseCommand):
    help = (
        "Run a model (a litellm model string, or baseline/heuristic or baseline/random) on tasks of a suite "
        "and print the per-task metrics with Overall. Episodes are queued for `python manage.py qcluster` "
        "unless --sync plays them in this process."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--model", required=True, help="litellm model string, or baseline/heuristic or baseline/random"
        )
        parser.add_argument("--model-name", default="", help="display name of the model (default: the model string)")
        parser.add_argument("--run-name", default="", help="display name of the run")
        parser.add_argument("--api-base", default="", help="base URL of an OpenAI-compatible server")
        parser.add_argument("--api-key-env", default="", help="NAME of the environment variable holding the key")
        parser.add_argument(
            "--unlisted-model", action="store_true",
            help="run a model that litellm's bundled model map does not list (one newer than the installed litellm); "
            "without it such a name is refused as a likely typo",
        )
        parser.add_argument(
            "--protocol", "--tool-protocol", dest="tool_protocol", choices=["text", "native", "auto"],
            default=PAPER_PROTOCOL,
            help="how the model calls tools: text (JSON actions in its reply; the default, as in the paper), native "
            "function calling, or auto (native where litellm says the model supports it)",
        )
        parser.add_argument(
            "--max-tokens", type=int, default=PAPER_MAX_TOKENS,
            help=f"tokens per model reply (default {PAPER_MAX_TOKENS}, as the official configs)",
        )
        parser.add_argument(
            "--temperature", type=float, default=PAPER_TEMPERATURE,
            help=f"sampling temperature, 0 to 2 (default {PAPER_TEMPERATURE})",
        )
        parser.add_argument(
            "--prompt-set", choices=PROMPT_SETS,
            help="whose wording the model reads: official (the official package's; needs `pip install -e "
            "'.[official]'`) or platform (ours). Default: official where the package is installed",
        )
        parser.add_argument(
            "--transport",
            choices=["auto", "litellm", "direct"],
            help="how model calls go out: through litellm, or straight to an OpenAI-compatible --api-base "
            "(default auto: direct for a self-hosted model litellm does not list)",
        )
        parser.add_argument("--suite", help=f"suite name (default: {DEFAULT_SUITE})")
        parser.add_argument("--tasks", help="comma-separated task codes, e.g. T2,T5 (default: every task of the suite)")
        parser.add_argument("--limit", type=int, help="at most this many instances per task (a smoke run)")
        parser.add_argument(
            "--epochs", type=int, default=1,
            help=f"play each instance this many times, 1 to {MAX_EPOCHS} (default 1); the summary then gives each "
            "task's mean and standard deviation over epochs and how often an instance's correctness flips",
        )
        parser.add_argument("--concurrency", type=int, default=4, help="episodes of this run at once (default 4)")
        parser.add_argument("--requests-per-minute", type=int, help="model calls per minute for this run")
        parser.add_argument("--tokens-per-minute", type=int, help="prompt+completion tokens per minute for this run")
        parser.add_argument("--sync", action="store_true", help="play the episodes in this process")
        parser.add_argument("--no-wait", action="store_true", help="queue the episodes and return at once")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    def handle(self, *args, **options):
        for option in ("limit", "concurrency", "requests_per_minute", "tokens_per_minute", "max_tokens"):
            positive(options[option], "--" + option.replace("_", "-"))
        if not 1 <= options["epochs"] <= MAX_EPOCHS:
            raise CommandError(f"--epochs must be between 1 and {MAX_EPOCHS}, not {options['epochs']}.")
        if not 0 <= options["temperature"] <= 2:
            raise CommandError(f"--temperature must be between 0 and 2, not {options['temperature']}.")
        suite = resolve_suite(options["suite"])
        tasks = resolve_tasks(options["tasks"], suite)
        key_env = options["api_key_env"]
        try:
            check_key_env(key_env)
            specs.check_model(options["model"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        check_can_start(self, options["model"], api_base=options["api_base"], key_env=key_env, sync=options["sync"],
                        unlisted=options["unlisted_model"])  # fmt: skip
        end_lost_runs(self)

        settings = {
            "tool_protocol": options["tool_protocol"],
            "temperature": options["temperature"],
            "max_tokens": options["max_tokens"],
        }
        if options["transport"]:
            settings["transport"] = options["transport"]
        limits = {"concurrency": options["concurrency"]}
        for option in ("requests_per_minute", "tokens_per_minute"):
            if options[option] is not None:
                limits[option] = options[option]
        try:
            with transaction.atomic():  # a refused run leaves no new model behind either
                model = specs.model_spec_for(options["model"], name=options["model_name"])
                run = create_run(
                    suite=suite,
                    model=model,
                    tasks=tasks,
                    name=options["run_name"],
                    limit=options["limit"],
                    epochs=options["epochs"],
                    api_base=options["api_base"],
                    api_key_env=key_env,
                    settings=settings,
                    prompt_set=options["prompt_set"] or default_prompt_set(),
                    limits=limits,
                )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        drive(
            self,
            run,
            sync=options["sync"],
            concurrency=options["concurrency"],
            wait=not options["no_wait"],
            as_json=options["json"],
        )
