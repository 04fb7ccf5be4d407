"""Calling a model: one module per way of calling one, a single retry policy, routing, rate limits.

- ``reply``: what an agent returns for a turn (``Reply``), its failures, reading a chat completion.
- ``retry``: the one retry policy (backoff, fitting ``max_tokens`` to a context-length error) and
  the kinds of failure each way of calling sorts its errors into.
- ``litellm_transport`` and ``openai_http``: the two ways of calling a model (litellm for every
  provider, direct HTTP for a self-hosted OpenAI-compatible server), each classifying its own errors.
- ``routing``: which way and which tool protocol a model gets, and the checks on a run's settings.
- ``agent``: ``ModelAgent``, the priced agent that retries in one place.
- ``rate_limit``: waiting while a run is at its per-minute limits.
"""
