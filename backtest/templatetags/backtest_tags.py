"""The backtest's card on the Policies page: the page (records) includes the card's
template and this tag builds its empty form, so records never imports backtest."""

from django import template

from ..forms import BacktestForm, TuneForm

register = template.Library()


@register.simple_tag
def backtest_form() -> BacktestForm:
    return BacktestForm()


@register.simple_tag
def tune_form() -> TuneForm:
    return TuneForm()
