"""plotly.js is served from the installed plotly package, never a CDN."""

from pathlib import Path

import plotly
import pytest
from django.contrib.staticfiles import finders

from memadmin.staticfiles import PLOTLY_JS, PlotlyFinder

PACKAGED = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def test_finder_finds_only_plotly():
    finder = PlotlyFinder()
    assert finder.find(PLOTLY_JS) == str(PACKAGED)
    assert finder.find(PLOTLY_JS, find_all=True) == [str(PACKAGED)]
    assert finder.find("vendor/other.js") is None
    (listed,) = list(finder.list(None))
    assert listed[0] == "plotly.min.js" and listed[1].prefix == "vendor"
    assert finders.find(PLOTLY_JS) == str(PACKAGED)


@pytest.mark.django_db
def test_plotly_and_charts_js_are_served_by_the_app(client):
    response = client.get("/static/" + PLOTLY_JS)  # static files need no login
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert body == PACKAGED.read_bytes()
    charts = client.get("/static/js/charts.js")
    assert charts.status_code == 200
    assert b"Plotly.newPlot" in b"".join(charts.streaming_content)
