"""Results in the official runner's file formats, both ways: export a run, import an official output directory.

The layout is that of the official ``run-all`` command (528why/EEGAgentBenchmark, ``cli.py``):
one directory per task, ``<dir>/Tn/``, holding

- ``runs.jsonl``: one row per scenario, ``{scenario_id, status, invalid, prediction, score,
  score_details, usage, error}``;
- ``trajectories/<scenario_id>.jsonl``: the scenario's events, ``{scenario_id, step,
  event_type, timestamp, agent_message?, tool_call?, observation?, error?}``;
- ``summary.json``: the official task summary (``{schema, official: false, error}`` when
  the run does not cover exactly the task's instances);
- ``run_status.json`` and ``failed_cases.json``, as the runner writes them;

and ``<dir>/benchmark_summary.json``.

- ``official``: those formats and how our record maps to them: the task summaries, trajectory
  events, ``runs.jsonl`` rows, ``run_status.json``, the runner's wording of its nudges.
- ``export``: a run written in that layout (``export_run``), a directory per epoch for several.
- ``importing``: an official output directory loaded as a run (``import_official_run``), its
  steps rebuilt from the trajectories (``steps_from_events``) and scored by our scorer.
"""
