"""The search's filters: one form for the ``/episodes/`` page and ``/api/episodes/``, every field optional."""
from django import forms

from benchmark.models import ModelSpec, Suite
from benchmark.scoring import TASK_IDS
from config.ids import MAX_ID
from leaderboard.analysis.failure_modes import shown_codes
from leaderboard.search.selectors import RANGES, SORTS
from runs.models import Episode
from tools_app.registry import TOOL_NAMES

OUTCOMES = [("correct", "correct"), ("wrong", "wrong"), ("missing", "missing answer"), ("error", "error")]
SORT_LABELS = {
    "": "newest first", "n_tool_calls": "fewest tool calls", "-n_tool_calls": "most tool calls",
    "tokens": "fewest tokens", "-tokens": "most tokens", "coverage": "least coverage", "-coverage": "most coverage",
}


class EpisodeSearchForm(forms.Form):
    """Which episodes to list and in what order; a bad value is the field's error.

    ``staff`` offers every suite (anyone else those not held out); ``references`` offers the
    outcomes correct and wrong and the failure modes that tell the reference (``access.REFERENCE_MODES``).
    """

    suite = forms.ChoiceField(required=False)
    task = forms.ChoiceField(choices=[("", "all tasks"), *((code, code) for code in TASK_IDS)], required=False)
    model = forms.ChoiceField(required=False)
    run = forms.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    outcome = forms.ChoiceField(required=False)
    ended_by = forms.ChoiceField(choices=[("", "however it ended"), *Episode.EndedBy.choices], required=False,
                                 label="ended by")
    failure_mode = forms.ChoiceField(required=False, label="failure mode")
    tool = forms.ChoiceField(choices=[("", "any tool"), *((name, name) for name in TOOL_NAMES)], required=False,
                             label="used the tool")
    tool_min = forms.IntegerField(min_value=1, max_value=MAX_ID, required=False, label="at least (times)")
    tool_calls_min = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="tool calls from")
    tool_calls_max = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="tool calls to")
    turns_min = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="turns from")
    turns_max = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="turns to")
    tokens_min = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="tokens from")
    tokens_max = forms.IntegerField(min_value=0, max_value=MAX_ID, required=False, label="tokens to")
    coverage_min = forms.FloatField(min_value=0, max_value=1, required=False, label="evidence coverage from")
    coverage_max = forms.FloatField(min_value=0, max_value=1, required=False, label="evidence coverage to")
    q = forms.CharField(max_length=200, required=False, label="text in the model's replies")
    sort = forms.ChoiceField(choices=[(key, SORT_LABELS[key]) for key in SORTS], required=False, label="order")

    def __init__(self, *args, staff: bool, references: bool, **kwargs):
        super().__init__(*args, **kwargs)
        suites = Suite.objects.order_by("name")
        if not staff:
            suites = suites.exclude(references=Suite.References.HELD_OUT)
        models = ModelSpec.objects.filter(runs__isnull=False).distinct().order_by("name")
        for field, rows, anything in (("suite", suites, "any suite"), ("model", models, "any model")):
            names = rows.values_list("name", flat=True)
            self.fields[field].choices = [("", anything), *((name, name) for name in names)]
        outcomes = OUTCOMES if references else [choice for choice in OUTCOMES if choice[0] not in ("correct", "wrong")]
        self.fields["outcome"].choices = [("", "any outcome"), *outcomes]
        self.fields["failure_mode"].choices = [("", "any failure mode"),
                                               *((code, code) for code in shown_codes(references=references))]

    def clean(self):
        cleaned = super().clean()
        for name in RANGES:
            low, high = cleaned.get(f"{name}_min"), cleaned.get(f"{name}_max")
            if low is not None and high is not None and low > high:
                self.add_error(f"{name}_max", f"Give a {self.fields[f'{name}_max'].label} not below the "
                               f"{self.fields[f'{name}_min'].label} ({high} < {low}).")
        if cleaned.get("tool_min") is not None and not cleaned.get("tool"):
            self.add_error("tool_min", "Choose the tool whose calls to count.")
        return cleaned

    def selection(self) -> dict:
        """The ``selectors.episode_search`` filters chosen (blank or None where any will do); none when invalid."""
        return dict(self.cleaned_data) if self.is_valid() else {}
