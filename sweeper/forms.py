"""Forms of the Sweeps pages: parsing and messages people can act on."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django import forms

from .models import ApplyStatus, EntryKind, RunKind

KIND_CHOICES = [
    (RunKind.SWEEP.value, "Idle-session sweep"),
    (RunKind.ENFORCE.value, "Cap enforcement"),
]
LONGEST_PREVIEW = timedelta(days=3660)


class StartRunForm(forms.Form):
    """Start a sweep or an enforcement pass; dry-runs may look ahead ("as of")."""

    kind = forms.ChoiceField(
        choices=KIND_CHOICES,
        label="What",
        error_messages={"invalid_choice": "Choose an idle-session sweep or cap enforcement."},
    )
    app = forms.ChoiceField(required=False, label="App")
    as_of = forms.DateField(
        required=False,
        label="As of",
        help_text="A later day, at this time of day; blank: now.",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages={"invalid": "Give the day as YYYY-MM-DD."},
    )

    def __init__(self, *args, dry_run: bool, apps: list[str], today: date, **kwargs):
        super().__init__(*args, **kwargs)
        self.dry_run = dry_run
        self.today = today
        self.fields["app"].choices = [("", "all apps"), *[(a, a) for a in apps]]
        self.fields["app"].error_messages["invalid_choice"] = (
            "Choose one of the listed apps, or all apps."
        )
        if not dry_run:
            del self.fields["as_of"]

    def clean_as_of(self):
        as_of = self.cleaned_data.get("as_of")
        if as_of is None:
            return None
        if as_of < self.today:
            raise forms.ValidationError(
                "As of must be today or a later day: a dry-run previews what would go, "
                "not what went."
            )
        if as_of - self.today > LONGEST_PREVIEW:
            raise forms.ValidationError("As of must be within ten years from today.")
        return as_of

    def as_of_datetime(self, now: datetime) -> datetime | None:
        """The run's clock: the chosen day at the current time of day (None: now)."""
        as_of = self.cleaned_data.get("as_of")
        if as_of is None or as_of == self.today:
            return None
        return now + timedelta(days=(as_of - self.today).days)


class ReportFilterForm(forms.Form):
    app = forms.CharField(required=False, max_length=128)
    user = forms.CharField(required=False, max_length=256, label="User")
    kind = forms.ChoiceField(
        required=False, choices=[("", "sessions and records"), *EntryKind.choices]
    )
    reason = forms.CharField(required=False, max_length=32)
    status = forms.ChoiceField(
        required=False, label="Apply status", choices=[("", "any"), *ApplyStatus.choices]
    )

    def filters(self) -> dict:
        self.is_valid()  # each field that validated filters; one that did not shows why
        data = self.cleaned_data
        return {
            "app_name": (data.get("app") or "").strip(),
            "user_id": (data.get("user") or "").strip(),
            "kind": data.get("kind") or "",
            "reason": (data.get("reason") or "").strip(),
            "apply_status": data.get("status") or "",
        }
