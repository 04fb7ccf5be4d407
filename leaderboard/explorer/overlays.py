"""What the record browser lays over a recording: the windows an episode's tool calls read, and its answer.

- every signal tool call's time range (as the tools read it, ``tools_app.spans``) and channels, a band
  that links to its step;
- T5: the predicted seizure intervals and, where references are shown, the reference ones, each
  with the scorer's tolerance (``ONSET_TOLERANCE_SEC`` before an onset, ``OFFSET_TOLERANCE_SEC``
  after an offset);
- T6: the predicted and, where references are shown, the reference hypnogram, one stage per 30-s
  epoch, with the epochs where they disagree.
"""
from __future__ import annotations

from benchmark.scoring.hypnogram import align, expand_rle
from benchmark.scoring.seizure import parse_raw_events
from leaderboard.explorer.signal import signal_window
from leaderboard.explorer.steps import step_url
from runs.models import Episode, Status, Step
from tools_app.spans import SIGNAL_TOOLS

#: The scorer's tolerance around a reference seizure (paper §6.3: 30 s before onset, 60 s after offset).
ONSET_TOLERANCE_SEC = 30.0
OFFSET_TOLERANCE_SEC = 60.0
EPOCH_SEC = 30.0


def tool_bands(episode: Episode, recording, *, step_link=None) -> list[dict]:
    """``{"step", "tool", "start", "stop", "channels", "url"}`` for each tool call of ``episode`` that read the
    signal, in order; times in s of the record, the channels those the call covered (all of them).

    ``step_link(index)`` gives a step's address (the explorer's episode page by default).
    """
    step_link = step_link or (lambda index: step_url(episode.pk, index))
    steps = (episode.steps.filter(kind=Step.Kind.TOOL_CALL, tool_name__in=SIGNAL_TOOLS)
             .only("index", "tool_name", "arguments").order_by("index"))
    eeg = [recording.ch_names[pick] for pick in recording.eeg_picks]
    bands = []
    for step in steps:
        window = signal_window(step.tool_name, step.arguments, ch_names=recording.ch_names, eeg_channels=eeg,
                               sfreq=recording.sfreq, n_times=recording.n_times, max_channels=len(recording.ch_names))
        bands.append({
            "step": step.index,
            "tool": step.tool_name,
            "start": window.start / recording.sfreq,
            "stop": window.stop / recording.sfreq,
            "channels": list(window.channels),
            "url": step_link(step.index),
        })
    return bands


def _seizure_lane(name: str, intervals) -> dict:
    return {"name": name, "kind": "intervals", "intervals": [
        {"start": onset, "stop": offset,
         "tolerance": [max(onset - ONSET_TOLERANCE_SEC, 0.0), offset + OFFSET_TOLERANCE_SEC]}
        for onset, offset in intervals
    ]}


def answer_lanes(episode: Episode, *, references: bool) -> list[dict]:
    """The episode's answer (and the reference, where shown) as lanes on the record's time axis.

    T5: ``{"name", "kind": "intervals", "intervals": [{"start", "stop", "tolerance": [from, to]}]}``;
    T6: ``{"name", "kind": "stages", "epoch_sec", "stages": [...], "disagree": [epoch, ...]}`` (the
    disagreements on the predicted lane, where the reference is shown). Nothing for other tasks or an
    episode that gave no answer.
    """
    instance = episode.instance
    task = instance.task.code
    prediction = episode.prediction if episode.status == Status.COMPLETED and isinstance(episode.prediction, dict) else None
    lanes = []
    if task == "T5":
        if references:
            lanes.append(_seizure_lane("reference", parse_raw_events(instance.reference.get("seizure_events"))))
        if prediction is not None:
            lanes.append(_seizure_lane("predicted", parse_raw_events(prediction.get("seizure_events"))))
    elif task == "T6":
        reference = list(instance.reference.get("epoch_labels_aasm") or [])
        if references and reference:
            lanes.append({"name": "reference", "kind": "stages", "epoch_sec": EPOCH_SEC, "stages": reference})
        if prediction is not None:
            n_epochs = int(instance.epochs_total or len(reference))
            predicted = expand_rle(prediction.get("hypnogram_rle") or [], n_epochs).labels
            if reference:
                predicted = align(predicted, len(reference))
            lane = {"name": "predicted", "kind": "stages", "epoch_sec": EPOCH_SEC, "stages": list(predicted)}
            if references and reference:
                lane["disagree"] = [epoch for epoch, (mine, truth) in enumerate(zip(predicted, reference)) if mine != truth]
            lanes.append(lane)
    return lanes
