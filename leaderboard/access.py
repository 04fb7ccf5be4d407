"""Who may see what of an episode while it runs.

An agent may look at this site (a model with web access, or an agent on the environment API), so
nothing of an episode that has not ended reaches a visitor who is not staff: no page, step, signal,
search hit, comparison or API detail of it. Once it has ended (completed, failed or cancelled) its
trajectory is public like any other; its reference is shown as ``EEGAB_PUBLIC_REFERENCES`` says. A
failed episode that is run again starts afresh: the retry deletes the attempt that was visible.
"""
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest

from runs.models import Status

ENDED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


def is_staff(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.is_staff)


def has_ended(episode) -> bool:
    return episode.status in ENDED


def visible_episode(request: HttpRequest, episode):
    """``episode`` if this visitor may see it; a 404 for a visitor while it has not ended."""
    if not is_staff(request) and not has_ended(episode):
        raise Http404("No such episode.")  # the same answer as for an episode that does not exist
    return episode


def visible_episodes(request: HttpRequest, episodes: QuerySet, *, prefix: str = "") -> QuerySet:
    """``episodes`` without those a visitor may not see yet (``prefix``: the lookup to the episode)."""
    if is_staff(request):
        return episodes
    return episodes.filter(Q(**{f"{prefix}status__in": ENDED}))
