"""The pure-Python LoCoMo replay (``bench.locomo_replay``) on the tiny fixture."""

import json
from pathlib import Path

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


def test_command_line_prints_each_mode_and_writes_json(tmp_path, capsys):
    out = tmp_path / "replay.json"
    assert locomo_replay.main(["--locomo", str(FIXTURE), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("end ") and "\ninterleaved " in printed
    assert [r["mode"] for r in json.loads(out.read_text())] == ["end", "interleaved"]
