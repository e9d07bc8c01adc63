"""`manage.py start` (`make run`): which processes it runs."""

from memadmin.management.commands.start import Command


def option(argv, name):
    return argv[argv.index(name) + 1]


def test_make_run_starts_one_worker_per_queue_so_erasure_never_waits_behind_a_sweep():
    commands = Command.process_commands("127.0.0.1:8000", 3)
    assert set(commands) == {"web", "worker", "erasure worker", "beat"}
    worker, erasure = commands["worker"], commands["erasure worker"]
    assert (option(worker, "-Q"), option(worker, "--concurrency")) == ("celery", "3")
    assert (option(erasure, "-Q"), option(erasure, "--concurrency")) == ("erasure", "1")
    assert option(worker, "-n") != option(erasure, "-n")  # two nodes on one host
