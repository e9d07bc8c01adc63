"""manage.py mcp [--transport stdio|http] [--host H] [--port P]"""

import os

from django.core.management.base import BaseCommand, CommandError

from api.errors import ApiError
from mcp_server import transports

KEY_VARIABLE = "MEMADMIN_API_KEY"


class Command(BaseCommand):
    help = (
        "Serve memory over MCP: on stdio with the API key in $MEMADMIN_API_KEY (for a "
        "desktop client that starts this command), or over streamable HTTP at /mcp, where "
        "every request sends 'Authorization: Bearer <key>'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP only.")
        parser.add_argument("--port", type=int, default=8001, help="HTTP only.")

    def handle(self, *args, transport, host, port, **options):
        if transport == "http":
            transports.run_http(host, port)
            return
        # stdout is the protocol's: nothing else may be written there.
        token = os.environ.get(KEY_VARIABLE, "").strip()
        if not token:
            raise CommandError(
                f"Set {KEY_VARIABLE} to an API key of the app "
                "(manage.py apikey create --app APP --name NAME)."
            )
        try:
            transports.check_token(token)
        except ApiError as exc:
            raise CommandError(f"{KEY_VARIABLE} was refused: {exc.detail}") from None
        transports.run_stdio(token)
