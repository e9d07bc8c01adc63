"""memadmin's benchmarks: ``python -m bench --size smoke|full [--only SCENARIO]``.

Each scenario generates its own data on a dedicated PostgreSQL database, runs against
its named baseline in the same run (ADK's memory services, the article's list-everything
victim selection, a sequential scan), checks that both gave the same answer where they
must, and adds rows to one table. See ``bench/cli.py`` and the README's Performance
section. ``bench/erasure_batches.py`` is an older stand-alone script.
"""
