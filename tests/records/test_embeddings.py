"""Optional embeddings (MEMADMIN_EMBEDDER) on the database the run uses: vectors written
at ingest, hybrid search, the back-fill, bad embedders, and nothing at all when unset."""

import math
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from records import embeddings, search, store, vectors
from records.checks import embedder_setting
from records.memory_service import add_memories, add_session
from records.models import MemoryRecord, RecordEmbedding
from records.policies import update_policy
from records.tasks import backfill_embeddings
from tests import embedders

from ..conftest import run_until_it_waits, subprocess_database_url
from .factories import session, text_event

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
APP, USER = "garage", "u1"
TEXTS = [
    "My car is a blue estate with a roof box",
    "The cat sleeps on the boiler all winter",
    "I see my doctor every March for a check-up",
    "Blue is my favourite colour for the kitchen",
    "The roof of the shed leaks when it rains",
]


@pytest.fixture
def use_embedder(settings):
    def use(name: str | None):
        settings.MEMADMIN = {
            **settings.MEMADMIN,
            "EMBEDDER": f"tests.embedders.{name}" if name else "",
        }

    return use


def _entry(text, days_ago=1):
    return MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        author="user",
        timestamp=(NOW - timedelta(days=days_ago)).isoformat(),
    )


def _add(texts, user=USER):
    return add_memories(APP, user, [_entry(t, i + 1) for i, t in enumerate(texts)], NOW)


def _ids():
    return dict(MemoryRecord.objects.filter(app_name=APP).values_list("content", "id"))


def _vectors():
    return set(RecordEmbedding.objects.values_list("record_id", flat=True))


def search_ids(query):
    return [r.id for r in search.search(APP, USER, query, NOW)]


def test_without_an_embedder_nothing_is_written_and_search_is_lexical(use_embedder):
    use_embedder(None)
    _add(TEXTS)
    assert _vectors() == set()
    assert search_ids("automobile") == []
    assert search_ids("blue") == [_ids()[TEXTS[0]], _ids()[TEXTS[3]]]


def test_ingest_embeds_its_records_in_one_call(use_embedder):
    use_embedder("bag_of_concepts")
    embedders.CALLS.clear()
    _add(TEXTS)
    assert [len(TEXTS)] == embedders.CALLS
    assert _vectors() == set(_ids().values())
    row = RecordEmbedding.objects.get(record_id=_ids()[TEXTS[0]])
    assert row.dims == embedders.DIMS
    stored = vectors.from_bytes(bytes(row.vector))
    # An entry given through add_memory has no turns before it: its author and content.
    assert list(stored) == list(vectors.unit(embedders.vector(f"user: {TEXTS[0]}")))


CONVERSATION = [
    ("user", "I bought a new automobile last week"),
    ("agent", "Nice! What colour did you choose?"),
    ("user", "Blue, with a roof box on top"),
]
REPLY = CONVERSATION[2][1]
REPLY_CONTEXT = (
    "user: I bought a new automobile last week\nagent: Nice! What colour did you choose?"
)


def _conversation(now=NOW):
    events = [text_event(text, author=author) for author, text in CONVERSATION]
    for i, event in enumerate(events):
        event.timestamp = (now - timedelta(minutes=10 - i)).timestamp()
    add_session(session(events, app=APP, user=USER, id="talk"), now)
    return MemoryRecord.objects.get(app_name=APP, content=REPLY)


def _vector_of(record_id):
    return list(vectors.from_bytes(bytes(RecordEmbedding.objects.get(record_id=record_id).vector)))


def test_a_turn_is_embedded_with_the_turns_before_it_each_named_by_its_author(use_embedder):
    use_embedder("bag_of_concepts")
    reply = _conversation()
    text = f"{REPLY_CONTEXT}\nuser: {REPLY}"
    assert _vector_of(reply.id) == list(vectors.unit(embedders.vector(text)))
    # The reply holds no word of the question; the turn it answers does, by meaning
    # ("automobile" is a car): the vector finds the reply too.
    assert reply.id in search_ids("car")
    use_embedder(None)
    assert reply.id not in search_ids("car")


def test_the_turns_before_a_record_are_not_stored_the_back_fill_embeds_author_and_content(
    use_embedder,
):
    use_embedder("failing")
    reply = _conversation()
    assert _vectors() == set()
    # Nothing holds the turns' text but their own records: deleting or evicting one
    # leaves no copy of it in another record's row.
    stored = MemoryRecord.objects.get(id=reply.id)
    assert not any(
        CONVERSATION[0][1] in str(getattr(stored, f.attname))
        for f in MemoryRecord._meta.concrete_fields
        if f.attname != "search_tokens"
    )
    use_embedder("bag_of_concepts")
    assert embeddings.backfill(app_name=APP).done
    assert _vector_of(reply.id) == list(vectors.unit(embedders.vector(f"user: {REPLY}")))


def test_each_turn_before_a_record_is_kept_up_to_a_bound():
    long = "x" * (embeddings.CONTEXT_CHARS + 100)
    lines = embeddings.context_lines([("user", long), ("", "hello")])
    assert lines == f"user: {long[: embeddings.CONTEXT_CHARS]}\nhello"
    assert embeddings.context_lines([]) is None
    assert embeddings.embedding_text("hi", "", None) == "hi"


def test_a_record_with_no_shared_word_is_found_by_its_vector(use_embedder):
    use_embedder("bag_of_concepts")
    _add(TEXTS)
    ids = _ids()
    # "automobile" shares no word (nor stem, nor prefix) with the car record.
    assert search_ids("automobile")[0] == ids[TEXTS[0]]
    assert search_ids("physician")[0] == ids[TEXTS[2]]
    use_embedder(None)
    assert search_ids("automobile") == []


def test_hybrid_order_is_the_fusion_of_the_two_rankings(use_embedder):
    use_embedder("bag_of_concepts")
    _add(TEXTS + [f"Roof tile number {i} is cracked" for i in range(30)])
    query = "blue roof"
    use_embedder(None)  # the lexical ranking alone, as deep as fusion reads it
    lexical = search_ids(query)
    lexical_deep = [
        r.id for r in search.search(APP, USER, query, NOW, limit=embeddings.FUSION_DEPTH)
    ]
    assert lexical_deep[:10] == lexical
    use_embedder("bag_of_concepts")
    near = embeddings.nearest(
        APP, USER, vectors.unit(embedders.vector(query)), NOW, embeddings.FUSION_DEPTH
    )
    expected = vectors.fuse(lexical_deep, near, 10)
    assert search_ids(query) == expected
    assert search_ids(query) == expected  # the same again: deterministic
    ids = _ids()
    # Both blue records and the roof records match; the car record (blue and roof) first.
    assert expected[0] == ids[TEXTS[0]]


def test_an_expired_record_is_not_returned_by_its_vector(use_embedder):
    use_embedder("bag_of_concepts")
    update_policy(APP, {"ttl_days": 30})
    add_memories(APP, USER, [_entry(TEXTS[0], 40)], NOW - timedelta(days=40))
    add_memories(APP, USER, [_entry(t, 20) for t in TEXTS[1:]], NOW - timedelta(days=20))
    assert len(_vectors()) == len(TEXTS)  # past its TTL at NOW, not evicted yet
    assert _ids()[TEXTS[0]] not in search_ids("automobile")


@pytest.mark.parametrize("scan", ["numpy", "pure"])
def test_nearest_reads_the_users_live_vectors_and_ranks_them_as_a_plain_loop(
    use_embedder, monkeypatch, scan
):
    """More records than the fusion depth, from a few words (so similarities tie), beside
    another user's and an expired record: the ids of the plain per-vector loop over the
    user's live vectors, in its order, with and without the numpy screen."""
    if scan == "numpy":
        pytest.importorskip("numpy")
    else:
        monkeypatch.setattr(vectors, "_np", None)
    use_embedder("bag_of_concepts")
    update_policy(APP, {"ttl_days": 30})
    words = ["car", "roof", "blue", "cat", "shed", "rain"]
    texts = [f"{words[i % 6]} {words[(i * 7) % 5]} {words[i % 4]} note {i % 9}" for i in range(90)]
    add_memories(APP, USER, [_entry(TEXTS[0], 40)], NOW - timedelta(days=40))
    add_memories(APP, USER, [_entry(t, 20) for t in texts], NOW - timedelta(days=20))
    _add(texts[:10], user="someone-else")
    expired = MemoryRecord.objects.get(app_name=APP, user_id=USER, content=TEXTS[0]).id
    live = RecordEmbedding.objects.filter(record__user_id=USER).exclude(record_id=expired)
    stored = list(live.values_list("record_id", "vector"))
    assert len(stored) == len(texts)
    for query in ["car roof blue", "blue rain", "note 3", "cat shed"]:
        q = vectors.unit(embedders.vector(query))
        plain = sorted(
            (-round(math.sumprod(q, vectors.from_bytes(v)), 9), -rid) for rid, v in stored
        )
        expected = [-neg for _, neg in plain[: embeddings.FUSION_DEPTH]]
        assert embeddings.nearest(APP, USER, q, NOW, embeddings.FUSION_DEPTH) == expected
        assert expired not in expected


def test_vectors_are_per_user(use_embedder):
    use_embedder("bag_of_concepts")
    _add(TEXTS[:1], user="someone-else")
    _add(TEXTS[1:])
    car = _ids()[TEXTS[0]]
    assert car not in search_ids("automobile")
    assert [r.id for r in search.search(APP, "someone-else", "automobile", NOW)] == [car]


@pytest.mark.parametrize("bad", ["failing", "one_short", "not_a_list", "mixed_dimensions"])
def test_a_failing_embedder_never_loses_the_ingest_and_the_back_fill_repairs_it(
    use_embedder, bad, caplog
):
    use_embedder(bad)
    result = _add(TEXTS)
    assert result.added == len(TEXTS)
    assert MemoryRecord.objects.count() == len(TEXTS)
    if bad == "mixed_dimensions":  # the first vector sets the dimension; odd ones refused
        assert len(_vectors()) == 3
    else:
        assert _vectors() == set()
        assert "left for the back-fill" in caplog.text
    assert all(t not in caplog.text for t in TEXTS)  # logs never hold content
    if bad == "failing":  # its class and where it was raised, never its message
        assert "ConnectionError (raised at embedders.py:" in caplog.text
        assert "unreachable" not in caplog.text
    if bad != "mixed_dimensions":  # the query cannot be embedded: lexical search answers
        assert search_ids("blue") == [_ids()[TEXTS[0]], _ids()[TEXTS[3]]]
    use_embedder("bag_of_concepts")
    assert embeddings.progress(APP).missing == len(TEXTS) - len(_vectors())
    result = embeddings.backfill(app_name=APP)
    assert result.done and not result.error
    assert _vectors() == set(_ids().values())
    assert embeddings.progress(APP).missing == 0


def test_a_nan_vector_leaves_only_that_record_for_the_back_fill(use_embedder):
    use_embedder("with_nan")
    _add(["Keep the rat poison on the top shelf", *TEXTS])
    poison = _ids()["Keep the rat poison on the top shelf"]
    assert _vectors() == set(_ids().values()) - {poison}
    result = embeddings.backfill(app_name=APP)  # still NaN: skipped, counted, not stuck
    assert (result.embedded, result.failed, result.done) == (0, 1, True)
    use_embedder("bag_of_concepts")
    assert embeddings.backfill(app_name=APP).embedded == 1
    assert poison in _vectors()


def test_the_back_fill_is_batched_resumable_and_idempotent(use_embedder):
    use_embedder(None)
    _add(TEXTS)
    use_embedder("bag_of_concepts")
    embedders.CALLS.clear()
    first = embeddings.backfill(batch_size=2, max_batches=1)
    assert (first.embedded, first.batches, first.done) == (2, 1, False)
    rest = embeddings.backfill(batch_size=2, after_id=first.last_id)
    assert rest.embedded == len(TEXTS) - 2 and rest.done
    assert embedders.CALLS == [2, 2, 1]
    again = embeddings.backfill(batch_size=2)
    assert (again.embedded, again.batches, again.done) == (0, 0, True)
    assert _vectors() == set(_ids().values())


def test_the_back_fill_task_fills_every_missing_vector(use_embedder):
    """Called in this process; on a real worker: tests/records/test_embeddings_worker.py."""
    use_embedder(None)
    _add(TEXTS)
    use_embedder("bag_of_concepts")
    assert backfill_embeddings(APP) == len(TEXTS)
    assert _vectors() == set(_ids().values())
    assert backfill_embeddings(APP) == 0  # idempotent


def test_the_scheduled_back_fill_does_nothing_without_an_embedder(use_embedder):
    use_embedder(None)
    _add(TEXTS)
    assert backfill_embeddings() == 0
    assert _vectors() == set()


def test_evicting_a_record_deletes_its_vector(use_embedder):
    use_embedder("bag_of_concepts")
    _add(TEXTS)
    car = _ids()[TEXTS[0]]
    store.delete_records(APP, USER, NOW, car)
    assert car not in _vectors()
    assert len(_vectors()) == len(TEXTS) - 1
    store.delete_records(APP, USER, NOW)
    assert RecordEmbedding.objects.count() == 0


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.embedders.nowhere", "cannot be imported"),
        ("no_such_package.embed", "cannot be imported"),
        ("tests.embedders.NOT_CALLABLE", "not a callable"),
        (
            "tests.embedder_needing_a_key.embed",
            "importing its module raised KeyError",
        ),
    ],
)
def test_a_bad_setting_is_a_system_check_error_and_search_says_so(settings, path, message):
    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": path}
    errors = embedder_setting()
    assert [e.id for e in errors] == ["records.E001"]
    assert message in errors[0].msg
    with pytest.raises(embeddings.EmbedderError, match=message):
        embeddings.embedder()


def test_an_embedder_whose_module_fails_to_import_leaves_everything_lexical(settings, caplog):
    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": "tests.embedder_needing_a_key.embed"}
    assert _add(TEXTS).added == len(TEXTS)  # the ingest is not failed for it
    assert _vectors() == set()
    assert search_ids("blue") == [_ids()[TEXTS[0]], _ids()[TEXTS[3]]]
    assert backfill_embeddings() == 0  # the hourly task says why and stops
    assert "embedding back-fill skipped: MEMADMIN_EMBEDDER=" in caplog.text


def test_a_module_that_fails_as_it_loads_is_imported_once(settings):
    """It may do slow work (load a model) before failing: not again on every search."""
    settings.MEMADMIN = {**settings.MEMADMIN, "EMBEDDER": "tests.embedder_needing_a_key.embed"}
    embeddings._load.cache_clear()
    embedders.IMPORTS.clear()
    for _ in range(3):
        with pytest.raises(embeddings.EmbedderError, match="importing its module raised"):
            embeddings.embedder()
    assert embedders.IMPORTS == ["tests.embedder_needing_a_key"]


def test_a_number_beyond_a_floats_range_is_an_unusable_vector(use_embedder):
    use_embedder("too_large")
    _add(["Keep the rat poison on the top shelf", *TEXTS])
    poison = _ids()["Keep the rat poison on the top shelf"]
    assert _vectors() == set(_ids().values()) - {poison}
    assert search_ids("poison") == [poison]  # its query vector is refused: lexical
    result = embeddings.backfill(app_name=APP)  # skipped and counted, never stuck
    assert (result.embedded, result.failed, result.done) == (0, 1, True)


def test_the_first_vector_of_a_batch_sets_its_dimension_even_when_refused(use_embedder):
    use_embedder("first_refused")
    found = embeddings.embed(["roof", "boiler", "kitchen"])
    assert [None if v is None else len(v) for v in found] == [None, None, embedders.DIMS]


def test_the_soft_time_limit_inside_the_embedder_reaches_the_task(use_embedder):
    """The task queues itself again on SoftTimeLimitExceeded; the embedder's failures
    are otherwise caught, so this one must pass through, with the batches before it
    kept."""
    use_embedder(None)
    _add(TEXTS)
    use_embedder("time_limit_on_the_second_call")
    embedders.CALLS.clear()
    with pytest.raises(SoftTimeLimitExceeded):
        list(embeddings.backfill_steps(app_name=APP, batch_size=2))
    assert len(_vectors()) == 2


def test_the_setting_unset_or_good_passes_the_check(use_embedder):
    use_embedder(None)
    assert embedder_setting() == []
    use_embedder("bag_of_concepts")
    assert embedder_setting() == []


def test_the_command_back_fills_and_refuses_without_an_embedder(use_embedder, capsys):
    use_embedder(None)
    _add(TEXTS)
    with pytest.raises(CommandError, match="not set"):
        call_command("backfill_embeddings")
    use_embedder("bag_of_concepts")
    call_command("backfill_embeddings", "--batch-size", "2")
    out = capsys.readouterr().out
    assert f"{len(TEXTS)}/{len(TEXTS)} records have a vector (100%)" in out
    assert _vectors() == set(_ids().values())
    call_command("backfill_embeddings", "--rebuild")
    assert f"{len(TEXTS)} vector(s) deleted" in capsys.readouterr().out
    assert _vectors() == set(_ids().values())
    with pytest.raises(CommandError):
        call_command("backfill_embeddings", "--app", "no-such-app")


def test_the_page_shows_progress_and_only_ops_start_a_back_fill(use_embedder, login):
    use_embedder(None)
    _add(TEXTS)
    use_embedder("bag_of_concepts")
    client = login("support")
    page = client.get(reverse("records:embeddings"))
    assert page.status_code == 200
    assert f'<progress value="0" max="{len(TEXTS)}"' in page.content.decode()
    assert "Back-fill" not in page.content.decode()  # support may look, not start
    assert client.post(reverse("records:embeddings_backfill")).status_code == 403
    assert _vectors() == set()

    client = login("ops")
    assert "Back-fill 5 records" in client.get(reverse("records:embeddings")).content.decode()
    response = client.post(reverse("records:embeddings_backfill"), headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    assert f'<progress value="0" max="{len(TEXTS)}"' in body
    assert 'hx-trigger="every 2s"' in body  # polled while the worker fills it
    backfill_embeddings(APP)  # what the queued task does (a real worker: the worker test)
    body = client.get(reverse("records:embeddings") + "?watch=1").content.decode()
    assert f'<progress value="{len(TEXTS)}" max="{len(TEXTS)}"' in body
    assert "every 2s" not in body  # done: the polling stops
    assert client.get(reverse("records:embeddings_backfill")).status_code == 405


def test_the_back_fill_post_needs_the_csrf_token(use_embedder, make_user):
    from django.test import Client

    use_embedder("bag_of_concepts")
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("ops-csrf", "ops"))
    assert client.post(reverse("records:embeddings_backfill")).status_code == 403


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_back_fill_skips_a_record_whose_eviction_commits_while_it_writes(use_embedder):
    """Another connection deletes a record (an eviction) and has not committed when the
    back-fill writes: the back-fill waits for it and skips that record, rather than
    failing the whole batch on the foreign key once the delete commits."""
    use_embedder(None)
    _add(TEXTS)
    gone = _ids()[TEXTS[2]]
    use_embedder("bag_of_concepts")
    evictor = psycopg.connect(subprocess_database_url())
    evictor.execute("DELETE FROM records_memoryrecord WHERE id = %s", [gone])

    def commit_the_eviction(_pid):
        evictor.commit()
        evictor.close()

    result = run_until_it_waits(
        lambda: embeddings.backfill(app_name=APP), commit_the_eviction, "the back-fill"
    )
    assert result.done and not result.error
    assert _vectors() == set(_ids().values()) and gone not in _vectors()
    assert len(_vectors()) == len(TEXTS) - 1
