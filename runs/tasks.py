"""Queue tasks for django-q2's workers (``manage.py qcluster``): each takes an id and calls a service."""
from runs.queue import worker


def run_episode_task(episode_id: int) -> str:
    """Play one episode (``runs.queue.worker.execute_episode``); a task for a finished episode does nothing."""
    return worker.execute_episode(episode_id=episode_id)
