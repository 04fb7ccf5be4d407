"""The leaderboard's side of ``runs.signals``: a run's summary is refreshed as its episodes end."""
from django.dispatch import receiver

from leaderboard.summaries.scoring import episodes_ended, refresh_run_summary
from runs import signals
from runs.models import Run


@receiver(signals.episodes_ended, dispatch_uid="leaderboard.refresh_summary")
def refresh_summary(sender, *, run_id: int, rescored: bool = False, **kwargs) -> None:
    """Coalesced while the run plays (``episodes_ended``); a rescored run's summary in full."""
    if rescored:
        refresh_run_summary(Run.objects.get(pk=run_id), force=True)
    else:
        episodes_ended(run_id=run_id)
