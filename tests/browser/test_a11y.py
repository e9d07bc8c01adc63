"""Every page of the demo through axe-core in Chromium: no serious or critical violation;
and the layout at 1,280 px: no sideways scrolling, long tables paged, ids never wrapped."""

import pytest
from axe_playwright_python.sync_playwright import Axe

from erasure import jobs
from erasure.models import ErasureRequest
from memadmin import demo
from records.models import AgentSession, ImportanceRule, RetiredSession
from sweeper.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WIDTH = 1280
BLOCKING = {"serious", "critical"}
TALLEST = 3000  # px: the user page and a sweep report, a page of their tables


@pytest.fixture
def demo_pages(live_server):
    demo.seed(users_per_app=3, history_days=2)
    req = jobs.submit(
        app_name=demo.BANK,
        user_id="bank-user-000",
        user_id_again="bank-user-000",
        ticket="DSR-7",
        reason="asked by e-mail",
        actor="tests",
        enqueue_job=False,
    )
    jobs.run(req.pk)
    session = AgentSession.objects.filter(app_name=demo.PHARMACY).first()
    paths = [
        "/overview/",
        "/users/",
        f"/users/{demo.PHARMACY}/{demo.PHARMACY_CUSTOMER}/",
        "/sessions/",
        f"/sessions/{session.pk}/",
        "/policies/",
        f"/policies/{demo.TRAVEL}/",
        "/rules/",
        f"/rules/{ImportanceRule.objects.first().pk}/",
        "/sweeps/",
        f"/sweeps/{Run.objects.get(dry_run=True).pk}/",
        "/erasure/",
        "/erasure/new/",
        f"/erasure/{ErasureRequest.objects.get().pk}/",
        "/audit/",
        "/api-keys/",
    ]
    retired = RetiredSession.objects.first()
    if retired:
        paths.append(f"/sessions/retired/{retired.pk}/")
    return paths


def serious(results) -> list[str]:
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in BLOCKING
    ]


def test_every_page_has_no_serious_accessibility_violation_and_fits_1280px(
    log_in, live_server, demo_pages
):
    page = log_in("support", "ops", "compliance")
    page.set_viewport_size({"width": WIDTH, "height": 900})
    axe = Axe()
    problems, heights = {}, {}
    for path in ["/login/", *demo_pages]:
        page.goto(live_server.url + path)
        found = serious(axe.run(page))
        wide = page.evaluate("document.documentElement.scrollWidth")
        if wide > WIDTH:
            found.append(f"scrolls sideways: {wide} px wide at {WIDTH}")
        wrapped = page.evaluate(
            "[...document.querySelectorAll('.sid')].filter(e => e.getClientRects().length > 1"
            " || e.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(e).lineHeight))"
            ".map(e => e.textContent)"
        )
        if wrapped:
            found.append(f"session ids wrapped: {wrapped[:3]}")
        heights[path] = page.evaluate("document.documentElement.scrollHeight")
        if found:
            problems[path] = found
    assert problems == {}
    # the long tables page instead of scrolling for meters (they were 5,000+ px)
    for path in demo_pages[2], demo_pages[10]:
        assert heights[path] <= TALLEST, (path, heights[path])
    assert not page.js_errors
