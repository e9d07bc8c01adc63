"""The pure-Python LoCoMo replay (``bench.locomo_replay``) on the tiny fixture."""

import json
from pathlib import Path

import pytest

from bench import locomo_replay
from bench.quality import locomo

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"


def test_every_question_is_counted_once_per_mode_and_halves_split_the_conversations():
    dataset = locomo.load(FIXTURE)
    questions = sum(len(u.questions) for u in dataset.users)
    for mode in ("end", "interleaved"):
        whole = locomo_replay.run(str(FIXTURE), mode, None)
        assert whole["answerable"]["all"]["questions"] == questions
        halves = [locomo_replay.run(str(FIXTURE), mode, h) for h in ("a", "b")]
        assert [h["conversations"] for h in halves] == [
            [dataset.users[0].user_id],
            [dataset.users[1].user_id],
        ]
        assert (
            sum(h["answerable"]["all"]["answerable"] for h in halves)
            == (whole["answerable"]["all"]["answerable"])
        )
        missed = {m["question"] for m in whole["misses"]}
        assert whole["answerable"]["all"]["answerable"] == questions - len(missed)


def test_a_question_whose_words_are_in_its_evidence_finds_it_and_ids_follow_ingest():
    user = locomo.load(FIXTURE).users[0]
    records, next_id = locomo_replay.ingest(user, 1)
    assert [r.id for r in records] == list(range(1, next_id))
    assert records[0].key == "D1:1" and "pixel" in records[0].counts
    assert "@pixel" in records[1].counts  # the turn after carries it in its context
    found = locomo_replay.top("What is the name of Ana's cat?", records)
    assert "D1:1" in [r.key for r in found]
    assert locomo_replay.top("the of", records) == []  # stopwords only


def test_batches_saved_alone_have_no_turns_before_them():
    """``batch=2``: an exchange at a time with no stored session to read the turns before
    it from: the first turn of each batch has no context layer, the second only the first."""
    user = locomo.load(FIXTURE).users[0]
    whole, _ = locomo_replay.ingest(user, 1)
    alone, _ = locomo_replay.ingest(user, 1, batch=2)

    def context(r):
        return {t for t in r.counts if t.startswith("@")}

    assert [r.key for r in alone] == [r.key for r in whole]
    by_key = {r.key: r for r in alone}
    assert context(by_key["D1:2"]) == context(whole[1])  # its batch holds the turn before
    assert context(by_key["D1:3"]) == set() != context(whole[2])  # a batch's first turn
    assert set() < context(by_key["D1:4"]) < context(whole[3])  # one turn before, not two


def test_command_line_prints_each_mode_and_writes_json(tmp_path, capsys):
    out = tmp_path / "replay.json"
    assert locomo_replay.main(["--locomo", str(FIXTURE), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("end ") and "\ninterleaved " in printed
    assert [r["mode"] for r in json.loads(out.read_text())] == ["end", "interleaved"]


EMBEDDER = "tests.embedders.bag_of_concepts"


def test_hybrid_fuses_the_embedders_vectors_as_search_does(tmp_path):
    from tests import embedders

    user = locomo.load(FIXTURE).users[0]
    records, _ = locomo_replay.ingest(user, 1)
    fusion = locomo_replay.Fusion(EMBEDDER)
    store = locomo_replay.Vectors(EMBEDDER, None)
    for r, vector in zip(records, store.get([r.embedded for r in records]), strict=True):
        r.vector = vector
    assert all(len(r.vector) == embedders.DIMS * 4 for r in records)  # unit float32 bytes
    # No record holds "kitten": lexically nothing; its concept (cat) is Pixel's turn.
    assert locomo_replay.top("kitten", records) == []
    (question,) = store.get(["kitten"])
    found = locomo_replay.hybrid("kitten", question, records, fusion)
    assert found and found[0].key == "D1:1"
    # A word in the records: the lexical hit stays in the fused top 10.
    (question,) = store.get(["Who painted a mural?"])
    found = locomo_replay.hybrid("Who painted a mural?", question, records, fusion)
    assert "D2:2" in [r.key for r in found]
    assert locomo_replay.hybrid("the of", question, records, fusion) == []  # no search term


def test_embedder_flag_reports_the_products_constants_and_caches_vectors(tmp_path):
    from records import embeddings, vectors
    from tests import embedders

    questions = sum(len(u.questions) for u in locomo.load(FIXTURE).users)
    fusion = locomo_replay.Fusion(EMBEDDER, cache=str(tmp_path))
    first = locomo_replay.run(str(FIXTURE), "end", None, fusion=fusion)
    assert first["answerable"]["all"]["questions"] == questions
    f = first["fusion"]
    assert (f["k"], f["lexical_depth"], f["vector_depth"]) == (
        vectors.RRF_K,
        embeddings.FUSION_DEPTH,
        embeddings.FUSION_DEPTH,
    )
    assert f["queries_timed"] == questions
    assert list(tmp_path.glob("vectors-*.pickle"))
    calls = len(embedders.CALLS)
    again = locomo_replay.run(str(FIXTURE), "end", None, fusion=fusion)  # all from the cache
    assert len(embedders.CALLS) == calls and again["fusion"]["queries_timed"] == 0
    assert again["answerable"] == first["answerable"]


def test_embedder_flag_on_the_command_line_and_variants_need_it(tmp_path, capsys):
    from records import vectors

    assert locomo_replay.main(["--locomo", str(FIXTURE), "--embedder", EMBEDDER]) == 0
    assert f"hybrid tests.embedders.bag_of_concepts k={vectors.RRF_K}" in capsys.readouterr().out
    args = ["--locomo", str(FIXTURE), "--embedder", EMBEDDER, "--rrf-k", "60"]
    assert locomo_replay.main([*args, "--mode", "end"]) == 0
    assert " k=60 " in capsys.readouterr().out
    for bad in (["--rrf-k", "10"], ["--embedder", EMBEDDER, "--vector-depth", "0"]):
        with pytest.raises(SystemExit):
            locomo_replay.main(["--locomo", str(FIXTURE), *bad])
