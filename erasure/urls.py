from django.urls import path

from . import views

app_name = "erasure"
urlpatterns = [
    path("", views.request_list, name="list"),
    path("new/", views.submit, name="submit"),
    path("confirm-password/", views.reauth, name="reauth"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/retry/", views.retry, name="retry"),
    path("<int:pk>/receipt.json", views.receipt, name="receipt"),
]
