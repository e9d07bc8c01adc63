from django import forms

from . import audit


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(
        required=False, choices=[("", "any action"), *[(a, a) for a in audit.ACTIONS]]
    )
    actor = forms.CharField(required=False, max_length=150, label="Staff member")
    app = forms.CharField(required=False, max_length=128)
    user = forms.CharField(required=False, max_length=256, label="Memory user")
    since = forms.DateField(
        required=False,
        label="From",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages={"invalid": "Give the start date as YYYY-MM-DD."},
    )
    until = forms.DateField(
        required=False,
        label="To",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages={"invalid": "Give the end date as YYYY-MM-DD."},
    )

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date is before the start date.")
        return data
