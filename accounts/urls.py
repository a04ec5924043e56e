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
    path("settings/", views.account_settings, name="account-settings"),
    path("team/", views.team_page, name="account-team"),
    # Django's password views, under the URL names they reverse to each other.
    path("password/change/", views.PasswordChangeView.as_view(), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password/reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]
