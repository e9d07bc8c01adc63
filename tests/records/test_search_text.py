"""The one tokenizer and the BM25 ranking (pure: no database)."""

import math

import pytest

from records import search_text as st
from records.search_text import Candidate, Scope


def test_folding_makes_accents_case_and_compatibility_forms_one_word():
    assert st.query_words("ZÜRICH Zurich zürich") == ["zurich"]
    assert st.query_words("Straße Øresund façade ﬁle ＡＢＣ") == [
        "strasse",
        "oresund",
        "facade",
        "file",
        "abc",
    ]
    # Marks that change a letter outside Latin/Greek/Cyrillic are kept: が is not か.
    assert st.query_words("が") != st.query_words("か")


def test_each_word_is_stored_as_itself_its_stem_and_a_prefix_for_long_words():
    assert st.index_tokens("Allergies to kiwi").split() == [
        "allergies",
        "~allergi",
        "^aller",
        "kiwi",
        "~kiwi",
    ]
    # the query looks up the same three layers, weighted 1, 1/2, 1/4, and the exact and
    # stem forms in the context layer at half their weight
    assert [(t.token, t.weight) for t in st.query_terms("allergic")] == [
        ("allergic", 1.0),
        ("@allergic", 0.5),
        ("~allerg", 0.5),
        ("@~allerg", 0.25),
        ("^aller", 0.25),
    ]


def test_preceding_turns_are_a_marked_layer_of_exact_and_stem_forms_with_their_authors():
    tokens = st.index_tokens(
        "We roasted marshmallows",
        "Melanie",
        [("Caroline", "What did you do while camping?"), ("Melanie", "東京")],
    ).split()
    own = st.index_tokens("We roasted marshmallows", "Melanie").split()
    assert tokens[: len(own)] == own
    assert tokens[len(own) :] == [
        "@caroline",
        "@~carolin",
        "@camping",
        "@~camp",
        "@melanie",
        "@~melani",
        "@東",
        "@京",
        "@東京",
    ]
    assert st.index_tokens("", "", [("user", "hi")]) == "@user @~user @hi @~hi"
    assert st.index_tokens("kiwi") == st.index_tokens("kiwi", "", ())


def test_indexing_a_session_at_once_gives_each_turn_what_indexing_it_alone_does():
    turns = [
        ("user", "We went camping at the lake"),
        ("agent", "What did you do while camping?"),
        ("user", "We roasted marshmallows"),
        ("user", "We roasted marshmallows"),  # a repeated text, remembered once
        ("agent", "Zürich, 東京 🎉"),
    ]
    items = [
        (text, author, turns[max(0, i - st.CONTEXT_TURNS) : i])
        for i, (author, text) in enumerate(turns)
    ]
    assert st.index_all(items) == [st.index_tokens(*item) for item in items]
    assert st.index_all([]) == []


def test_no_cache_keeps_a_memory_s_words_after_the_call():
    # Erasure cannot reach a process's memory: only the stemmer itself is cached, and
    # it runs with its own word cache off.
    cached = {
        name for name, value in vars(st).items() if callable(value) and hasattr(value, "cache_info")
    }
    assert cached == {"_stemmer"}
    assert st._stemmer().maxCacheSize == 0


def test_reindexing_a_record_keeps_its_context_layer():
    tokens = st.index_tokens("old text", "user", [("agent", "camping trip")])
    assert st.reindex("new words", "user", tokens) == st.index_tokens(
        "new words", "user", [("agent", "camping trip")]
    )
    assert st.reindex("kiwi", "", "") == st.index_tokens("kiwi")


def test_unsegmented_scripts_are_cut_into_character_pairs():
    stored = st.index_tokens("私は東京都に住んでいます").split()
    assert {"東京", "京都", "東", "京"} <= set(stored)
    assert st.query_words("東京") == ["東京"]
    assert st.query_words("猫") == ["猫"]  # one character: stored as such too
    assert "猫" in st.index_tokens("黒い猫がいる").split()
    assert st.query_words("iPhone用") == ["iphone", "用"]  # scripts split where they change


def test_emoji_are_words_without_skin_tones_or_variation_selectors():
    assert st.query_words("🍕🍕 👍🏽 ❤️") == ["🍕", "👍", "❤"]
    assert st.index_tokens("pizza 🍕") == "pizza ~pizza 🍕"


@pytest.mark.parametrize("query", ["who am I", "the and of", "!!! ???", "", "\x00"])
def test_stopwords_and_punctuation_alone_search_nothing(query):
    assert st.query_terms(query) == []


def test_stopwords_are_not_stored():
    assert st.index_tokens("What is the price") == "price ~price"


def test_a_query_counts_its_first_32_distinct_words_each_cut_at_64_characters():
    words = [f"word{i}" for i in range(40)]
    assert st.query_words(" ".join(words + words)) == words[:32]
    assert st.query_words("x" * 100) == ["x" * 64]
    assert st.MAX_QUERY_WORDS == 32


def test_huge_odd_input_is_tokenized_in_one_pass():
    text = ("a" * 5000 + "!") * 20 + "é" * 10000 + "東" * 5000
    assert len(st.index_tokens(text)) > 0


@pytest.mark.parametrize("seed", range(3))
def test_ascii_words_and_stripped_accents_are_what_the_old_patterns_gave(seed):
    import random
    import re
    import unicodedata

    # The old regular expressions, as the tests' oracle for the scans that replaced them.
    words, accents = re.compile(r"[a-z0-9]+"), re.compile("[\u0300-\u036f]")
    rng = random.Random(seed)
    ascii_pieces = ["ab", "9", " ", "-", "_", "'", "\n", "\t", "\x00", "~", "\x7f", "z0"]
    accented = ["e\u0301", "u\u0308", "n\u0303", "\u3099", "a", "\u036f", "\u0370"]
    for _ in range(300):
        text = "".join(rng.choices(ascii_pieces, k=rng.randint(0, 15)))
        assert text.translate(st._ASCII_SEPARATORS).split() == words.findall(text)
        marked = unicodedata.normalize("NFD", "".join(rng.choices(accented, k=8)))
        assert marked.translate(st._STRIP_ACCENTS) == accents.sub("", marked)


def _candidate(id, text, terms, *, length=10, at=0, live=True):
    return Candidate(id, st.term_counts(st.index_tokens(text), terms), length, at, live)


def _rank(query, texts, *, records=None, ats=None):
    terms = st.query_terms(query)
    cands = [
        _candidate(i, t, terms, at=(ats[i] if ats else 0))
        for i, t in enumerate(texts)
        if any(st.term_counts(st.index_tokens(t), terms))
    ]
    return st.rank(terms, cands, Scope(records or len(texts), 10.0), 10)


def test_a_rare_word_outweighs_a_common_one_with_all_its_forms():
    texts = ["allergy to penicillin"] * 40 + ["allergies: nuts"] * 20 + ["reacts to kiwi"]
    assert _rank("kiwi allergy", texts)[0] == 60


def test_an_exact_word_outranks_its_stem_and_prefix_matches():
    texts = ["allergic to nuts", "allergies to nuts", "allergy to nuts", "allergen in nuts"]
    assert _rank("allergic", texts, ats=[0, 3, 2, 1])[0] == 0
    # among 40 records, then the stem match before the (newer) prefix match
    assert _rank("allergies", texts, records=40, ats=[3, 0, 2, 1])[:3] == [1, 2, 0]
    # a form in every record says nothing: stem and prefix matches tie, newer first
    assert _rank("allergies", texts, ats=[3, 0, 2, 1])[:3] == [1, 0, 2]


def test_a_stem_match_of_a_rare_word_outranks_an_exact_match_of_a_common_one():
    # "sleep" is in 1 record of 100, "coffee" in 12: a stem match of the rare word
    # beats the exact common word (halving its IDF put it below all twelve)
    texts = ["decaf after midday or I cannot sleep"] + ["a coffee grinder"] * 12
    assert _rank("trouble sleeping after coffee", texts, records=100, ats=[0] + [1] * 12)[0] == 0
    # an exact match of the rare word still beats its stem match
    texts = ["cannot sleep at night", "sleeping badly again"]
    assert _rank("sleeping", texts, records=100, ats=[1, 0]) == [1, 0]


def test_near_equal_scores_rank_newer_first_then_higher_id():
    texts = [
        "My delivery address is 12 Elm Street",
        "Delivery address: 4 Oak Lane",
        "My new delivery address is 9 Harbour Road, use it from now on",
        "something unrelated",
    ]
    assert _rank("delivery address", texts, records=50, ats=[1, 2, 3, 0]) == [2, 1, 0]
    # equal scores and times: higher id first
    assert _rank("kiwi", ["kiwi"] * 3) == [2, 1, 0]


def test_a_clearly_better_match_is_not_overtaken_by_a_newer_weak_one():
    texts = ["kiwi allergy confirmed", "kiwi"]
    assert _rank("kiwi allergy", texts, records=100, ats=[0, 9]) == [0, 1]


def test_expired_candidates_are_never_returned_but_count_in_document_frequencies():
    terms = st.query_terms("kiwi")
    live = _candidate(1, "kiwi", terms)
    expired = _candidate(2, "kiwi", terms, live=False)
    scope = Scope(10, 10.0)
    assert st.rank(terms, [live, expired], scope, 10) == [1]
    alone = st.bm25_scores(terms, [live], scope)[1]
    assert st.bm25_scores(terms, [live, expired], scope)[1] < alone


def test_a_records_own_word_outranks_the_same_word_in_anothers_context():
    terms = st.query_terms("camping")
    own = st.index_tokens("Camping was fun")
    replied = st.index_tokens("We roasted marshmallows", "", [("user", "Camping was fun")])
    candidates = [  # the reply is newer: only a score within the tie band would let it win
        Candidate(1, st.term_counts(own, terms), 10, 0, True),
        Candidate(2, st.term_counts(replied, terms), 10, 1, True),
    ]
    scores = st.bm25_scores(terms, candidates, Scope(records=100, mean_length=10))
    assert scores[1] > scores[2] > 0
    assert st.rank(terms, candidates, Scope(records=100, mean_length=10), 10) == [1, 2]


def test_term_counts_count_every_occurrence_of_each_term_and_zero_for_the_rest():
    terms = st.query_terms("allergies kiwi zebra")
    tokens = st.index_tokens("allergy allergies allergic, kiwi kiwi kiwi")
    expected = tuple(tokens.split(" ").count(t.token) for t in terms)
    assert st.term_counts(tokens, terms) == expected
    assert expected[[t.token for t in terms].index("kiwi")] == 3
    assert st.term_counts("unrelated ~unrel", terms) == (0,) * len(terms)


def test_candidates_with_the_same_counts_and_length_score_the_same_as_alone():
    terms = st.query_terms("kiwi allergy")
    same = [_candidate(i, "kiwi allergy noted", terms) for i in range(3)]
    other = _candidate(9, "allergy", terms, length=4)
    scope = Scope(records=20, mean_length=10.0)
    scores = st.bm25_scores(terms, [*same, other], scope)
    assert scores[0] == scores[1] == scores[2] != scores[9]
    alone = st.bm25_scores(terms, [same[0], other], Scope(records=20, mean_length=10.0))
    assert alone[9] != scores[9]  # document frequencies still count every candidate


def test_query_terms_say_which_word_each_form_comes_from():
    terms = st.query_terms("camping allergies")
    assert {t.token: t.word for t in terms if t.word == 0} == {
        "camping": 0,
        "@camping": 0,
        "~camp": 0,
        "@~camp": 0,
        "^campi": 0,
    }
    assert {t.word for t in terms} == {0, 1}
    # a token two words share (one stem) belongs to the first
    assert {t.token: t.word for t in st.query_terms("allergy allergies")}["~allergi"] == 0


def test_a_word_counts_once_by_its_best_layer():
    terms = st.query_terms("camping")
    scope = Scope(records=100, mean_length=10)
    exact = Candidate(1, st.term_counts(st.index_tokens("camping"), terms), 10, 0, True)
    # the same word in the record and in the turn before it: no more than the word alone
    echoed = st.index_tokens("camping", "", [("user", "camping")])
    both = Candidate(2, st.term_counts(echoed, terms), 10, 0, True)
    scores = st.bm25_scores(terms, [exact, both], scope)
    assert scores[1] == scores[2] > 0
    # each term's contribution, by hand: the exact layer is the best of the five
    df = 2  # both candidates hold every form ("camping", "~camp", "^campi"; "@" in one)
    norm = st.BM25_K1  # length equal to the mean
    best = math.log(1 + (100 - df + 0.5) / (df + 0.5)) * (st.BM25_K1 + 1) / (1 + norm)
    assert scores[1] == pytest.approx(best)


def test_many_forms_of_one_word_do_not_outscore_another_word_matched_once():
    # Summed, allergy's exact, stem and prefix forms scored 1.75 times "kiwi" (same
    # document frequencies); counted once they tie, and the newer record comes first.
    terms = st.query_terms("allergy kiwi")
    scope = Scope(records=100, mean_length=10)
    tokens = st.index_tokens("allergy allergies allergic allergen")
    forms = Candidate(1, st.term_counts(tokens, terms), 10, 0, True)
    kiwi = Candidate(2, st.term_counts(st.index_tokens("kiwi"), terms), 10, 1, True)
    scores = st.bm25_scores(terms, [forms, kiwi], scope)
    assert scores[1] == pytest.approx(scores[2])
    assert st.rank(terms, [forms, kiwi], scope, 10) == [2, 1]


def _rank_per_candidate(terms, candidates, scope, limit):
    """``rank`` as defined, done the long way: every live candidate with a score sorted
    by (rounded score, newest, id), bands cut from the top, each sorted newest first."""
    scores = st.bm25_scores(terms, candidates, scope)
    rounded = {c.id: round(scores[c.id], 9) for c in candidates if c.live and scores[c.id] > 0}
    live = sorted(
        (c for c in candidates if c.id in rounded),
        key=lambda c: (-rounded[c.id], -c.written_at, -c.id),
    )
    out, i = [], 0
    while i < len(live) and len(out) < limit:
        floor = rounded[live[i].id] * (1 - st.TIE_BAND)
        j = i
        while j < len(live) and rounded[live[j].id] >= floor:
            j += 1
        out.extend(c.id for c in sorted(live[i:j], key=lambda c: (-c.written_at, -c.id)))
        i = j
    return out[:limit]


@pytest.mark.parametrize("seed", range(20))
def test_ranking_by_score_groups_is_the_per_candidate_order(seed):
    """``rank`` groups candidates by score and sorts only the bands it returns: the same
    ids in the same order as sorting every candidate, with many sharing a score, some
    expired, and ties in time."""
    import random

    rng = random.Random(seed)
    terms = st.query_terms("kiwi allergy travel insurance")
    candidates = [
        Candidate(
            i,
            tuple(rng.choice((0, 0, 1, 1, 2)) for _ in terms),
            rng.choice((5, 10, 20)),
            rng.randrange(6),
            rng.random() > 0.1,
        )
        for i in range(rng.randrange(1, 400))
    ]
    scope = Scope(records=1_000, mean_length=12.0)
    for limit in (1, 10, 50):
        assert st.rank(terms, candidates, scope, limit) == _rank_per_candidate(
            terms, candidates, scope, limit
        )


def test_a_query_names_an_author_by_one_of_their_words_folded():
    words = st.query_words("What has Zoë painted lately?")
    assert st.author_named("Zoe", words)
    assert st.author_named("zoë Martin", words)
    assert not st.author_named("Martin", words)
    assert not st.author_named("", words)
    assert not st.author_named("user", st.query_words("what did I say?"))  # stopwords only


def test_a_record_by_the_author_the_query_names_scores_author_weight_times_more():
    terms = st.query_terms("What has Noor painted?")
    words = st.query_words("What has Noor painted?")
    mention = st.index_tokens("Noor, your painting of the harbour is lovely", "Ines")
    own = st.index_tokens("Finished a painting of the lighthouse, Ines", "Noor")
    candidates = [  # the same words, the mention newer: it wins unless the author counts
        Candidate(1, st.term_counts(own, terms), 9, 0, True, st.author_named("Noor", words)),
        Candidate(2, st.term_counts(mention, terms), 9, 1, True, st.author_named("Ines", words)),
    ]
    scope = Scope(records=100, mean_length=10)
    scores = st.bm25_scores(terms, candidates, scope)
    plain = st.bm25_scores(terms, [c._replace(named=False) for c in candidates], scope)
    assert plain[1] == plain[2] > 0
    assert scores[1] == st.AUTHOR_WEIGHT * plain[1] and scores[2] == plain[2]
    assert st.rank(terms, candidates, scope, 10) == [1, 2]
    assert st.rank(terms, [c._replace(named=False) for c in candidates], scope, 10) == [2, 1]


@pytest.mark.parametrize("seed", range(20))
def test_ranking_database_rows_is_ranking_their_candidates(seed):
    """``rank_rows`` (what search runs on the database's rows) returns what ``rank``
    does over a ``Candidate`` of each row: repeated words, named and other authors,
    expired records, shared shapes and ties in time."""
    import random

    rng = random.Random(seed)
    query = "What did Noor say about kiwi allergies and travel insurance?"
    terms, words = st.query_terms(query), frozenset(st.query_words(query))
    texts = [
        "kiwi kiwi allergy",
        "allergic to kiwi, travel insurance renewed",
        "insurance insurance insurance",
        "travelling with allergies",
        "nothing relevant but kiwi",
    ]
    authors = ["Noor", "Ines", "user", ""]
    rows = []
    for i in range(rng.randrange(1, 300)):
        author = rng.choice(authors)
        tokens = st.index_tokens(rng.choice(texts), author, [("Ines", rng.choice(texts))])
        rows.append(
            ("x", i, tokens, rng.choice((5, 10, 20)), rng.randrange(6), rng.random() > 0.1, author)
        )
    candidates = [
        Candidate(i, st.term_counts(t, terms), n, at, live, st.author_named(a, words))
        for _, i, t, n, at, live, a in rows
    ]
    scope = Scope(records=1_000, mean_length=12.0)
    for limit in (1, 10, 50):
        assert st.rank_rows(terms, words, rows, scope, limit, at=1) == st.rank(
            terms, candidates, scope, limit
        )


def test_only_the_start_of_a_huge_query_is_read():
    from records.search_text import MAX_QUERY_CHARS, query_words

    head = "kiwi allergy "
    query = head + "x" * (MAX_QUERY_CHARS * 100) + " mango"
    assert query_words(query)[:2] == ["kiwi", "allergy"]
    assert "mango" not in query_words(query)
