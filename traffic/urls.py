"""URLs of the traffic app (namespace "traffic"): a machine's Traffic page, its JSON, its
conversations and their replay, its relay tokens."""
from django.urls import path

from traffic import tokens, views

app_name = "traffic"
urlpatterns = [
    path("machines/<int:pk>/traffic/", views.traffic_page, name="page"),
    path("machines/<int:pk>/traffic/records.json", views.records_json, name="records"),
    path("machines/<int:pk>/traffic/capture/", views.capture_bodies, name="capture"),
    path("machines/<int:pk>/traffic/conversations/", views.conversation_list, name="conversations"),
    path("machines/<int:pk>/traffic/conversations/<str:key>/", views.conversation_detail,
         name="conversation"),
    path("machines/<int:pk>/traffic/conversations/<str:key>/replay/", views.conversation_replay,
         name="replay"),
    path("machines/<int:pk>/traffic/tokens/", tokens.relay_tokens, name="tokens"),
    path("machines/<int:pk>/traffic/tokens/<int:token_pk>/revoke/", tokens.revoke_relay_token,
         name="revoke_token"),
]
