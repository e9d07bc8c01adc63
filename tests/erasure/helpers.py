from records import erasure

USER = "cust-q7zv3k"
OTHER = "cust-w2lp8m"


def submit(app, user=USER, enqueue_job=False, **kwargs):
    return erasure.submit(
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
    status = erasure.run(req.pk, **kwargs)
    req.refresh_from_db()
    assert status == req.status
    return req
