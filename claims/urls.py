"""URLs of the claims pages (the "claims" namespace)."""

from django.urls import path

from claims import views

app_name = "claims"
urlpatterns = [
    path("claims/", views.claim_list, name="list"),
    path("claims/<int:pk>/", views.claim_detail, name="detail"),
    path("claims/<int:pk>/checks/<int:check>/report.<str:fmt>", views.check_report, name="report"),
]
