"""What the logs may say about a plug-in's failure (an importance classifier, a
summariser, an embedder: code configured by the operator, given memory text).

Its exception's message is not logged: a plug-in's error can quote the text it was
given (a validation error on a model's answer, an HTTP client's request body), and
memory content never reaches the logs. The class and where it was raised are enough to
find the failure in the plug-in's own code.
"""

from __future__ import annotations

import traceback
from pathlib import PurePath


def failure(exc: BaseException) -> str:
    """``ValueError (raised at classify.py:12)``: the exception without its message."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__qualname__
    last = frames[-1]
    return f"{type(exc).__qualname__} (raised at {PurePath(last.filename).name}:{last.lineno})"
