"""Who may see what of an episode, an instance and a run's scores: the one place the site's rules live.

An agent may look at this site (a model with web access, or an agent on the environment API), so
nothing of an episode that has not ended reaches a visitor who is not staff: no page, step, signal,
search hit, comparison or API detail of it. Once it has ended (completed, failed or cancelled) its
trajectory is public like any other, on a suite whose references are public; its reference and
score are shown as ``EEGAB_PUBLIC_REFERENCES`` says; a suite's whole answer key, to staff only. A failed episode that is run again starts
afresh: the retry deletes the attempt that was visible.

A suite whose references are held out (``Suite.references``) shows anyone but staff its runs'
run-level results only: no episode, step, signal, instance list, per-episode or per-instance
score or prediction, and a run's scores only once the run has ended (while it runs, each change
of its scores would tell its agent whether the answer it just gave was right).
"""
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest

from benchmark.models import Suite
from runs.models import Status

ENDED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)
HELD_OUT_NOTE = (
    "This suite's references are held out: its episodes, instances and per-item scores are not shown, "
    "and a run's scores only once it has ended."
)


#: Failure modes that tell an episode's reference (whether its record has seizures): shown as references are.
REFERENCE_MODES = frozenset({"missed_all_seizures", "false_alarm"})


def shown_failure_modes(modes: list[dict] | None, *, references: bool) -> list[dict]:
    """An episode's failure modes this visitor may see: those telling the reference only with ``references``."""
    return [mode for mode in modes or [] if references or mode["code"] not in REFERENCE_MODES]


def is_staff(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)


def has_ended(episode) -> bool:
    return episode.status in ENDED


def shows_items(request: HttpRequest, suite: Suite | None) -> bool:
    """Whether this visitor may see ``suite``'s ended episodes, instances and per-item results (None: no suite)."""
    return is_staff(request) or suite is None or not suite.is_held_out


def shows_references(request: HttpRequest, suite: Suite | None = None) -> bool:
    """Whether this visitor may see references and per-episode scores: staff always, others on public suites
    as ``EEGAB_PUBLIC_REFERENCES`` says."""
    return is_staff(request) or (shows_items(request, suite) and settings.EEGAB_PUBLIC_REFERENCES)


def shows_answer_key(request: HttpRequest) -> bool:
    """Whether this visitor may read a suite's answer key (every instance's reference, in the release's
    order): staff only, whatever ``EEGAB_PUBLIC_REFERENCES`` says. Public references are shown one
    ended episode at a time; the whole key would hand an agent the reference of the instance it is
    playing now."""
    return is_staff(request)


def shows_run_scores(request: HttpRequest, run) -> bool:
    """Whether this visitor may see ``run``'s scores: on a held-out suite, only once the run has ended."""
    return shows_items(request, run.suite) or run.status in ENDED


def shows_comparison(request: HttpRequest, a, b) -> tuple[bool, bool]:
    """Whether this visitor sees two runs' comparison at task level, and instance by instance.

    Task level as each run's scores (``shows_run_scores``: on a held-out suite once both have
    ended); instances only where the visitor also sees the suite's items and references, since a
    row's change tells the correctness of both episodes.
    """
    scores = shows_run_scores(request, a) and shows_run_scores(request, b)
    return scores, scores and shows_references(request, a.suite)


def visible_episode(request: HttpRequest, episode):
    """``episode`` if this visitor may see it; a 404 for a visitor while it has not ended, or on a held-out suite."""
    if not is_staff(request) and not (has_ended(episode) and shows_items(request, episode.run.suite)):
        raise Http404("No such episode.")  # the same answer as for an episode that does not exist
    return episode


def visible_episodes(request: HttpRequest, episodes: QuerySet, *, prefix: str = "") -> QuerySet:
    """``episodes`` without those a visitor may not see (``prefix``: the lookup to the episode)."""
    if is_staff(request):
        return episodes
    return episodes.filter(
        Q(**{f"{prefix}status__in": ENDED}) & ~Q(**{f"{prefix}run__suite__references": Suite.References.HELD_OUT})
    )


def staff_required(view):
    """Staff only: anonymous visitors are sent to the login page, signed-in non-staff get 403."""

    def wrapped(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("Only staff can manage runs.")
        return view(request, *args, **kwargs)

    wrapped.__name__, wrapped.__doc__ = view.__name__, view.__doc__
    return wrapped
