"""Serve plotly.js from the installed ``plotly`` package, so no page needs a CDN.

A staticfiles finder (not a copy in the repository) keeps the file in step with the
installed plotly, works with WhiteNoise in development, and is picked up by
``collectstatic`` for production (hashed name, compressed, cached forever).
"""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "vendor/plotly.min.js"
_SOURCE_DIR = Path(plotly.__file__).resolve().parent / "package_data"
_SOURCE_NAME = "plotly.min.js"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=_SOURCE_DIR)
        self.storage.prefix = "vendor"  # read by collectstatic and WhiteNoise

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path != PLOTLY_JS:
            return [] if find_all else None
        found = str(_SOURCE_DIR / _SOURCE_NAME)
        return [found] if find_all else found

    def list(self, ignore_patterns):
        yield _SOURCE_NAME, self.storage
