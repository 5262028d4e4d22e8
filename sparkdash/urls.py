"""Top-level URLs: pages, API and auth."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from engines.catalogue import DashboardCatalog

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Self-service password change (Django's views; the admin's own pages keep the admin's templates).
    path(
        "account/password/",
        auth_views.PasswordChangeView.as_view(template_name="registration/password_change.html"),
        name="password_change",
    ),
    path(
        "account/password/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="registration/password_changed.html"),
        name="password_change_done",
    ),
    path("i18n/", include("django.conf.urls.i18n")),
    path("jsi18n/", DashboardCatalog.as_view(), name="javascript-catalog"),
    path("", include("engines.urls")),
    path("", include("runs.urls")),
    path("", include("traffic.urls")),
    path("", include("claims.urls")),
    path("teams/", include("teams.urls")),
]

# A request over one of Django's body limits is told which (sparkdash/errors.py).
handler400 = "sparkdash.errors.bad_request"
