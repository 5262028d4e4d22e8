"""URLs of the teams app (namespace "teams"): team pages, members and roles, the audit log (adding a
machine to a team is engines')."""

from django.urls import path

from teams import audit_page, views

app_name = "teams"
urlpatterns = [
    path("", views.team_list, name="list"),
    path("<int:pk>/", views.team_detail, name="detail"),
    path("<int:pk>/members/add/", views.member_add, name="member-add"),
    path("<int:pk>/members/<int:user_pk>/role/", views.member_role, name="member-role"),
    path("<int:pk>/members/<int:user_pk>/remove/", views.member_remove, name="member-remove"),
    path("<int:pk>/audit/", audit_page.audit_page, name="audit"),
]
