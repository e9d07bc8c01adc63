"""manage.py mcp [--transport stdio|http] [--host H] [--port P]"""

import argparse
import os

from django.core.management.base import BaseCommand, CommandError

from api.errors import ApiError
from mcp_server import transports

KEY_VARIABLE = "MEMADMIN_API_KEY"


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: give 1 to 65535")
    return port


class Command(BaseCommand):
    help = (
        "Serve memory over MCP: on stdio with the API key in $MEMADMIN_API_KEY (for a "
        "desktop client that starts this command), or over streamable HTTP at /mcp, where "
        "every request sends 'Authorization: Bearer <key>'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP only.")
        parser.add_argument("--port", type=_port, default=8001, help="HTTP only (1-65535).")

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
