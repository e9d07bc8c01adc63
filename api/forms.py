from django import forms

from records.models import APP_NAME_MAX

from .keys import NAME_MAX


class NewApiKeyForm(forms.Form):
    app_name = forms.CharField(
        max_length=APP_NAME_MAX,
        label="App",
        help_text="The key can use this app only.",
        widget=forms.TextInput(attrs={"list": "known-apps", "autocomplete": "off"}),
    )
    name = forms.CharField(
        max_length=NAME_MAX, label="Name", help_text="What it is for, e.g. 'web agent (prod)'."
    )
