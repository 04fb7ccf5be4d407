"""The two opening messages of an episode, built from an instance.

The structure is the official one (528why/EEGAgentBenchmark, ``tasks/*/prompt.py`` and
``tasks/prompt_builder.py``); the wording is ours (see docs/compatibility.md):

- system prompt, T2–T6: a task introduction, ``## Rules`` (T5 first explains what a seizure looks like,
  T6 adds the AASM scoring criteria after the rules), the tool overview (the registry's reference,
  ``tools_app.registry.text_reference``: ``## Available Tools`` with the tools grouped in the six official
  categories and one line per parameter, ``### How to Call a Tool`` built from the first tool; then our
  ``## Using the Tools (operating protocol)``), ``## Data Access`` and ``## Action Format`` with the
  tool-call and final-answer JSON;
- system prompt, T1: the exam framing, ``## Rules`` and ``## Answer Format``, no tools;
- user prompt, T2–T6: ``## Clinical Context``, ``## EEG Record`` with the opaque record id and the
  whitelisted metadata as ``- **Title Case**: value`` lines (in file order for T2–T4, sorted for T5/T6),
  ``## Question``, for T4 an ``## Important`` reminder, and ``## Expected Output Schema``;
- user prompt, T1: ``## Question``, ``## Options`` and the reply instruction.

Only agent-visible fields are read: the task, the opaque record id, the metadata, the input block, the
output schema and the allowed tools. Scenario ids, the release's record ids, recording paths and the
reference never reach a prompt (tests/benchmark/test_prompts.py proves it for every official instance).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tools_app.registry import TOOL_NAMES

# The ten tools in the official catalog order (also their display order).
OFFICIAL_TOOLS: tuple[str, ...] = TOOL_NAMES

# Metadata keys a prompt may show, per task (the official whitelists). Everything else stays hidden:
# Bonn's recording_type is collinear with the label, ds004504's MMSE nearly is.
_CLASSIFICATION_KEYS = frozenset({
    "channels", "channel_names", "sampling_rate", "n_samples", "duration_sec", "montage", "reference",
    "age", "gender", "sex",
})
PROMPT_METADATA_KEYS: dict[str, frozenset[str]] = {
    "T1": frozenset(),
    "T2": _CLASSIFICATION_KEYS,
    "T3": _CLASSIFICATION_KEYS,
    "T4": _CLASSIFICATION_KEYS,
    "T5": frozenset({
        "sampling_rate", "n_channels", "channels", "channel_names", "duration_sec", "montage", "recording_type",
    }),
    "T6": frozenset({
        "sampling_rate", "n_channels", "channels", "eeg_channels", "duration_sec", "n_samples", "epoch_sec",
        "n_epochs_total", "age", "sex", "source", "night",
    }),
}
_SORTED_METADATA_TASKS = frozenset({"T5", "T6"})

_TOOL_CALL_FORMAT = '{"action": "tool_call", "tool_name": "<name>", "arguments": {...}}'


def prompt_metadata(task_code: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a record's metadata a prompt of ``task_code`` may show, in the order it is shown.

    T2–T4 keep the release's key order; T5 and T6 sort the keys, as the official prompts do.
    """
    allowed = PROMPT_METADATA_KEYS[task_code]
    keys = [key for key in metadata if key in allowed]
    if task_code in _SORTED_METADATA_TASKS:
        keys.sort()
    return {key: metadata[key] for key in keys}


# ── tool overview ───────────────────────────────────────────────────────────────────────────

OPERATING_PROTOCOL = """\
## Using the Tools (operating protocol)
- Every tool reads the recording through its `record_id`. Which tools you call, with which arguments \
and in which order is your decision; choosing well is part of the task.
- Results can be long. Each one opens with a `_meta` block whose `approx_response_tokens` tells you its \
size: ask for the channels you need and short `tmin`/`tmax` spans, and work through a long recording \
piece by piece over several turns so the conversation stays within your context.
- When a result carries an `error` or says the analysis is not applicable, read it and change the \
arguments or pick another tool; sending the same failing call again will not help.
- Your turns are limited: collect the evidence you need, then give your final answer. Put exactly one \
`tool_call` JSON block in each step."""


def tool_overview(names: Sequence[str]) -> str:
    """The system prompt's tool section for the tools ``names``.

    The tool registry renders the reference (the six official categories, one line per parameter,
    the calling example built from the first tool); the operating protocol follows it, as in the
    official prompt builder. Without tools there is only the registry's note, and no protocol.
    """
    from tools_app.registry import text_reference

    reference = text_reference(tuple(names))
    return f"{reference}\n\n{OPERATING_PROTOCOL}" if names else reference


# ── system prompts ──────────────────────────────────────────────────────────────────────────

T1_SYSTEM_PROMPT = """\
You are an EEG and clinical neurophysiology expert, sitting a multiple-choice examination in which \
every question has one best answer.

## Rules
1. Each question offers FOUR options, labelled A, B, C and D, and exactly ONE of them is correct.
2. Choose the best option from your own knowledge. This exam provides no analysis tools.
3. You may reason briefly first, but your reply MUST end with the answer block below.

## Answer Format
Finish your reply with exactly this JSON block, holding only the option letter:
```json
{"action": "final_answer", "answer": "<A|B|C|D>"}
```
"""

_CLASSIFICATION_ANSWER = (
    '{"action": "final_answer", "classification": "<one of the labels in the expected output schema>", '
    '"findings": ["..."]}'
)


def _closing(data_access: str, final_answer: str, extra: str = "") -> str:
    """The sections every tool-using system prompt ends with: data access and the action format."""
    return (
        "## Data Access\n"
        f"{data_access}\n\n"
        "## Action Format\n"
        "To call a tool, include this JSON block:\n"
        f"```json\n{_TOOL_CALL_FORMAT}\n```\n"
        "The tool's result comes back to you and you continue from there.\n\n"
        "When you are ready with your final answer, include this JSON block:\n"
        f"```json\n{final_answer}\n```\n"
        f"{extra}"
    )


_RECORD_ACCESS = (
    "The record's metadata is in the user message. Give its ``record_id`` to any tool; "
    "the tools load the data themselves."
)

_T2_INTRO = """\
You are an agent that assesses EEG signal quality. Your input is one short single-channel EEG epoch \
of about 2 seconds, and you decide which of these describes it:

- ``clean`` — no artifact dominates; the epoch is usable EEG for further reading.
- ``ocular_contaminated`` — an ocular (EOG, eye-movement) artifact dominates, seen as large, slow \
deflections.
- ``muscle_contaminated`` — a muscle (EMG) artifact dominates, seen as fast, spiky activity.

## Rules
1. Decide from **signal-level evidence** returned by the measurement tools (spectral distribution, band \
powers, temporal statistics, windowed features). The tools only measure: they give neither labels nor \
contamination strength, so working out which pattern points to which source is up to you.
2. Do NOT report features that no tool result supports.
3. Only the category is asked for; do NOT estimate the SNR or the strength of the contamination.
4. **Calibration**: contamination can be weak. Choose a contaminated class only when the artifact \
*clearly dominates* the epoch; when none dominates, the epoch is ``clean``.
5. You may plan, call tools and update your memory over several turns before you answer.
"""

_T3_INTRO = """\
You are an expert agent that reads EEG. You review one EEG recording and write its record-level clinical \
**Impression**: assign exactly one of the labels given in the Expected Output Schema (in the user \
message) and list the EEG evidence behind that judgement.

## Rules
1. Base the classification on **signal-level evidence** from the analysis tools (for example spectral \
features, transient morphology, temporal statistics, asymmetry).
2. Do NOT report EEG findings that no tool result supports.
3. When tools are available, analyse with a purpose: start from the clinical context, then choose tools \
that answer specific questions (is the background normal? is there focal slowing? is there \
epileptiform activity?).
4. When no tools are available, reason from the clinical context and the metadata, and say plainly \
that no signal-level analysis was done.
5. You may plan, call tools and update your memory over several turns before you answer.
6. ``detect_transients`` reports **candidate** amplitude peaks, not confirmed epileptiform discharges. \
Many candidates are normal physiological transients or artifacts; weigh the background RMS, the \
amplitude-to-RMS ratio, the width and the sharpness before calling one significant.
"""

_T4_INTRO = """\
You are an expert agent that reads EEG for **research cohort discrimination**: for one EEG recording, decide \
which research cohort it comes from, choosing exactly one of the labels given in the Expected Output \
Schema (in the user message). This is NOT a clinical diagnosis; your answer names a cohort and makes \
no diagnostic claim.

## Rules
1. Cohorts usually differ in **statistical EEG features** (relative band power, spectral slope, \
hemispheric asymmetry, anterior–posterior gradients, patterns of channel correlation) more than in any \
single transient, so plan the analysis around such features.
2. Support every conclusion with **signal-level evidence** from the tools.
3. Do NOT report findings the tools did not return.
4. When tools are available, analyse with a purpose: take the clinical context into account (age, \
recording protocol), then choose tools that examine the spectral distribution, hemispheric asymmetry \
and anterior–posterior gradients. Which pattern marks which cohort is for you to work out.
5. When no tools are available, reason from the clinical context and the metadata, and say plainly \
that no signal-level analysis was done.
"""

_T5_INTRO = """\
You are an expert agent in epileptology. Your input is **one long scalp-EEG recording** (continuous, often up \
to about an hour, 256 Hz, around 23 bipolar channels), and you must report **every electrographic \
seizure** in it as a time interval.

## What an electrographic seizure looks like
A seizure is an **evolving, rhythmic, abnormal discharge** that
- begins as rhythmic activity (often in the theta or alpha range, or as rhythmic spiking),
- **evolves** in frequency, amplitude and spatial extent over seconds,
- is **sustained** (usually 10 s or longer) and stands out clearly from the background,
- is often followed by post-ictal suppression or slowing.
Single spikes or sharp waves, isolated artifacts and brief bursts are **NOT** seizures; leave them out.

## Rules
1. Report seizures as a list of ``{"onset_sec": <s>, "offset_sec": <s>}`` intervals, in seconds from \
the start of the recording.
2. When the recording has **no** seizure, return an **empty list** ``[]``. Many records contain none; an empty \
list is a valid and expected answer.
3. Support every decision with **signal-level evidence** from the tools.
4. **Clinical safety**: do not over-call. Report a segment only when the evidence shows clear rhythmic \
*evolution*, not a single transient or a noisy stretch.
5. You may plan, call tools and update your memory over several turns before you answer.
"""

_T5_ANSWER = """\
{
  "action": "final_answer",
  "seizure_events": [
    {"onset_sec": <onset_in_seconds>, "offset_sec": <offset_in_seconds>}
  ]
}"""

_T5_EXTRA = """\
For a record without seizures, submit:
```json
{"action": "final_answer", "seizure_events": []}
```

You may reason in plain text around the JSON block. Submit exactly **one** ``final_answer`` JSON block \
when you are done.
"""

_T6_INTRO = """\
You are an expert agent in sleep EEG. Your input is **one whole-night PSG recording**, and you produce two things:

1. A hypnogram in 30-second epochs covering the *whole* recording, scored with the five AASM classes \
``W`` (wake), ``N1``, ``N2``, ``N3`` and ``REM``. Give it as run-length segments, one segment per \
contiguous block of the same stage, so that long stretches stay short in your answer.
2. A short **architecture summary**: REM_pct, N3_pct and sleep_efficiency.

## Rules
1. Every epoch lasts exactly **30 seconds**. The user message gives ``n_epochs_total``; the hypnogram \
MUST cover every epoch from ``0`` to ``n_epochs_total - 1`` (inclusive), with **no gaps and no overlaps**.
2. Write the stage labels exactly as ``W``, ``N1``, ``N2``, ``N3``, ``REM``; do NOT use any other label \
(no ``S2``, ``Stage 4``, ``Wake`` and so on).
3. Base each staging decision on signal-level evidence from the analysis tools.
4. **Architecture formulas**, from the five-class epoch counts over the WHOLE recording, as fractions \
in [0, 1] — NOT percentages:
   * ``REM_pct = (# REM epochs) / n_epochs_total``
   * ``N3_pct  = (# N3 epochs) / n_epochs_total``
   * ``sleep_efficiency = (# non-W epochs) / n_epochs_total``
5. You may plan, call tools and update your memory over several turns before you answer.

## AASM 5-class scoring criteria (textbook reference, all 5 stages)

Treat these as starting hypotheses rather than fixed rules. The EEG signs come first; EOG and EMG signs \
are added where they separate stages that look alike in the EEG.

- **W** (wake): posterior alpha rhythm at 8–13 Hz with the eyes closed; high EMG tone; blinks and \
saccades in the EOG.
- **N1** (drowsiness): alpha attenuated to under half of the epoch; low-amplitude mixed-frequency \
activity at 2–7 Hz; slow eye movements in the EOG; **no** spindles, K-complexes or slow waves. N1 is \
mostly recognised by exclusion; it has no single defining feature.
- **N2**: sleep spindles (11–16 Hz, bursts of 0.5 s or more) and/or K-complexes on an otherwise \
low-amplitude mixed-frequency background.
- **N3** (slow-wave, deep sleep): slow waves at 0.5–2 Hz with a peak-to-peak amplitude above 75 µV \
filling at least 20% of the epoch.
- **REM**: low-amplitude mixed-frequency EEG like N1, often with prominent theta; **rapid eye movements \
in the EOG**; the **lowest EMG tone of the night** (atonia); sometimes sawtooth waves over central \
channels.
"""

_T6_ANSWER = """\
{
  "action": "final_answer",
  "hypnogram_rle": [
    {"start_epoch": 0,   "end_epoch": 79,  "stage": "W"},
    {"start_epoch": 80,  "end_epoch": 91,  "stage": "N1"},
    {"start_epoch": 92,  "end_epoch": 250, "stage": "N2"}
  ],
  "architecture": {"REM_pct": 0.18, "N3_pct": 0.13, "sleep_efficiency": 0.86}
}"""

_ONE_ANSWER_BLOCK = (
    "\nYou may reason in plain text around the JSON block. Submit exactly **one** ``final_answer`` JSON "
    "block when you are done.\n"
)
_GATHER_EVIDENCE = (
    "\nYou may reason in plain text around the JSON block. Gather enough evidence with several tools "
    "before you conclude.\n"
)

# Per task: (introduction with rules, the text after the tool overview).
_SYSTEM_PARTS: dict[str, tuple[str, str]] = {
    "T2": (
        _T2_INTRO,
        _closing(
            "The epoch's metadata is in the user message. Give its ``record_id`` to any tool; the tools "
            "load the signal themselves.",
            '{"action": "final_answer", "classification": "<clean|ocular_contaminated|muscle_contaminated>", '
            '"findings": ["..."]}',
            "\nYou may reason in plain text around the JSON block.\n",
        ),
    ),
    "T3": (_T3_INTRO, _closing(_RECORD_ACCESS, _CLASSIFICATION_ANSWER, _GATHER_EVIDENCE)),
    "T4": (_T4_INTRO, _closing(_RECORD_ACCESS, _CLASSIFICATION_ANSWER, _GATHER_EVIDENCE)),
    "T5": (
        _T5_INTRO,
        _closing("Give ``record_id`` to the tools; they load the data themselves.", _T5_ANSWER, _T5_EXTRA),
    ),
    "T6": (
        _T6_INTRO,
        _closing(
            "Give ``record_id`` to the tools; they load the data themselves.", _T6_ANSWER, _ONE_ANSWER_BLOCK
        ),
    ),
}


def listed_tools(instance, tool_specs: Sequence[Mapping[str, Any]] | None = None) -> tuple[str, ...]:
    """The tools the system prompt lists: those the instance allows and the episode offers.

    An instance that names no tools allows all ten (T1 excepted), as the agent loop does;
    ``tool_specs`` (OpenAI function specs) narrows the list to the tools actually offered.
    """
    if instance.task.code == "T1":
        return ()
    allowed = instance.allowed_tools or OFFICIAL_TOOLS
    if tool_specs is None:
        return tuple(allowed)
    offered = {spec.get("function", spec).get("name") for spec in tool_specs}
    return tuple(name for name in allowed if name in offered)


def build_system_prompt(instance, *, tool_specs: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The system prompt of ``instance``'s task.

    Parameters
    ----------
    instance : benchmark.models.Instance
    tool_specs : sequence of dict, optional
        The OpenAI function specs the episode offers; the prompt lists those the instance allows
        (default: every tool it allows). T1 has no tools and ignores it.
    """
    code = instance.task.code
    if code == "T1":
        return T1_SYSTEM_PROMPT
    introduction, closing = _SYSTEM_PARTS[code]
    return f"{introduction}\n{tool_overview(listed_tools(instance, tool_specs))}\n\n{closing}"


# ── user prompts ────────────────────────────────────────────────────────────────────────────

_T4_REMINDER = (
    "## Important\n"
    "This task discriminates research cohorts; it is **not** a clinical diagnosis. Your answer says "
    "which cohort of this dataset the recording belongs to, and does not claim that EEG alone can "
    "diagnose the underlying condition."
)

_DEFAULT_CONTEXT = "No clinical context was given."
_DEFAULT_QUESTIONS = {
    "T2": "Classify this EEG epoch and list the findings that support your decision.",
    "T3": "Classify this EEG recording and list the findings that support your decision.",
    "T4": "Classify this EEG recording and list the findings that support your decision.",
    "T5": (
        "Find every electrographic seizure in this recording and give each as an onset/offset interval "
        "in seconds. If there is none, return an empty list."
    ),
    "T6": "Stage the whole night in 30-second epochs (AASM, 5 classes) and give the architecture summary.",
}
_T5_SCHEMA = {"seizure_events": [{"onset_sec": "float", "offset_sec": "float"}]}
_T6_SCHEMA = {
    "hypnogram_rle": [{"start_epoch": "int", "end_epoch": "int", "stage": "W|N1|N2|N3|REM"}],
    "architecture": {
        "REM_pct": "float in [0,1]",
        "N3_pct": "float in [0,1]",
        "sleep_efficiency": "float in [0,1]",
    },
}


def _classification_schema(instance) -> dict:
    properties = (instance.expected_output_schema or {}).get("properties") or {}
    labels = (properties.get("classification") or {}).get("enum") or []
    hint = "|".join(str(label) for label in labels) if labels else "string"
    return {"classification": hint, "findings": ["string"]}


def _record_metadata(instance) -> dict[str, Any]:
    """The record's metadata in the release's key order.

    Taken from the stored scenario line when there is one, because a JSON column does not keep key
    order on every database (PostgreSQL's jsonb sorts keys), and T2–T4 show keys in file order.
    """
    text = (instance.release_lines or {}).get("scenario", {}).get("text")
    if text:
        records = json.loads(text).get("records") or []
        if records and isinstance(records[0].get("metadata"), dict):
            return records[0]["metadata"]
    return dict(instance.metadata or {})


def _t1_user_prompt(instance) -> str:
    question = str(instance.prompt_input.get("question", "")).strip()
    options = instance.prompt_input.get("options") or {}
    lines = ["## Question", question, "", "## Options"]
    lines += [f"{letter}. {options[letter]}" for letter in "ABCD" if letter in options]
    lines.append(
        "\nAnswer with the letter of the single correct option, as JSON:\n"
        '```json\n{"action": "final_answer", "answer": "<A|B|C|D>"}\n```'
    )
    return "\n".join(lines)


def build_user_prompt(instance, *, record_id: str | None = None) -> str:
    """The user prompt of ``instance``: its context, record, question and expected answer schema.

    ``record_id`` is the episode's (default: the suite's id of the instance).
    """
    code = instance.task.code
    if code == "T1":
        return _t1_user_prompt(instance)
    task_input = instance.prompt_input or {}
    parts = [f"## Clinical Context\n{task_input.get('clinical_context') or _DEFAULT_CONTEXT}"]
    parts.append("\n## EEG Record")
    parts.append(f"- **Record ID**: `{record_id or instance.record_id}`")
    for key, value in prompt_metadata(code, _record_metadata(instance)).items():
        parts.append(f"- **{key.replace('_', ' ').title()}**: {value}")
    parts.append(f"\n## Question\n{task_input.get('question') or _DEFAULT_QUESTIONS[code]}")
    if code == "T4":
        parts.append(f"\n{_T4_REMINDER}")
    schema = {"T5": _T5_SCHEMA, "T6": _T6_SCHEMA}.get(code) or _classification_schema(instance)
    parts.append(f"\n## Expected Output Schema\n```json\n{json.dumps(schema, ensure_ascii=False)}\n```")
    return "\n".join(parts)


def build_messages(
    instance, *, tool_specs: Sequence[Mapping[str, Any]] | None = None, record_id: str | None = None
) -> list[dict[str, str]]:
    """The opening ``[system, user]`` messages of an episode on ``instance`` with ``record_id``."""
    return [
        {"role": "system", "content": build_system_prompt(instance, tool_specs=tool_specs)},
        {"role": "user", "content": build_user_prompt(instance, record_id=record_id)},
    ]
