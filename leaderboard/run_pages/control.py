"""Staff's run control: the form that creates and queues a run, and the cancel and resume buttons."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard.access import staff_required
from leaderboard.run_pages.forms import NewRunForm
from runs import specs
from runs.models import Run
from runs.queue import lifecycle


@staff_required
def new_run(request: HttpRequest) -> HttpResponse:
    """The staff form that creates a run and queues its episodes."""
    form = NewRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():
                run = lifecycle.start_run(
                    suite=data["suite"],
                    model=specs.spec_to_run(data["model"], data["provider_model"]),
                    tasks=data["tasks"],
                    name=data["name"],
                    limit=data["limit"],
                    epochs=data["epochs"],
                    api_base=data["api_base"],
                    api_key_env=data["api_key_env"],
                    settings=form.decoding_settings(),
                    prompt_set=data["prompt_set"],
                    limits=form.limits(),
                    created_by=request.user,
                )
        except (ValueError, ValidationError) as exc:
            form.add_error(None, exc.messages if isinstance(exc, ValidationError) else str(exc))
        else:
            messages.success(request, f"Run {run.pk} is queued: {run.episodes.count()} episodes.")
            return redirect("leaderboard:run", pk=run.pk)
    return render(request, "leaderboard/run_pages/new_run.html", {"form": form, "nav": "new_run"})


@require_POST
@staff_required
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a run: pending episodes at once, running ones at their next turn."""
    run = get_object_or_404(Run, pk=pk)
    try:
        lifecycle.cancel_run(run_id=run.pk)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} is cancelled.")
    return redirect("leaderboard:run", pk=run.pk)


@require_POST
@staff_required
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """Resume a run: failed, cancelled and stale episodes become pending again and are queued."""
    run = get_object_or_404(Run, pk=pk)
    try:
        resumed = lifecycle.resume_and_queue(run_id=run.pk)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.pk} resumed: {resumed.reset} episodes reset, {resumed.pending} pending.")
    return redirect("leaderboard:run", pk=run.pk)
