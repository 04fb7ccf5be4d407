"""The read-only REST API: leaderboard, runs, episodes, tasks and instances, under /api/.

Anyone may read; references (the hidden answers) and an episode's full per-item scores go to
staff only. Lists are paginated (``?page=``, ``?page_size=``) and every endpoint is throttled.
"""
