from django.contrib import admin

from .models import Profile


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "default_public", "notify_on_finish"]
    list_filter = ["default_public", "notify_on_finish"]
    search_fields = ["user__username", "team"]
