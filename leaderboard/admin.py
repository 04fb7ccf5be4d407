"""The admin's user list, with an action that lets the chosen users play (``leaderboard.play``)."""
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from leaderboard.play.players import PLAYERS_GROUP, add_player

User = get_user_model()


@admin.action(description=f"Add to {PLAYERS_GROUP} (they may play episodes at /play/)")
def add_to_players(modeladmin, request, queryset):
    add_player(*queryset)
    messages.success(request, f"{queryset.count()} user(s) added to {PLAYERS_GROUP}.")


class PlayerUserAdmin(UserAdmin):
    actions = [*(UserAdmin.actions or ()), add_to_players]


admin.site.unregister(User)
admin.site.register(User, PlayerUserAdmin)
