"""Lengths of the ids every model and every edge share (``records.ids`` checks them)."""

APP_NAME_MAX = 128
USER_ID_MAX = 256
SESSION_ID_MAX = 256
