import os

from django.core.wsgi import get_wsgi_application

from memadmin import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memadmin.settings")
# Before the handler reads MIDDLEWARE: the Django instrumentation adds its own.
tracing.configure_from_environment()
application = get_wsgi_application()
