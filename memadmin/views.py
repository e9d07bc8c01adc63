from .forms import AuditFilterForm
from .htmx import render_page
from .roles import viewer_required
from .selectors import audit_page


@viewer_required
def audit_log(request):
    """The audit log, filterable; htmx swaps the table only."""
    form = AuditFilterForm(request.GET)
    valid = form.is_valid()
    filters = form.cleaned_data  # the fields that did parse; errors are shown beside them
    page = audit_page(
        action=filters.get("action", ""),
        actor=(filters.get("actor") or "").strip(),
        app_name=(filters.get("app") or "").strip(),
        user_id=(filters.get("user") or "").strip(),
        since=filters.get("since"),
        until=filters.get("until"),
        page=request.GET.get("page", 1),
    )
    query = request.GET.copy()
    query.pop("page", None)
    context = {"form": form, "page": page, "query": query.urlencode()}
    status = 200 if valid else 422
    return render_page(request, "memadmin/audit.html", "audit-table", context, status=status)
