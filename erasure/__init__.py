"""Erasure requests: the compliance path, separate from eviction.

This app holds the tables (requests, their append-only audit log, barriers), the
Celery tasks, the pages and the ``erase`` command. The logic they all call is in
``erasure.jobs``; the personal-data inventory it works from is ``erasure.inventory``.
"""
