"""Writes that touch several rows at once: creating a run, appending steps, retrying an episode, ending a run."""
import random
from collections import defaultdict
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from benchmark.models import Instance, ModelSpec, Suite
from benchmark.releases import new_record_id
from benchmark.wording import check_prompt_set, default_prompt_set
from runs import db
from runs.agents import is_baseline
from runs.cost import kept_litellm_rates
from runs.limits import check_limits
from runs.model.routing import check_api_base, check_key_env, check_transport
from runs.models import MAX_EPOCHS, Episode, Run, Status, Step


@transaction.atomic
def create_run(
    *,
    suite: Suite,
    model: ModelSpec,
    tasks: list[str],
    name: str = "",
    limit: int | None = None,
    prompt_set: str | None = None,
    epochs: int = 1,
    **options,
) -> Run:
    """Create a run and one pending episode per selected instance and epoch, all or nothing.

    Parameters
    ----------
    suite, model
        What to run, and on what.
    tasks
        Task codes, e.g. ``["T2", "T5"]``; each must have instances in ``suite``.
    name
        Display name of the run.
    limit
        At most this many instances per task, the first ones by position (for smoke tests).
    prompt_set
        Whose wording the model reads (``benchmark.wording``); by default the official package's
        where it is installed, else the platform's. A run to be played here needs its prompt set
        usable here (``PromptSetUnavailable``, a ValueError, says how to install the package); an
        imported run only records the one it was made with.
    epochs
        How many times each instance is played, 1 to ``MAX_EPOCHS``: epoch ``e`` (0-based) has
        one episode per instance, each with a record id of its own.
    **options
        Other ``Run`` fields: ``api_base``, ``api_key_env``, ``settings``, ``limits``,
        ``source``, ``created_by``.
    """
    codes = sorted(set(tasks))
    if not codes:
        raise ValueError("Select at least one task.")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of instances per task, not {limit}.")
    available = set(suite.instances.values_list("task__code", flat=True).distinct())
    missing = [code for code in codes if code not in available]
    if missing:
        raise ValueError(f"Suite {suite.name} has no instances of {', '.join(missing)}.")

    prompt_set = prompt_set or default_prompt_set()
    if not 1 <= epochs <= MAX_EPOCHS:
        raise ValueError(f"epochs must be between 1 and {MAX_EPOCHS}, not {epochs}.")
    run = Run(
        suite=suite, model=model, tasks=codes, name=name, prompt_set=prompt_set, epochs=epochs, **options
    )
    if run.source != Run.Source.IMPORTED:
        check_prompt_set(prompt_set)
    run.full_clean()
    check_limits(run.limits)
    check_key_env(run.api_key_env)
    check_api_base(run.api_base)
    if not is_baseline(model.provider_model):
        check_transport(model.provider_model, run.api_base, (run.settings or {}).get("transport"))
        keep_litellm_rates(model)
    run.save()
    instances = []
    for code in codes:
        instances.extend(suite.instances.filter(task__code=code).order_by("position", "id")[:limit])
    plays = [(epoch, instance) for epoch in range(epochs) for instance in instances]
    # Episodes get their ids in a random order, so that an id (or a list in id order) tells nothing
    # of the instance or epoch it plays.
    random.SystemRandom().shuffle(plays)
    record_ids = episode_record_ids([instance for _, instance in plays])
    Episode.objects.bulk_create([
        Episode(run=run, instance=instance, epoch=epoch, record_id=record_id)
        for (epoch, instance), record_id in zip(plays, record_ids)
    ])
    return run


def keep_litellm_rates(model: ModelSpec) -> None:
    """Keep on ``model`` its rates in the installed litellm's price map, unless it already has them."""
    kept = kept_litellm_rates(model.provider_model)
    if model.litellm_rates != kept:
        model.litellm_rates = kept
        model.save(update_fields=["litellm_rates"])


def episode_record_ids(instances: Sequence[Instance]) -> list[str]:
    """A record id of its own for a new episode on each of ``instances`` (the episodes of one run).

    Each id has the shape of its instance's release id (``benchmark.releases.new_record_id``) and is
    shared with no other episode of that instance and none of the others drawn here, so the id an
    agent sees leads to its own episode only. The suite's id of the instance is never drawn either.
    An instance listed several times (a run's epochs) gets a different id each time, so nothing an
    agent sees tells it that two episodes play the same recording.
    """
    used: dict[int, set[str]] = defaultdict(set)
    played = {instance.pk for instance in instances}  # an instance listed once per epoch is looked up once
    for instance_id, record_id in Episode.objects.filter(instance__in=played).values_list("instance_id", "record_id"):
        used[instance_id].add(record_id)
    drawn: set[str] = set()
    ids = []
    for instance in instances:
        taken = used[instance.pk] | drawn | {instance.record_id}
        record_id = new_record_id(taken, like=instance.release_record_id)
        drawn.add(record_id)
        used[instance.pk].add(record_id)
        ids.append(record_id)
    return ids


def append_step(*, episode: Episode, kind: str, index: int | None = None, **fields) -> Step:
    """Append a step to ``episode`` at the next index, so indexes always run 0 … n-1.

    The episode row is locked while the next index is counted, so concurrent writers to one
    episode take turns instead of reading the same step count. A writer that numbers its own
    steps (the episode loop, sole writer of the episode it claimed) passes ``index`` instead:
    the step is then a single INSERT, and the unique (episode, index) constraint refuses an
    index that is taken. Its values are made ``runs.db.storable`` first, as every step's are.
    """
    fields = {name: db.storable(value) for name, value in fields.items()}
    if index is not None:
        return Step.objects.create(episode_id=episode.pk, index=index, kind=kind, **fields)
    with transaction.atomic():
        locked = Episode.objects.select_for_update().only("id").get(pk=episode.pk)
        return Step.objects.create(episode=locked, index=locked.steps.count(), kind=kind, **fields)


@transaction.atomic
def reset_episode_for_retry(*, episode: Episode) -> Episode:
    """Discard an episode's attempt (steps and outcome) and make it pending again as the next attempt.

    A completed episode is final and is refused: its result is what the run reports.
    """
    episode = Episode.objects.select_for_update().get(pk=episode.pk)
    if episode.status == Status.COMPLETED:
        raise ValueError(f"Episode {episode.pk} is completed; a finished episode is never run again.")
    episode.steps.all().delete()
    episode.clear_outcome()
    episode.attempt += 1
    episode.status = Status.PENDING
    episode.save()
    return episode


@transaction.atomic
def finish_run(*, run_id: int) -> Run:
    """End the run if none of its episodes is pending or running; return it either way.

    A cancelled run stays cancelled; otherwise it is failed when an episode failed (an
    infrastructure failure that ``resume_run`` can retry) and completed when all completed.
    """
    run = Run.objects.select_for_update().get(pk=run_id)
    progress = run.progress()
    if progress[Status.PENDING] or progress[Status.RUNNING]:
        return run
    if run.status != Status.CANCELLED:
        run.status = Status.FAILED if progress[Status.FAILED] else Status.COMPLETED
    run.finished_at = run.finished_at or timezone.now()
    run.save(update_fields=["status", "finished_at"])
    db.refresh_totals(run)
    return run
