from django.conf import settings
from django.db import models


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    team = models.CharField(max_length=120, blank=True, help_text="Team or affiliation shown on leaderboards.")

    def __str__(self):
        return f"{self.user.username} ({self.team or 'no team'})"
