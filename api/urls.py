from django.urls import path

from . import views

app_name = "api"
urlpatterns = [
    path("", views.api_keys, name="keys"),
    path("<int:key_id>/revoke", views.revoke, name="revoke"),
]
