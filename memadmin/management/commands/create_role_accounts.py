from django.core.management.base import BaseCommand

from memadmin.accounts import create_role_accounts


class Command(BaseCommand):
    help = "Create one staff account per role (support, ops, compliance); print new passwords."

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true")

    def handle(self, *args, reset_passwords, **options):
        accounts = create_role_accounts(reset_passwords=reset_passwords)
        for username, password in accounts.items():
            if password:
                self.stdout.write(f"  {username:<11} password: {password}")
            else:
                self.stdout.write(f"  {username:<11} (exists; --reset-passwords to set a new one)")
