"""Episodes driven from outside, one action per request: external agent frameworks and people on the play pages.

- ``service``: external runs and their keys, starting an episode, playing one action, ending
  idle episodes; on the episode engine every other player drives (``runs.episode.engine``).
- ``api``: the environment API, JSON over HTTP with a run's key (``/api/env/``).
- ``urls``: its URLs.
"""
# The idle sweep's schedule named this path before migration 0010 moved it to the service: a
# queue worker that runs a task scheduled under the old name, before the migration, still finds it.
from runs.environment.service import end_idle_episodes  # noqa: F401
