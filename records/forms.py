"""Forms of the dashboard: parsing and messages people can act on. Rules live in the
policy, the models and the staff services; forms only carry their messages to a page."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django import forms
from django.core.validators import MaxValueValidator

from .models import APP_NAME_MAX, POLICY_FIELDS, ImportanceRule, Policy, preset_values
from .policy import LIMITS, PRESET_DESCRIPTIONS, PRESETS, PolicyError, limit_message
from .selectors.apps import UnknownApp, is_known_app
from .selectors.sessions import SESSION_STATES

POLICY_LABELS = {
    "ttl_days": "TTL (days)",
    "half_life_hours": "Half-life (hours)",
    "max_records": "Max records per user",
    "max_tokens": "Max tokens per user",
    "w_recency": "Recency weight",
    "w_frequency": "Frequency weight",
    "w_importance": "Importance weight",
    "saturation_hits": "Frequency saturation (hits)",
    "fresh_start": "Fresh start (half-lives)",
    "past_due_half_life_hours": "Past-due half-life (hours)",
    "supersede": "Newer statements supersede older",
    "information_importance": "Importance from information (unmatched text)",
    "session_idle_days": "Session idle (days)",
    "summarise": "Summarise before evicting",
    "summarise_min_cluster": "Smallest cluster to summarise",
}


def _number(label, *, min_value=None, integer=False, help_text="", step="any"):
    field = forms.IntegerField if integer else forms.FloatField
    messages = {
        "required": f"{label} is required.",
        "invalid": f"{label} must be a number.",
    }
    if min_value is not None:
        messages["min_value"] = f"{label} must be at least {min_value}."
    return field(
        label=label,
        min_value=min_value,
        help_text=help_text,
        error_messages=messages,
        widget=forms.NumberInput(attrs={"step": 1 if integer else step}),
    )


def _apply_limits(form: forms.BaseForm) -> None:
    """The policy's upper bounds (``policy.LIMITS``) as field validators, in place of the
    database's integer range, so every policy form refuses a huge value with the same
    sentence, before it becomes a duration no date can hold."""
    for name, field in form.fields.items():
        if name in LIMITS:
            field.validators = [
                v for v in field.validators if not isinstance(v, MaxValueValidator)
            ] + [MaxValueValidator(LIMITS[name][0], message=limit_message(name))]
            field.widget.attrs["max"] = LIMITS[name][0]


class WhatIfForm(forms.Form):
    """Other policy values for a dry-run; the preview applies them to one user."""

    ttl_days = _number(POLICY_LABELS["ttl_days"], min_value=1, integer=True)
    half_life_hours = _number(POLICY_LABELS["half_life_hours"], help_text="720 h = 30 days")
    max_records = _number(POLICY_LABELS["max_records"], min_value=1, integer=True)
    max_tokens = _number(POLICY_LABELS["max_tokens"], min_value=1, integer=True)
    w_recency = _number(POLICY_LABELS["w_recency"], min_value=0, step="0.05")
    w_frequency = _number(POLICY_LABELS["w_frequency"], min_value=0, step="0.05")
    w_importance = _number(POLICY_LABELS["w_importance"], min_value=0, step="0.05")

    def __init__(self, *args, policy: Policy, **kwargs):
        self.policy = policy
        kwargs.setdefault("initial", {f: getattr(policy, f) for f in self.base_fields})
        super().__init__(*args, **kwargs)
        _apply_limits(self)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            half_life = timedelta(hours=data["half_life_hours"])
        except OverflowError:  # the maximum is bounded: only a huge negative gets here
            self.add_error("half_life_hours", "Half-life must be positive.")
            return data
        try:
            self.params = replace(
                self.policy.params(),
                ttl=timedelta(days=data["ttl_days"]),
                half_life=half_life,
                max_records=data["max_records"],
                max_tokens=data["max_tokens"],
                w_recency=data["w_recency"],
                w_frequency=data["w_frequency"],
                w_importance=data["w_importance"],
            )
        except PolicyError as error:
            # The pure policy's sentences, capitalised, one per problem.
            for problem in str(error).split("; "):
                self.add_error(None, problem[:1].upper() + problem[1:] + ".")
        return data

    def differs_from_policy(self) -> bool:
        return self.is_valid() and any(
            self.cleaned_data[f] != getattr(self.policy, f) for f in self.base_fields
        )


class ImportanceForm(forms.Form):
    """Parsing only: the range and the reason are checked by ``staff.set_importance``."""

    importance = forms.FloatField(
        error_messages={
            "required": "Give the new importance, from 0 to 1.",
            "invalid": "Importance must be a number from 0 (forgettable) to 1 (essential).",
        },
        widget=forms.NumberInput(attrs={"step": "0.05", "min": 0, "max": 1}),
    )
    reason = forms.CharField(
        max_length=500,
        required=False,  # the service refuses a blank reason with its own message
        widget=forms.TextInput(attrs={"placeholder": "Why (goes to the audit log)"}),
    )


class PolicyForm(forms.ModelForm):
    """Every policy value; validation is Policy.clean() (run by the ModelForm).

    Choosing a preset replaces the scoring values with the preset's (caps, TTL and the
    sweeper's settings stay as typed).
    """

    preset = forms.ChoiceField(
        required=False,
        label="Preset",
        choices=[("", "none: the values below")]
        + [(name, f"{name}: {PRESET_DESCRIPTIONS[name]}") for name in PRESETS],
        error_messages={
            "invalid_choice": "%(value)s is not a preset; choose one of " + ", ".join(PRESETS) + "."
        },
    )

    note = forms.CharField(
        max_length=500,
        label="Why",
        error_messages={"required": "Say why the policy changes; it goes into the history."},
        widget=forms.TextInput(attrs={"placeholder": "e.g. tighter caps after the storage review"}),
    )

    field_order = ["preset"]

    class Meta:
        model = Policy
        fields = POLICY_FIELDS
        labels = POLICY_LABELS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _apply_limits(self)

    def clean(self):
        data = super().clean()
        if data.get("preset"):
            data.update(preset_values(data["preset"]))
        return data

    def changes(self) -> dict:
        data = self.cleaned_data
        chosen = preset_values(data["preset"]) if data.get("preset") else {}
        return {
            f: data[f]
            for f in POLICY_FIELDS
            if f in self.changed_data or (f in chosen and chosen[f] != self.initial.get(f))
        }


class SessionFilterForm(forms.Form):
    app = forms.CharField(required=False, max_length=128)
    state = forms.ChoiceField(
        required=False, choices=[("", "idle and active"), *[(s, s) for s in SESSION_STATES]]
    )
    q = forms.CharField(required=False, max_length=200, label="Search")


RULE_SCOPES = [("all", "Every app"), ("app", "One app (name it below)")]


class RuleForm(forms.ModelForm):
    """An importance rule; validation is ImportanceRule.clean() (each problem at its field).

    Its scope is an explicit choice, never pre-selected for a new rule: a rule scoped to
    one app by accident (the app being viewed) would silently skip every other app.
    """

    scope = forms.ChoiceField(
        choices=RULE_SCOPES,
        label="Applies to",
        widget=forms.RadioSelect,
        error_messages={"required": "Choose whether the rule applies to every app or one app."},
        help_text="An app's own rule wins over an every-app rule of the same name.",
    )
    field_order = ["scope", "app_name"]

    importance = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        widget=forms.NumberInput(attrs={"step": "0.05", "min": 0, "max": 1}),
        help_text="0 (forgettable) to 1 (essential); score rules only.",
        error_messages={
            "invalid": "Importance must be a number from 0 to 1.",
            "min_value": "Importance must be a number from 0 to 1.",
            "max_value": "Importance must be a number from 0 to 1.",
        },
    )
    note = forms.CharField(
        max_length=500,
        label="Why",
        error_messages={"required": "Say why the rule changes; it goes into the audit log."},
        widget=forms.TextInput(attrs={"placeholder": "e.g. loyalty tiers matter to support"}),
    )

    class Meta:
        model = ImportanceRule
        fields = (
            "app_name",
            "name",
            "pattern",
            "action",
            "importance",
            "pin",
            "category",
            "enabled",
        )
        labels = {
            "app_name": "App",
            "pattern": "Pattern",
            "pin": "Pin matching records",
            "enabled": "Enabled",
        }
        help_texts = {
            "app_name": "The app, when the rule applies to one app only.",
            "name": "A shipped default's name replaces that default.",
            "pattern": "Regular expression for RE2, case-insensitive: Python's syntax "
            "without backreferences or lookaround, matched in time linear in the text. "
            r"\w, \d, \s and \b are ASCII; \pL is any letter. Score rules match "
            "anywhere in the text; drop rules must match the whole text.",
            "enabled": "A disabled rule with a default's name switches that default off.",
        }
        widgets = {
            "app_name": forms.TextInput(attrs={"list": "rule-apps", "autocomplete": "off"}),
            "pattern": forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["app_name"].strip = False
        if self.instance.pk:  # an existing rule: its own scope, shown as it is
            self.fields["scope"].initial = "app" if self.instance.app_name else "all"

    def clean_app_name(self):
        # Exactly as typed (agents name apps exactly, spaces included); blank is none.
        app = self.cleaned_data.get("app_name") or ""
        return app if app.strip() else ""

    def clean(self):
        scope, app = self.cleaned_data.get("scope"), self.cleaned_data.get("app_name", "")
        if scope == "app" and not app and "app_name" not in self.errors:
            self.add_error("app_name", "Name the app this rule is for, or choose every app.")
        elif scope == "app" and app and not is_known_app(app) and app != self.instance.app_name:
            # Names are kept exactly: "shop " is not "shop", and a rule for an app no agent
            # writes to would never apply (create the app's policy first to prepare one).
            self.add_error("app_name", str(UnknownApp(app)))
        elif scope == "all" and app:
            self.add_error(
                "app_name",
                f"Every app was chosen, yet {app!r} is named: clear it or choose one app.",
            )
        data = super().clean()
        name, app = data.get("name"), data.get("app_name", "")
        if (
            name
            and ImportanceRule.objects.filter(app_name=app, name=name)
            .exclude(pk=self.instance.pk)
            .exists()
        ):
            where = f"app {app}" if app else "every app"
            self.add_error(
                "name", f"There is already a rule named {name!r} for {where}; edit that one."
            )
        return data


class TryRulesForm(forms.Form):
    """A sample text to run through an app's rules; nothing is stored."""

    app = forms.CharField(required=False, max_length=128, strip=False)  # exactly as named
    text = forms.CharField(
        max_length=4000,
        strip=False,
        label="Sample text",
        error_messages={
            "required": "Type a sample text to see what the rules decide.",
            "max_length": "Try at most 4,000 characters.",
        },
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "e.g. I'm allergic to penicillin"}),
    )


class RescoreForm(forms.Form):
    app = forms.CharField(  # exactly as named: "shop " is not "shop"
        max_length=128, strip=False, error_messages={"required": "Choose the app to re-score."}
    )
    note = forms.CharField(required=False, max_length=500, label="Why")

    def clean_app(self):
        app = self.cleaned_data["app"]
        if not app.strip():
            raise forms.ValidationError("Choose the app to re-score.")
        return app


class NewPolicyForm(forms.Form):
    """Start managing a new app: its first policy, with the defaults (ops only).

    The name is kept exactly as typed (agents match it exactly); its rules are
    ``records.staff.check_new_app_name``, which reports them at this field.
    """

    app_name = forms.CharField(
        label="App name",
        strip=False,
        max_length=APP_NAME_MAX,
        widget=forms.TextInput(
            attrs={"autocomplete": "off", "placeholder": "e.g. travel-concierge"}
        ),
    )
    reason = forms.CharField(
        label="Why",
        max_length=500,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "e.g. new agent going live next week"}),
    )
