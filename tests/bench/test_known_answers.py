"""The recall scenario's question set (pure): enough questions, each with one planted
answer the bench's filler does not hold, asked in other words than the answer's."""

import re

from bench import corpus, known_answers
from bench.load import CORPUS_SIZE
from bench.scenarios.recall import FILLER_SEED
from records.search_text import index_tokens, query_terms

SET = known_answers.SET


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def test_at_least_sixty_questions_each_with_its_own_answer():
    assert len(SET) >= 60
    assert len({f.question for f in SET}) == len(SET)
    assert len({f.answer for f in SET}) == len(SET)


def test_the_issues_two_hard_cases_are_asked_in_its_words():
    questions = {f.question: f for f in SET}
    assert "kiwi" in questions["kiwi allergy"].answer
    assert "dog" in questions["is the dog friendly with couriers"].answer
    assert all(questions[q].hard for q in (known_answers.HARD_KIWI, known_answers.HARD_DOG))


def test_the_filler_holds_no_answer_and_makes_the_hard_cases_hard():
    filler = corpus.texts(CORPUS_SIZE, FILLER_SEED)
    assert not {f.answer for f in SET} & set(filler)
    # Hundreds of allergy records around "kiwi allergy"; many chats about a dog and a
    # courier around "is the dog friendly with couriers".
    assert sum("allerg" in t for t in filler) >= 300
    assert sum("their dog" in t and "courier" in t for t in filler) >= 100


def test_questions_do_not_copy_their_answer_but_share_a_searchable_word():
    for fact in SET:
        assert not _words(fact.question) <= _words(fact.answer), fact.question
        stored = set(index_tokens(fact.answer, "user").split())
        asked = {t.token for t in query_terms(fact.question)}
        assert stored & asked, fact.question
