"""Several statements in one round trip to PostgreSQL.

With client-side binding (psycopg's ``ClientCursor``, Django's default) one query string
may hold several statements: PostgreSQL runs them in order (as one transaction when none
is open) and psycopg keeps one result per statement. The hot paths send a lock and the
read after it, or a planner setting and the statement it is for, this way instead of
paying a round trip for each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def execute(cursor, statements: Sequence[str], params: Sequence | Mapping) -> list[list[tuple]]:
    """Run ``statements`` as one query string (``params`` for all of them, in order or
    by name) and return the rows of each ([] for one that returns none, as a SET)."""
    cursor.execute(";\n".join(statements), params)
    results = []
    while True:
        results.append(cursor.fetchall() if cursor.description is not None else [])
        if not cursor.nextset():
            break
    if len(results) != len(statements):
        raise RuntimeError(f"{len(statements)} statements gave {len(results)} results")
    return results
