from django.contrib.auth import views as auth_views
from django.urls import path

from . import views
from .throttling import ThrottledLoginView

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.account, name="account"),
    path("token/", views.regenerate_token, name="account-token"),
]
