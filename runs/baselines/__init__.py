"""The built-in baselines: local agents that answer through the same text protocol as a model.

- ``common``: what both share (reading tool results back from the conversation, a T6 answer).
- ``random``: ``baseline/random``, one valid answer drawn uniformly.
- ``heuristic``: ``baseline/heuristic``, fixed expert rules that see the recording through the tools.
"""
