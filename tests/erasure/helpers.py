from erasure import jobs
from records.policies import policy_for

USER = "cust-q7zv3k"
OTHER = "cust-w2lp8m"


def submit(app, user=USER, enqueue_job=False, **kwargs):
    if app:  # an app memadmin manages, even before its agents stored anything
        policy_for(app)
    return jobs.submit(
        app_name=app,
        user_id=user,
        user_id_again=user,
        ticket="DSR-1001",
        reason="Right to erasure request received by e-mail",
        actor="tests",
        enqueue_job=enqueue_job,
        **kwargs,
    )


def erase(app, user=USER, **kwargs):
    req = submit(app, user)
    status = jobs.run(req.pk, **kwargs)
    req.refresh_from_db()
    assert status == req.status
    return req
