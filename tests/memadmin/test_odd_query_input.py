"""Odd but possible query input on dashboard pages: a clear answer, never a 500."""

import pytest
from django.urls import reverse

from records.policies import policy_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/audit/?until=9999-12-31",  # the last day there is
        "/audit/?since=0001-01-01&until=9999-12-31",
        "/sweeps/?started=%C2%B2",  # "²": a digit to str.isdigit, not to int()
        "/sweeps/?started=99999999999999999999",
        "/users/?q=a%00b",  # NUL, which no id holds
        "/rules/?app=a%00b",
    ],
)
def test_pages_answer_odd_query_values(login, url):
    policy_for("shop")
    assert login("ops", "support").get(url).status_code == 200


@pytest.mark.parametrize("url", ["/policies/a%00b/", "/users/shop/u%00/", "/users/shop/bob~x/"])
def test_an_id_no_record_can_hold_is_not_found(login, url):
    assert login("ops", "support").get(url).status_code == 404


def test_trying_rules_for_an_app_with_a_nul_is_a_form_error_not_a_crash(login):
    response = login("ops").post("/rules/try/", {"app": "a\x00", "text": "I like tea"})
    assert response.status_code == 422


def test_the_audit_log_up_to_the_last_day_lists_everything(login):
    from memadmin import audit

    audit.record(None, audit.POLICY_UPDATE, app_name="shop")
    page = login("ops").get("/audit/?until=9999-12-31").content.decode()
    assert audit.POLICY_UPDATE in page


@pytest.mark.parametrize("name", ["backtest:run", "backtest:tune_run"])
def test_run_pages_vary_on_htmx(login, name):
    from backtest.models import BacktestRun, TuneRun

    if name == "backtest:run":
        run = BacktestRun.objects.create(app_name="shop", days=5, candidate={})
    else:
        run = TuneRun.objects.create(app_name="shop", days=5)
    client = login("ops")
    for headers in ({}, {"HX-Request": "true"}):
        response = client.get(reverse(name, args=[run.pk]), headers=headers)
        assert response.status_code == 200
        assert "HX-Request" in response.headers["Vary"]
