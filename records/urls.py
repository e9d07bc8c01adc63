from django.urls import path

from memadmin import url_ids  # noqa: F401 - registers the <id:...> converter

from . import views

app_name = "records"

# App names and user ids are free text from the agents: <id:...> (memadmin.url_ids,
# registered when this module imports it) keeps each one segment, whatever it holds.
USER = "users/<id:app>/<id:user>/"

urlpatterns = [
    path("users/", views.users, name="users"),
    path(USER + "records/<int:pk>/pin/", views.pin, name="pin"),
    path(USER + "records/<int:pk>/unpin/", views.unpin, name="unpin"),
    path(USER + "records/<int:pk>/importance/", views.importance, name="importance"),
    path(USER + "preview/", views.preview, name="preview"),
    path(USER, views.user_detail, name="user"),
    path("sessions/", views.sessions, name="sessions"),
    path("sessions/<int:pk>/", views.session, name="session"),
    path("sessions/retired/<int:pk>/", views.retired_session, name="retired_session"),
    path("policies/", views.policies, name="policies"),
    path("policies/<id:app>/", views.policy, name="policy"),
    path("rules/", views.rules, name="rules"),
    path("rules/new/", views.rule_new, name="rule_new"),
    path("rules/try/", views.rule_try, name="rule_try"),
    path("rules/rescore/", views.rule_rescore, name="rule_rescore"),
    path("rules/<int:pk>/", views.rule, name="rule"),
    path("embeddings/", views.embeddings_page, name="embeddings"),
    path("embeddings/backfill/", views.embeddings_backfill, name="embeddings_backfill"),
]
