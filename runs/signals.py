"""What runs/ tells the rest of the platform: the episodes of a run ended or changed.

runs/ imports nothing of the leaderboard; the leaderboard listens (``leaderboard.receivers``)
and refreshes the run's summary, so pages only read.
"""
from django.dispatch import Signal

#: Sent with ``run_id`` wherever episodes of a run end or change (the queue task, ``run_sync``,
#: the environment API, cancel, resume, import) and once a run has finished; with
#: ``rescored=True`` when every episode was scored again, so the summary is computed afresh.
episodes_ended = Signal()
