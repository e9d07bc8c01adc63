from django import forms

from records.models import APP_NAME_MAX, USER_ID_MAX
from records.selectors.apps import UnknownApp, is_known_app

from .models import REASON_MAX, TICKET_MAX


class ErasureForm(forms.Form):
    scope = forms.ChoiceField(
        choices=[("app", "One app"), ("all", "All apps")],
        widget=forms.RadioSelect,
        initial="app",
    )
    # Names and ids are not stripped: erasure must address exactly the app and the id the
    # agents use (an agent may have named its app "shop " beside another "shop").
    app_name = forms.CharField(
        required=False,
        max_length=APP_NAME_MAX,
        strip=False,
        widget=forms.TextInput(attrs={"list": "known-apps", "autocomplete": "off"}),
    )
    user_id = forms.CharField(
        max_length=USER_ID_MAX, strip=False, widget=forms.TextInput(attrs={"autocomplete": "off"})
    )
    user_id_again = forms.CharField(
        label="User id again",
        max_length=USER_ID_MAX,
        strip=False,
        help_text="Type it again (do not paste); it must match exactly.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    ticket = forms.CharField(max_length=TICKET_MAX, help_text="Your compliance ticket reference.")
    reason = forms.CharField(
        max_length=REASON_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Kept with the receipt: do not write the user id or personal data here.",
    )

    def clean(self):
        data = super().clean()
        if data.get("scope") == "app":
            app_name = data.get("app_name") or ""
            if not app_name.strip():
                self.add_error("app_name", "Name the app, or choose all apps.")
            elif not is_known_app(app_name):
                self.add_error("app_name", str(UnknownApp(app_name)))
        return data

    @property
    def chosen_app(self) -> str | None:
        return self.cleaned_data["app_name"] if self.cleaned_data["scope"] == "app" else None


class PasswordCheckForm(forms.Form):
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )
