"""Template filters of the play pages: whether the signed-in user may play (the navigation's "Play" link)."""
from django import template

from leaderboard.play import players

register = template.Library()


@register.filter
def may_play(user) -> bool:
    """Whether ``user`` is a player (in the ``players`` group) or staff."""
    return players.is_player(user)
