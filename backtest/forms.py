from __future__ import annotations

from django import forms

from records.policy import PRESET_DESCRIPTIONS, PRESETS

from . import service


class BacktestForm(forms.Form):
    """What to replay: the window and the candidate (a preset and/or values)."""

    days = forms.IntegerField(min_value=1, initial=30, label="Days back")
    preset = forms.ChoiceField(
        required=False,
        choices=[("", "none: the current values")]
        + [(name, f"{name}: {PRESET_DESCRIPTIONS[name]}") for name in PRESETS],
    )
    values = forms.CharField(
        required=False,
        max_length=2000,
        label="Values",
        help_text="field=value, one a line (e.g. max_records=800)",
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    def candidate(self, app_name: str):
        """The validated candidate policy, or None with the problem added to the form."""
        data = self.cleaned_data
        try:
            values = service.parse_sets([v for v in data["values"].splitlines() if v.strip()])
            return service.candidate_policy(app_name, preset=data["preset"], values=values)
        except service.BacktestError as exc:
            self.add_error("values", str(exc))
            return None


class TuneForm(forms.Form):
    """The window to tune over; the space searched is fixed (``backtest.tune``)."""

    days = forms.IntegerField(min_value=1, initial=30, label="Days back")
