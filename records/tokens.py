"""Token counting. The default needs no download: about four UTF-8 bytes per token.

That is the usual rule of thumb for English text with BPE tokenizers; it is an
estimate, and caps are budgets, so it only has to be consistent. Plug in an exact
counter with MEMADMIN_TOKEN_COUNTER=package.module.function (callable(str) -> int).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4))


@cache
def token_counter() -> Callable[[str], int]:
    path = settings.MEMADMIN["TOKEN_COUNTER"]
    return count_tokens if path == "records.tokens.count_tokens" else import_string(path)
