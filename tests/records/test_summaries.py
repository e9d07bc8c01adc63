"""Summarise before evicting."""

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from records import store, summaries
from records.models import EvictionEvent, MemoryRecord
from records.policies import update_policy
from records.summaries import extractive_summary, first_sentence
from records.tokens import count_tokens
from sweeper.models import PlanEntry

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def note(content, *, session="", category="other", importance=0.1, age_days=100, tokens=None):
    return MemoryRecord.objects.create(
        app_name="app",
        user_id="u",
        content=content,
        source_session_id=session,
        category=category,
        importance=importance,
        created_at=NOW - timedelta(days=age_days),
        last_accessed_at=NOW - timedelta(days=age_days),
        tokens=tokens or count_tokens(content),
    )


def test_a_cluster_of_victims_becomes_one_summary_with_full_provenance():
    update_policy("app", {"summarise": True, "summarise_min_cluster": 3, "max_records": 3})
    old = [
        note(f"Asked about branch {i} opening hours. Then left.", session="s-old") for i in range(4)
    ]
    keep = [note("My name is Ana", importance=0.9, age_days=1) for _ in range(2)]
    victims = store.enforce("app", "u", NOW)
    summary = MemoryRecord.objects.get(is_summary=True)
    assert sorted(v.reason for v in victims) == [
        "record_cap",
        "summarised",
        "summarised",
        "summarised",
    ]
    # the three lowest (ties go by id) were merged; the fourth went plainly afterwards
    assert sorted(s["record_id"] for s in summary.summary_sources) == [r.id for r in old[:3]]
    assert {s["session_id"] for s in summary.summary_sources} == {"s-old"}
    assert summary.source_session_id == "s-old"
    assert (summary.author, summary.role) == ("memadmin", "model")  # its words are ours
    assert summary.tokens <= sum(r.tokens for r in old[:3])
    assert "Asked about branch 0 opening hours." in summary.content
    assert "Then left" not in summary.content  # first sentences only
    # the caps hold exactly after the write, the summary included
    assert MemoryRecord.objects.count() == 3
    assert set(MemoryRecord.objects.filter(is_summary=False).values_list("id", flat=True)) == {
        r.id for r in keep
    }
    assert EvictionEvent.objects.filter(reason="summarised").count() == 3


def test_small_clusters_and_expired_records_are_evicted_plainly():
    update_policy(
        "app", {"summarise": True, "summarise_min_cluster": 3, "max_records": 2, "ttl_days": 365}
    )
    note("Expired one", session="s1", age_days=400)
    note("Expired two", session="s1", age_days=400)
    note("Expired three", session="s1", age_days=400)
    note("Small cluster a", session="s2")
    note("Small cluster b", session="s2")
    note("My name is Ana", importance=0.9, age_days=1)
    note("I prefer email", importance=0.9, age_days=1)
    victims = store.enforce("app", "u", NOW)
    reasons = sorted(v.reason for v in victims)
    assert reasons == ["expired", "expired", "expired", "record_cap", "record_cap"]
    assert not MemoryRecord.objects.filter(is_summary=True).exists()


def test_a_summary_expires_when_its_oldest_source_would():
    """Its content is its sources': the TTL a source was under goes on for the summary,
    not a whole TTL from the summarising (nor again for a summary of summaries)."""
    update_policy(
        "app", {"summarise": True, "summarise_min_cluster": 3, "max_records": 3, "ttl_days": 30}
    )
    old = [note(f"Asked about branch {i}.", session="s-old", age_days=29 - i) for i in range(4)]
    for _ in range(2):
        note("My name is Ana", importance=0.9, age_days=1)
    store.enforce("app", "u", NOW)
    summary = MemoryRecord.objects.get(is_summary=True)
    assert summary.created_at == old[0].created_at  # 29 days: the oldest summarised
    victims = store.enforce("app", "u", NOW + timedelta(days=2))
    assert summary.id in {v.id for v in victims if v.reason == "expired"}


def test_summaries_off_by_default():
    update_policy("app", {"max_records": 1})
    for i in range(6):
        note(f"Note {i}", session="s")
    store.enforce("app", "u", NOW)
    assert not MemoryRecord.objects.filter(is_summary=True).exists()


def test_extractive_summary_respects_the_token_budget_and_dedupes():
    texts = ["Same first sentence. Rest."] * 3 + [f"Line {i} is here. More." for i in range(50)]
    summary = extractive_summary(texts, 60)
    assert count_tokens(summary) <= 60
    assert summary.count("Same first sentence.") == 1


def _enforce_with_summariser(settings, name: str) -> MemoryRecord:
    """Enforce a cap over a cluster of victims with ``name`` (of this module) as the
    summariser; the summary written."""
    settings.MEMADMIN = {**settings.MEMADMIN, "SUMMARISER": f"tests.records.test_summaries.{name}"}
    summaries.summariser.cache_clear()
    try:
        update_policy("app", {"summarise": True, "summarise_min_cluster": 2, "max_records": 2})
        for i in range(4):
            note(f"A short note {i}. x", session="s")
        note("My name is Ana", importance=0.9, age_days=1)
        store.enforce("app", "u", NOW)
        return MemoryRecord.objects.get(is_summary=True)
    finally:
        summaries.summariser.cache_clear()


def test_a_plugged_in_summariser_that_overspends_falls_back(settings):
    assert "blah" not in _enforce_with_summariser(settings, "verbose").content


def quoting(texts, max_tokens):
    raise ValueError(f"the model refused: {texts[0]!r}")


def test_a_plugged_in_summariser_that_fails_is_logged_without_the_text(settings, caplog):
    summary = _enforce_with_summariser(settings, "quoting")
    assert "A short note" in summary.content  # the extractive summary instead
    assert "ValueError (raised at test_summaries.py:" in caplog.text
    assert "short note" not in caplog.text


def verbose(texts, max_tokens):
    return "blah " * (max_tokens * 10)


@pytest.mark.parametrize("seed", range(3))
def test_the_first_sentence_is_what_splitting_at_the_first_sentence_end_gave(seed):
    import random
    import re

    oracle = re.compile(r"(?<=[.!?])\s")  # the old rule, as the tests' oracle
    rng = random.Random(seed)
    pieces = ["word", ".", "!", "?", " ", "\n", "\u00a0", "é", "x" * 120]
    for _ in range(300):
        text = "".join(rng.choices(pieces, k=rng.randint(0, 12)))
        expected = oracle.split(text.strip(), maxsplit=1)[0][:300].strip()
        assert first_sentence(text) == expected


def test_a_long_text_with_no_sentence_end_is_cut_at_300_characters():
    assert first_sentence("a" * 10_000) == "a" * 300
    assert first_sentence("Done. Next") == "Done."


SUMMARISED: list[int] = []  # texts each call of ``recording`` was given


def recording(texts, max_tokens):
    SUMMARISED.append(len(texts))
    return "Recorded summary."


def test_a_dry_run_sends_nothing_to_a_plugged_in_summariser(settings):
    """A dry-run (rolled back) plans the same summarised victims with the extractive
    summary; the plugged-in summariser (an LLM call, memory text sent out) is called only
    when the eviction is real."""
    settings.MEMADMIN = {
        **settings.MEMADMIN,
        "SUMMARISER": "tests.records.test_summaries.recording",
    }
    summaries.summariser.cache_clear()
    SUMMARISED.clear()
    try:
        update_policy("app", {"summarise": True, "summarise_min_cluster": 2, "max_records": 2})
        now = timezone.now()  # a dry-run previews from today on
        for i in range(4):
            note(f"A short note {i}. x", session="s", age_days=(NOW - now).days + 1)
        out = io.StringIO()
        call_command("enforce", "--app", "app", "--dry-run", stdout=out)
        planned = out.getvalue()
        assert SUMMARISED == []
        assert MemoryRecord.objects.filter(app_name="app").count() == 4
        assert not MemoryRecord.objects.filter(is_summary=True).exists()

        evicted = store.enforce("app", "u", now)
        assert f"Would evict {len(evicted)} record(s)." in planned
        # The same victims for the same reasons, summarised ones included.
        assert sorted(PlanEntry.objects.values_list("record_id", "reason")) == sorted(
            (v.id, str(v.reason)) for v in evicted
        )
        assert SUMMARISED == [2]
        assert MemoryRecord.objects.get(is_summary=True).content == "Recorded summary."
    finally:
        summaries.summariser.cache_clear()


def test_a_dry_run_with_a_summariser_that_does_not_load_still_plans(settings):
    """The dry-run does not load the plug-in (the real run's failure to is logged there,
    and it falls back): a wrong path does not fail the plan."""
    settings.MEMADMIN = {**settings.MEMADMIN, "SUMMARISER": "no_such_module.summarise"}
    summaries.summariser.cache_clear()
    try:
        update_policy("app", {"summarise": True, "summarise_min_cluster": 2, "max_records": 2})
        now = timezone.now()
        for i in range(4):
            note(f"A short note {i}. x", session="s", age_days=(NOW - now).days + 1)
        out = io.StringIO()
        call_command("enforce", "--app", "app", "--dry-run", stdout=out)
        assert "Would evict 3 record(s)." in out.getvalue()
    finally:
        summaries.summariser.cache_clear()
