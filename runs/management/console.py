"""What the run commands share: checking a model can start, driving a run's episodes with a progress bar,
printing its metrics, and saying why it did not complete."""
from __future__ import annotations

import difflib
import json
import os

from django.core.management.base import CommandError

from benchmark.scoring import SECONDARY_METRICS
from runs import models
from runs import reports
from runs.agents import is_baseline
from runs.cost import installed_litellm_version, litellm_model_info
from runs.models import Run, Status
from runs.queue import dispatch, lifecycle, local

BAR_WIDTH = 24


def get_run(run_id: int) -> Run:
    run = Run.objects.select_related("model", "suite").filter(pk=run_id).first()
    if run is None:
        raise CommandError(f"There is no run {run_id}.")
    return run


def positive(value: int | None, option: str) -> None:
    if value is not None and value < 1:
        raise CommandError(f"{option} must be a positive whole number, not {value}.")


def check_can_start(command, model: str, *, api_base: str, key_env: str, sync: bool, unlisted: bool) -> None:
    """Refuse a model run that cannot start, before anything is stored or played (CommandError).

    - Its name: where litellm's bundled model map lists models of the model's provider and not
      this one, it is refused with the closest names the map lists, unless ``unlisted`` (a model
      newer than the installed litellm). A model at ``--api-base`` may have any name.
    - Its key: the variable ``--api-key-env`` names, else the one litellm reads for the model's
      provider (a server of one's own at ``--api-base`` may need none). Played here (``--sync``),
      a run whose key is not set is refused; played by the queue workers, which read their own
      environment, it is a note.

    The built-in baselines need neither (a variable named for one must still be set).
    """
    baseline = is_baseline(model)
    if not (baseline or api_base or unlisted) and (problem := unlisted_model(model)):
        raise CommandError(problem)
    variables = [key_env] if key_env else ([] if api_base or baseline else provider_key_variables(model))
    if variables and not any(os.environ.get(name) for name in variables):
        if key_env:
            reason = f"The environment variable {key_env} (named by --api-key-env) is not set."
        else:
            reason = f"{model} reads its API key from {' or '.join(variables)}, which is not set."
        if sync:
            raise CommandError(f"{reason} Set it (export {variables[0]}=...), or name the variable that holds "
                               "the key with --api-key-env.")  # fmt: skip
        command.stderr.write(f"Note: {reason} The queue workers (manage.py qcluster) read the key from their own "
                             "environment: every episode fails unless they have it.")  # fmt: skip


def provider_key_variables(model: str) -> list[str]:
    """The variables litellm would read ``model``'s key from and finds unset (any one of them will do)."""
    import litellm

    try:
        return list(litellm.validate_environment(model).get("missing_keys") or ())
    except Exception:  # litellm raises its own and generic errors for a model it cannot route
        return []


def unlisted_model(model: str) -> str | None:
    """Why litellm's bundled model map makes ``model`` look misspelt, or None.

    None when the map lists the model, or lists no model of its provider to compare it with.
    """
    if litellm_model_info(model) is not None:
        return None
    import litellm

    try:
        name, provider = litellm.get_llm_provider(model)[:2]
    except Exception:  # litellm raises its own errors for a string it cannot route
        return None
    listed = sorted(litellm.models_by_provider.get(provider) or ())
    if not listed:
        return None
    prefix = model[: len(model) - len(name)] if name and model.endswith(name) else ""
    closest = [prefix + close for close in difflib.get_close_matches(name, listed, n=3, cutoff=0.6)]
    suggestion = f" The closest it lists: {', '.join(closest)}." if closest else ""
    return (
        f"Unknown model {model!r}: litellm's model map (bundled with litellm {installed_litellm_version()}) lists "
        f"{len(listed)} {provider} models and not this one.{suggestion} Check the name, or pass --unlisted-model "
        "to run a model newer than this litellm."
    )


def end_lost_runs(command) -> None:
    """End the runs left running by a process that stopped (``runs.queue.lifecycle.end_lost_runs``), saying so."""
    for run_id in lifecycle.end_lost_runs():
        command.stderr.write(
            f"Run {run_id} was left running by a process that stopped (killed, or lost with its machine): it is "
            f"ended now, as failed. Play the rest with: python manage.py resume_run {run_id} --sync"
        )


class ProgressBar:
    """Episodes ended (of which failed), tokens and cost of a run.

    On a terminal the line is redrawn in place at every change; elsewhere (a log, a pipe) a
    line is printed at every tenth of the run, at every new failure and at the end.
    """

    def __init__(self, stream):
        self.stream = stream
        self.on_terminal = stream.isatty()
        self.last = None

    def update(self, run: Run) -> None:
        run = Run.objects.select_related("model").get(pk=run.pk)
        progress = run.progress()
        total = sum(progress.values())
        ended = sum(progress[status] for status in models.FINISHED)
        failed = progress[Status.FAILED]
        tokens = run.prompt_tokens + run.completion_tokens
        cost = cost_text(run.model.provider_model, run.cost_usd, tokens=tokens)
        filled = round(BAR_WIDTH * ended / total) if total else BAR_WIDTH
        line = (
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {ended}/{total} episodes · "
            f"{failed} failed · {tokens:,} tokens · {cost}"
        )
        state = line if self.on_terminal else (ended * 10 // max(total, 1), failed, ended == total)
        if state == self.last:
            return
        self.last = state
        if self.on_terminal:
            self.stream.write("\r" + line, ending="")
        else:
            self.stream.write(line)

    def close(self) -> None:
        if self.on_terminal and self.last is not None:
            self.stream.write("")


def drive(command, run: Run, *, sync: bool, concurrency: int, wait: bool, as_json: bool) -> None:
    """Play the run's pending episodes (in this process, or by the queue workers), then print its report."""
    bar = ProgressBar(command.stderr)
    if sync:
        def on_episode(episode, error):
            if error is not None:
                command.stderr.write(f"\nepisode {getattr(episode, 'pk', '?')} failed: {type(error).__name__}: {error}")
            bar.update(run)

        bar.update(run)
        try:
            local.run_sync(run_id=run.pk, concurrency=concurrency, on_episode=on_episode)
        except KeyboardInterrupt:
            raise CommandError(
                f"Interrupted. Once the lease of the episodes being played has run out (EEGAB_EPISODE_LEASE_SEC), "
                f"continue with: python manage.py resume_run {run.pk} --sync"
            ) from None
        finally:
            bar.close()
    else:
        released = dispatch.queue_run(run_id=run.pk)
        command.stderr.write(
            f"Run {run.pk}: {len(released)} episode(s) queued; the workers of `python manage.py qcluster` play them."
        )
        if not dispatch.workers_alive():
            command.stderr.write("No queue worker is running now: start one with `python manage.py qcluster`, "
                                 "or play the run in this process with --sync.")  # fmt: skip
        if not wait:
            command.stdout.write(json.dumps({"run_id": run.pk, "queued": len(released)}) if as_json else str(run.pk))
            return
        try:
            lifecycle.wait_for_run(run_id=run.pk, on_progress=bar.update)
        except KeyboardInterrupt:
            raise CommandError(
                f"Stopped waiting; run {run.pk} goes on in the workers (python manage.py cancel_run {run.pk} stops it)."
            ) from None
        finally:
            bar.close()
    report(command, run, as_json=as_json)
    check_completed(run.pk, sync=sync)


def check_completed(run_id: int, *, sync: bool) -> None:
    """Nothing when the run completed; else CommandError saying how it ended, and why its first failure failed."""
    run = Run.objects.get(pk=run_id)
    if run.status == Status.COMPLETED:
        return
    ended = {Status.FAILED: "failed", Status.CANCELLED: "was cancelled"}.get(run.status, f"is {run.status}")
    resume = f"python manage.py resume_run {run.pk}{' --sync' if sync else ''}"
    failed = run.episodes.filter(status=Status.FAILED)
    first = failed.select_related("instance__task").order_by("finished_at", "pk").first()
    if first is None:
        raise CommandError(f"Run {run.pk} {ended}; none of its episodes failed. Play the rest with: {resume}")
    total, n_failed = run.episodes.count(), failed.count()
    how = "every episode failed" if n_failed == total else f"{n_failed} of its {total} episodes failed"
    if not failed.exclude(ended_by=models.Episode.EndedBy.PROVIDER_ERROR).exists():
        how += ", each with a provider error"
    reason = " ".join((first.error_message or "no reason was recorded").split())[:1000]
    raise CommandError(
        f"Run {run.pk} {ended}: {how}. The first ({first.instance.task.code}, episode {first.pk}): {reason}\n"
        f"Once that is fixed, play them again with: {resume}"
    )


def report(command, run: Run, *, as_json: bool) -> None:
    data = reports.run_report(run)
    command.stdout.write(json.dumps(data, ensure_ascii=False) if as_json else metrics_table(data))


def cost_text(provider_model: str, cost_usd, *, tokens: int) -> str:
    """A run's cost as the commands print it, the same on every line.

    The built-in baselines call no model: free. A model with no price is unpriced (its cost is
    unknown, not $0); before any model call there is no cost yet.
    """
    if is_baseline(provider_model):
        return "free (built-in baseline)"
    if cost_usd is None:
        return "unpriced" if tokens else "no cost yet"
    return f"${cost_usd:.4f}"


def _score(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def metrics_table(report: dict) -> str:
    """The per-task metrics of ``reports.run_report`` as a text table, with Overall."""
    synthetic = " (SYNTHETIC data)" if report["synthetic"] else ""
    progress = report["episodes"]
    lines = [
        f"Run {report['run_id']} · {report['model']} on suite {report['suite']}{synthetic} · {report['status']}",
        "episodes: " + ", ".join(f"{count} {status}" for status, count in progress.items() if count),
        "",
        f"{'task':<8}{'episodes':>9}  {'metric':<10}{'score':>8}  {'secondary':<22}{'official':<8}",
    ]
    for task, summary in report["tasks"].items():
        counts = summary["completeness"]
        secondary = ", ".join(
            f"{name} {_score(summary['metrics'].get(name))}" for name in SECONDARY_METRICS[task]
        ) or "-"
        lines.append(
            f"{task:<8}{counts['completed']:>4}/{summary['n_items']:<4}  {summary['primary_metric']:<10}"
            f"{_score(summary['primary_score']):>8}  {secondary:<22}{'yes' if summary['official'] else 'partial':<8}"
        )
    overall = report["overall"]
    if overall is None:
        note = "needs all six tasks"
    else:
        note = "official" if report["overall_official"] else "partial: not every task is official"
    lines.append(f"{'Overall':<8}{'':>9}  {'mean':<10}{_score(overall):>8}  ({note})")
    if report.get("epochs", 1) > 1:
        lines += ["", *epochs_table(report)]
    usage = report["usage"]
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    cost = cost_text(report["provider_model"], usage["cost_usd"], tokens=tokens)
    lines += ["", f"tokens: {usage['prompt_tokens']:,} prompt, {usage['completion_tokens']:,} completion · cost {cost}"]
    return "\n".join(lines)


def epochs_table(report: dict) -> list[str]:
    """The lines of a run played over K > 1 epochs: per task the primary score's mean and sd over epochs,
    each epoch's score, the flip rate, and pass^k / pass@k where the task has them; Overall's mean and sd."""
    k = report["epochs"]
    lines = [f"over {k} epochs (each instance played {k} times; the scores above are the means over epochs)",
             f"{'task':<8}{'mean':>8}{'sd':>8}  {'per epoch':<{8 * k}}{'flip rate':>10}{'pass^k':>8}{'pass@k':>8}"]
    for task, summary in report["tasks"].items():
        epochs = summary.get("epochs")
        if not epochs:
            continue
        per_epoch = "".join(f"{_score(score):>8}" for score in epochs["scores"])
        lines.append(
            f"{task:<8}{_score(summary['primary_score']):>8}{_score(epochs['sd']):>8}  {per_epoch:<{8 * k}}"
            f"{_score(epochs['flip_rate']):>10}{_score(epochs.get('pass_hat_k')):>8}{_score(epochs.get('pass_at_k')):>8}"
        )
    overall = report.get("overall_epochs")
    if overall:
        per_epoch = "".join(f"{_score(score):>8}" for score in overall["scores"])
        lines.append(f"{'Overall':<8}{_score(report['overall']):>8}{_score(overall['sd']):>8}  {per_epoch}")
    return lines
