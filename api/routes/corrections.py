"""User corrections ("I told you before…"), as ``records.tools.report_forgotten``."""

from __future__ import annotations

from django.utils import timezone
from ninja import Router, Status

from records.feedback import report_correction

from ..schemas import CorrectionIn, CorrectionOut
from . import ERRORS, AppName, UserId

router = Router(tags=["feedback"])


@router.post(
    "/corrections",
    response={201: CorrectionOut, **ERRORS},
    by_alias=True,
    summary="Report that the user had to repeat something",
)
def report(request, app_name: AppName, user_id: UserId, body: CorrectionIn):
    """Counted in the forgot-something rate; ``about`` is matched against records
    evicted in the last 30 days (as keyed hashes) and never stored."""
    correction = report_correction(
        app_name, user_id, timezone.now(), session_id=body.session_id, about=body.about
    )
    return Status(201, CorrectionOut(matched_eviction=correction.matched_eviction))
