"""The queue: episodes sent to django-q2's workers, played under leases, and their runs kept going.

- ``dispatch``: one task per episode, within the run's concurrency (the only django-q2 import).
- ``leases``: the heartbeat of a process playing episodes; finding and recovering a lost one.
- ``worker``: getting a process ready, playing an episode under its lease, looking after its run.
- ``local``: a run played in this process on a pool of threads (``run_benchmark --sync``).
- ``lifecycle``: cancel, resume, rescore a run; wait for its end.

The task and the sweep keep their import paths, ``runs.tasks`` and ``runs.sweep``: queued tasks
and the sweep's schedule name them.
"""
