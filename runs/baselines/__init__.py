"""The built-in baselines: local agents that answer through the same text protocol as a model.

- ``common``: what both share (the tool results of the conversation, a T6 answer).
- ``results``: a tool result read back from the text a model reads.
- ``random``: ``baseline/random``, one valid answer drawn uniformly.
- ``heuristic``: ``baseline/heuristic``, fixed expert rules that see the recording through the tools.
"""
