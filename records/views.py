from django.shortcuts import render

from .selectors import USER_SORTS, user_page


def users(request):
    """Every (app, user) with record count, tokens and cap use; htmx swaps the table only."""
    search = request.GET.get("q", "").strip()[:200]
    sort = request.GET.get("sort", "records")
    if sort not in USER_SORTS:
        sort = "records"
    page = user_page(search=search, sort=sort, page=request.GET.get("page", 1))
    context = {"page": page, "q": search, "sort": sort, "sorts": list(USER_SORTS)}
    template = "records/users.html#user-table" if request.htmx else "records/users.html"
    return render(request, template, context)
