"""Playing one episode: its limits, its opening, its transcript, its scoring, and the engine.

- ``limits``: the turns, tool calls and caps of an episode.
- ``opening``: what an episode opens with (the prompt set's messages and tool specs) and its tools.
- ``transcript``: the step record, one shape per kind of step, and the conversation it replays to.
- ``scoring``: the official scorer on one episode's answer.
- ``engine``: claiming, playing and finishing an episode (``run_episode``), and the loop
  (``EpisodeLoop``) the environment API drives one turn at a time.
"""
