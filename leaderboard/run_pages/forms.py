"""Forms of the staff pages: starting a run, and the filters of a run's episode table."""
from django import forms
from django.core.validators import RegexValidator

from benchmark.models import ModelSpec, Suite, Task
from benchmark.scoring import TASK_IDS
from benchmark.wording import INSTALL_COMMAND, OFFICIAL, PLATFORM, default_prompt_set, official_available
from runs.agents import EXTERNAL_FAMILY, HUMAN_FAMILY
from runs.model.agent import PAPER_MAX_TOKENS, PAPER_PROTOCOL, PAPER_TEMPERATURE
from runs.model.routing import check_key_env, check_model_host
from runs.models import MAX_EPOCHS, Status

ENV_NAME = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$", "Give the name of the environment variable that holds the key, not the key."
)
#: Run.limits caps the form offers, with their labels; runs.episode.limits.EpisodeLimits reads them.
CAPS = {
    "max_turns": "Turns per episode",
    "max_tool_calls": "Tool calls per episode",
    "max_total_tokens": "Tokens per episode",
    "max_cost_usd": "Cost per episode (USD)",
    "max_wall_time_sec": "Wall-clock time per episode (s)",
}


class NewRunForm(forms.Form):
    """What a staff member gives to queue a run: the model, where it is served, the suite and the caps."""

    model = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        required=False,
        help_text="A model known to the platform. The paper's models need their litellm model string below the "
        "first time; it is kept, and the run is listed as that model.",
    )
    provider_model = forms.CharField(
        max_length=200,
        required=False,
        label="Litellm model string",
        help_text="For a model not listed, or a listed one that has none yet: e.g. openai/gpt-4o, or openai/<name> "
        "with an API base; baseline/heuristic needs no key.",
    )
    name = forms.CharField(max_length=200, required=False, label="Run name")
    api_base = forms.URLField(max_length=500, required=False, label="API base", assume_scheme="https")
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        validators=[ENV_NAME],
        label="Environment variable with the API key",
        help_text="Its name, e.g. OPENAI_API_KEY; the key itself is never stored.",
    )
    suite = forms.ModelChoiceField(
        queryset=Suite.objects.select_related("release").order_by("name"), empty_label="— choose a suite —"
    )
    tasks = forms.MultipleChoiceField(
        choices=[(code, code) for code in TASK_IDS], initial=list(TASK_IDS), widget=forms.CheckboxSelectMultiple
    )
    limit = forms.IntegerField(
        min_value=1, required=False, label="Instances per task", help_text="Blank: every instance (an official run)."
    )
    epochs = forms.IntegerField(
        min_value=1,
        max_value=MAX_EPOCHS,
        initial=1,
        required=False,
        label="Epochs",
        help_text=f"Play each instance this many times (1 to {MAX_EPOCHS}; blank: once); the run page then gives each "
        "task's mean ± standard deviation over epochs and how often an instance's correctness flips.",
    )
    concurrency = forms.IntegerField(
        min_value=1, max_value=256, initial=4, label="Concurrency", help_text="Episodes in flight at a time."
    )
    prompt_set = forms.ChoiceField(
        label="Prompt set",
        help_text="Whose wording the model reads. Only the official wording (with the text protocol, 8192 tokens "
        "and temperature 0 on the official suite) is comparable with the paper.",
    )
    tool_protocol = forms.ChoiceField(
        choices=[("text", "text: JSON actions in the reply"), ("native", "native function calling")],
        initial=PAPER_PROTOCOL,
        label="Tool protocol",
        help_text="text, as in the paper: the model writes each tool call or answer as JSON in its reply; "
        "native: the provider's function calling.",
    )
    temperature = forms.FloatField(min_value=0, max_value=2, initial=PAPER_TEMPERATURE)
    max_tokens = forms.IntegerField(min_value=1, initial=PAPER_MAX_TOKENS, label="Max tokens per reply")
    max_turns = forms.IntegerField(min_value=1, max_value=1000, required=False, label=CAPS["max_turns"])
    max_tool_calls = forms.IntegerField(min_value=0, max_value=999, required=False, label=CAPS["max_tool_calls"])
    max_total_tokens = forms.IntegerField(min_value=1, required=False, label=CAPS["max_total_tokens"])
    max_cost_usd = forms.DecimalField(min_value=0, decimal_places=4, required=False, label=CAPS["max_cost_usd"])
    max_wall_time_sec = forms.FloatField(min_value=1, required=False, label=CAPS["max_wall_time_sec"])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["suite"].label_from_instance = suite_label
        # A display name alone does not say what a run will call, nor a bare code what a task is.
        self.fields["model"].choices = model_choices()
        task_names = dict(Task.objects.filter(code__in=TASK_IDS).values_list("code", "name"))
        self.fields["tasks"].choices = [
            (code, f"{code} · {task_names[code]}" if code in task_names else code) for code in TASK_IDS
        ]
        prompt_sets = self.fields["prompt_set"]
        if official_available():
            prompt_sets.choices = [(OFFICIAL, "official (the paper's wording)"), (PLATFORM, "platform (paraphrased)")]
        else:
            prompt_sets.choices = [(PLATFORM, "platform (paraphrased)")]
            prompt_sets.help_text += f" The official wording needs the official package: `{INSTALL_COMMAND}`."
        prompt_sets.initial = default_prompt_set()

    def clean_epochs(self):
        return self.cleaned_data["epochs"] or 1

    def clean_api_key_env(self):
        return _checked(check_key_env, self.cleaned_data["api_key_env"])

    def clean_api_base(self):
        return _checked(check_model_host, self.cleaned_data["api_base"])

    def clean_model(self) -> ModelSpec | None:
        chosen = self.cleaned_data["model"]
        return None if chosen is None else ModelSpec.objects.get(pk=chosen)

    def clean_provider_model(self) -> str:
        return self.cleaned_data["provider_model"].strip()

    def clean(self):
        cleaned = super().clean()
        chosen, string = cleaned.get("model"), cleaned.get("provider_model")
        if "model" in self.errors or "provider_model" in self.errors:
            return cleaned
        if chosen is None and not string:
            raise forms.ValidationError("Choose a model or give a litellm model string.")
        if chosen is not None and not chosen.provider_model and not string:
            self.add_error("provider_model", f"{chosen.name} has no litellm model string yet: give the one that "
                           "calls it (e.g. openai/<name>); it is kept for its next runs.")
        elif chosen is not None and chosen.provider_model and string and string != chosen.provider_model:
            self.add_error("provider_model", f"{chosen.name} runs {chosen.provider_model}: leave this blank, or "
                           "choose no model above to run another string.")
        return cleaned

    def decoding_settings(self) -> dict:
        data = self.cleaned_data
        return {key: data[key] for key in ("tool_protocol", "temperature", "max_tokens")}

    def limits(self) -> dict:
        data = self.cleaned_data
        limits = {"concurrency": data["concurrency"]}
        for key in CAPS:
            if data.get(key) is not None:
                limits[key] = float(data[key]) if key == "max_cost_usd" else data[key]
        return limits


def suite_label(suite: Suite) -> str:
    """A suite's choice: its name and release, and "synthetic" where the release's name does not say so."""
    release = str(suite.release)
    said = not suite.release.is_synthetic or "synthetic" in release.lower()
    return f"{suite.name} ({release}{'' if said else ', synthetic'})"


def model_choices() -> list:
    """The new-run form's models: an empty choice, those that can run here, then those without a model string.

    A person's (``human/…``) and an external agent's specs are left out: the platform cannot play them.
    Each label says what a run calls: "GPT-4o — openai/gpt-4o", "baseline/heuristic", "GPT-5.5 — no model string".
    """
    known = ModelSpec.objects.exclude(family__in=(HUMAN_FAMILY, EXTERNAL_FAMILY)).order_by("name")
    runnable, unset = [], []
    for spec in known.only("name", "provider_model"):
        if not spec.provider_model:
            unset.append((spec.pk, f"{spec.name} — no model string"))
        elif spec.provider_model == spec.name:
            runnable.append((spec.pk, spec.name))
        else:
            runnable.append((spec.pk, f"{spec.name} — {spec.provider_model}"))
    groups = [("Runnable here", runnable), ("Give a model string below (the paper's models)", unset)]
    return [("", "— a new model string below —"), *[(label, group) for label, group in groups if group]]


def _checked(check, value):
    """``value`` if ``check(value)`` accepts it, else its ValueError as the field's error."""
    try:
        check(value)
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from None
    return value


class EpisodeFilterForm(forms.Form):
    """Filters of a run's episode table; every field optional."""

    OUTCOMES = [("", "any outcome"), ("correct", "correct"), ("wrong", "wrong"),
                ("missing", "missing answer"), ("error", "error")]

    task = forms.ChoiceField(choices=[("", "all tasks"), *[(code, code) for code in TASK_IDS]], required=False)
    outcome = forms.ChoiceField(choices=OUTCOMES, required=False)
    ended_by = forms.ChoiceField(required=False, label="ended by")
    failure_mode = forms.ChoiceField(required=False, label="failure mode")
    q = forms.CharField(max_length=200, required=False, label="search the trajectories")

    def __init__(self, *args, ended_by_choices=(), failure_modes=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ended_by"].choices = [("", "however it ended"), *ended_by_choices]
        self.fields["failure_mode"].choices = [("", "any failure mode"), *((code, code) for code in failure_modes)]


class RunFilterForm(forms.Form):
    """Filters of the runs list, every field optional: the runs' status, model and suite."""

    status = forms.ChoiceField(choices=[("", "any status"), *Status.choices], required=False)
    model = forms.ModelChoiceField(
        queryset=ModelSpec.objects.filter(runs__isnull=False).distinct().order_by("name"),
        to_field_name="name",
        required=False,
        empty_label="any model",
    )
    suite = forms.ModelChoiceField(
        queryset=Suite.objects.order_by("name"), to_field_name="name", required=False, empty_label="any suite"
    )

    def selection(self) -> dict:
        """The ``selectors.run_list`` filters chosen (names; None where any will do), or none when invalid."""
        if not self.is_valid():
            return {}
        data = self.cleaned_data
        return {
            "status": data["status"] or None,
            "model": data["model"].name if data["model"] else None,
            "suite": data["suite"].name if data["suite"] else None,
        }
