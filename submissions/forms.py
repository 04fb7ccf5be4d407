"""The upload form (the page's and, field for field, the API's) and staff's review form."""
from django import forms

from submissions.services import submittable_suites

OPEN_WEIGHTS = (("", "not reported"), ("yes", "open weights"), ("no", "closed weights"))


class SubmissionForm(forms.Form):
    suite = forms.ModelChoiceField(queryset=submittable_suites(), to_field_name="name",
                                   help_text="The suite the run was played on (only suites with public references).")
    archive = forms.FileField(help_text="A .zip or .tar.gz of the official runner's output for one run, "
                                        "as export_run writes it (runs.jsonl, trajectories/, run_status.json, summary.json), "
                                        "or the run-all layout with one folder per task.")
    display_name = forms.CharField(max_length=100, label="Model name", help_text="As the leaderboard should show it.")
    provider_model = forms.CharField(max_length=200, label="Provider model string", help_text="e.g. openai/gpt-4o")
    organisation = forms.CharField(max_length=200)
    family = forms.CharField(max_length=100, required=False)
    parameters = forms.CharField(max_length=32, required=False, help_text='e.g. "70B"; empty: not reported.')
    open_weights = forms.ChoiceField(choices=OPEN_WEIGHTS, required=False)
    link = forms.URLField(max_length=500, required=False, assume_scheme="https")
    methodology = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=5000, required=False,
                                  help_text="How the run was made: the agent, any changes to the runner, the hardware.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["suite"].queryset = submittable_suites()  # read when the form is made, not when imported

    def card(self) -> dict:
        data = self.cleaned_data
        return {
            "display_name": data["display_name"].strip(), "provider_model": data["provider_model"].strip(),
            "organisation": data["organisation"].strip(), "family": data.get("family", "").strip(),
            "parameters": data.get("parameters", "").strip() or "not reported",
            "open_weights": {"yes": True, "no": False}.get(data.get("open_weights") or ""),
            "link": data.get("link", ""), "methodology": data.get("methodology", "").strip(),
        }


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(choices=(("approve", "approve and publish"), ("reject", "reject")))
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=5000, required=False,
                             help_text="Required to reject: the submitter reads it.")
