"""``manage.py invite_player USERNAME [--email E] [--new-password]``: let a person play episodes at /play/."""
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from leaderboard.play.players import PLAYERS_GROUP, add_player


class Command(BaseCommand):
    help = (
        f"Add USERNAME to the {PLAYERS_GROUP} group (created when missing), creating the user when there is none "
        "with a password printed here, to be sent to them. Players play episodes at /play/."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="The player's e-mail address (stored on the user).")
        parser.add_argument("--new-password", action="store_true",
                            help="Give an existing user a new password, printed here.")

    def handle(self, *args, **options):
        users = get_user_model()
        user, created = users.objects.get_or_create(username=options["username"])
        password = ""
        if created or options["new_password"]:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
        if options["email"]:
            user.email = options["email"]
        user.save()
        add_player(user)
        self.stdout.write(f"{'Created' if created else 'Updated'} {user.get_username()}, now in {PLAYERS_GROUP}.")
        if password:
            self.stdout.write(f"Password (shown only now; send it to the player): {password}")
        self.stdout.write("They sign in at /accounts/login/ and play at /play/.")
