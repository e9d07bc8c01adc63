"""One tokenizer for what is stored and what is asked, and BM25 ranking over its tokens.

Pure Python (no Django), so PostgreSQL and SQLite search the same tokens and rank them
with the same arithmetic: the database only finds the candidates (any shared token)
and this module orders them. That is what makes the two databases agree.

Text is folded first: NFKC (full-width forms, ligatures), case-folded, accents off
(Zürich → zurich, façade → facade). Words are runs of letters, digits and marks.
Each word is stored in three layers, and a query word is looked up in all three:

- the word itself ("allergies");
- its English Snowball stem, marked ``~`` ("~allergi"), so "allergy" finds "allergies";
- for words of 7+ letters, their first 5 letters, marked ``^`` ("^aller"), so
  "allergies" finds "allergic" (which the stemmer maps elsewhere).

Each layer is a BM25 term of its own with its own document frequency, weighted 1, 1/2
and 1/4: a stem or prefix match counts as an exact match would if 2 or 4 times as many
records held the word (its document frequency is multiplied, see ``term_idf``). A
query word counts once in a record, by the narrowest of its layers the record holds
(exact, else stem, else prefix) or its context layer if that scores more: its forms do
not add up. So a rare word ("kiwi") outweighs a common one ("allergy") however many forms
of it match, and a stem match of a rare word ("sleep" for "sleeping") outweighs an exact
match of a word more than twice as common.

A record said in a conversation is also indexed with the words of the turns before it
(``CONTEXT_TURNS``, their authors' names included), as a fourth layer marked ``@``
("@camping", "@~camp"; no prefix layer): a reply's meaning depends on the question it
answers ("What did you do while camping?" → "We roasted marshmallows…"). A query looks
each exact and stem term up in this layer too, at ``CONTEXT_WEIGHT`` of that layer's
weight (a factor of the term's IDF), so the record's own words still outrank the same
words in its context.

Scripts written without spaces (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar) are cut
into overlapping character pairs ("東京都" → 東京, 京都) and single characters are
stored too, so a one-character query finds them. Emoji are words of their own (skin
tones and variation selectors dropped). Stopwords (English function words) are neither
stored nor searched: a query of stopwords only, or of punctuation only, finds nothing.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import Stemmer

# A query counts its first 32 distinct meaningful words (a pair of CJK characters is
# a word); the rest is ignored. A word is cut at 64 characters.
MAX_QUERY_WORDS = 32
# Only this much of a query is read: room for MAX_QUERY_WORDS words of any length.
MAX_QUERY_CHARS = 10_000
# A record's index, as PostgreSQL's tsvector holds it (at most 1 MiB: each distinct
# lexeme's UTF-8 bytes and a 4-byte entry), is cut at this many bytes, its own words
# first, then the context's. Prose never comes near it; a record of 32,000 characters of
# an unspaced script, with two such turns before it, did (each character and each pair
# is a word), and PostgreSQL refused the whole session while SQLite stored it.
INDEX_BUDGET = 960_000
MAX_WORD_CHARS = 64

STEM_MARK = "~"
PREFIX_MARK = "^"
PREFIX_LETTERS = 5
PREFIX_MIN_LETTERS = 7
# A stem (prefix) match counts as an exact match of a word 2 (4) times as common
# (``term_idf``).
EXACT_WEIGHT, STEM_WEIGHT, PREFIX_WEIGHT = 1.0, 0.5, 0.25
# Contextual indexing: the preceding turns of a record's session, weighted half (on
# LoCoMo with nothing evicted, answerable@10 rose from 57.5% to 64.6%).
CONTEXT_MARK = "@"
CONTEXT_TURNS = 2
CONTEXT_WEIGHT = 0.5

# BM25: term-frequency saturation (the usual 1.2) and a light length normalisation
# (0.3, not the usual 0.75): in conversation the longer turns are the ones that carry
# the facts (measured on LoCoMo with nothing evicted: 0.3 answered 1.3 points more).
BM25_K1 = 1.2
BM25_B = 0.3
# Scores within 20% of the best score of their band count as equal and the newer
# record ranks first: a new address outranks the notes it replaced, which match the
# same words (see ``rank``).
TIE_BAND = 0.20
# A record whose author the query names ("What has Melanie painted?" and a turn of
# Melanie's) scores twice its BM25 (``rank``): what someone did is told in their own
# turns, while a name is too common a word (half of a two-person conversation holds it)
# to tell them from the other's turns that mention them (LoCoMo, nothing evicted:
# multi-turn questions 17.0% -> 23.4% on the half it was chosen on, docs/search.md).
AUTHOR_WEIGHT = 2.0
# Word once: a query word counts once in a record, by the narrowest of its own layers
# there (exact, else stem, else prefix) or its context layer if that scores more: its
# stem and prefix, or the same word in the turns before, do not add to an exact match.
# Summing the layers let a common word with many forms (and a turn repeating the turn
# before it) outscore a rare word; on LoCoMo with nothing evicted counting each word
# once answered 64.6% → 65.5% (end) and 67.1% → 68.2% (interleaved), on both halves of
# the public conversations (docs/search.md).

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves please tell know remember
    """.split()  # noqa: SIM905 - easier to read and extend as text
)

# Letters that carry no combining accent to strip, folded by hand; emoji variation
# selectors (text or emoji style) dropped.
_LETTER_FOLDS = str.maketrans(
    {"ø": "o", "đ": "d", "ł": "l", "ħ": "h", "ı": "i", "æ": "ae", "œ": "oe", "þ": "th", "ð": "d"}
    | {"\ufe0e": None, "\ufe0f": None}
)
# Combining diacritical marks (U+0300–U+036F): Latin, Greek and Cyrillic accents. Marks
# of other scripts (Japanese voicing, Indic vowel signs) change the letter: kept.
_STRIP_ACCENTS = dict.fromkeys(range(0x0300, 0x0370))
# Folded ASCII text to words: every character but a-z and 0-9 becomes a space, then
# ``split``. Tables and scans, never a regular expression, run over memory text.
_ASCII_SEPARATORS = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isdigit() or "a" <= chr(c) <= "z")}
)

# Code point ranges of scripts written without spaces between words.
_UNSEGMENTED = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility, Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended
    (0xAC00, 0xD7FF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)


def _unsegmented(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _UNSEGMENTED)


def fold(text: str) -> str:
    """Compatibility forms, case and accents folded; the same at ingest and at query."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return text
    text = unicodedata.normalize("NFD", text).translate(_STRIP_ACCENTS)
    return unicodedata.normalize("NFC", text).translate(_LETTER_FOLDS)


def _runs(text: str) -> Iterable[tuple[str, str]]:
    """(kind, run) over folded text: kind "w" spaced word, "u" unsegmented run, "e" emoji.

    A scan over characters, not a regular expression, so no input can make it backtrack.
    """
    kind, start = None, 0
    for i, ch in enumerate(text):
        cat = unicodedata.category(ch)
        if cat[0] in "LNM":
            k = "u" if cat[0] != "N" and _unsegmented(ch) else "w"
        elif cat == "So":
            k = "e"
        else:
            k = None
        if k != kind or k == "e":
            if kind is not None:
                yield kind, text[start:i]
            kind, start = k, i
    if kind is not None:
        yield kind, text[start:]


def _words(text: str, *, for_query: bool) -> list[str]:
    """The meaningful words of ``text`` in order (repeats kept), stopwords removed."""
    folded = fold(text)
    if folded.isascii():
        return [
            w[:MAX_WORD_CHARS]
            for w in folded.translate(_ASCII_SEPARATORS).split()
            if w not in STOPWORDS
        ]
    out: list[str] = []
    for kind, run in _runs(folded):
        if kind == "w":
            if run not in STOPWORDS:
                out.append(run[:MAX_WORD_CHARS])
        elif kind == "e" or len(run) == 1:
            out.append(run)
        else:
            # Overlapping pairs; stored text also keeps each character, so a
            # one-character query matches inside longer runs.
            pairs = [run[i : i + 2] for i in range(len(run) - 1)]
            out.extend(pairs if for_query else [*run, *pairs])
    return out


def _forms(word: str) -> tuple[str, ...]:
    """The stored layers of one word: itself, its stem and (long words) its prefix."""
    return _layers(word, _stemmer().stemWord(word))


def _layers(word: str, stem: str) -> tuple[str, ...]:
    """``_forms`` of ``word`` given its stem (used only for words of ASCII letters)."""
    if not (word.isascii() and word.isalpha()):  # [a-z]+: words are folded to lower case
        return (word,)
    if len(word) >= PREFIX_MIN_LETTERS:
        return (word, STEM_MARK + stem, PREFIX_MARK + word[:PREFIX_LETTERS])
    return (word, STEM_MARK + stem)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    # Snowball's English stemmer in C. Its word cache is off (0): no word of a memory
    # outlives the call that read it (erasure cannot reach a process's memory).
    return Stemmer.Stemmer("english", 0)


def index_tokens(content: str, author: str = "", context: Iterable[tuple[str, str]] = ()) -> str:
    """What the database indexes for a record: every layer of every word, space-separated.

    The author's name is indexed as words of the record: what someone said is about
    them ("What did Melanie paint?" is answered by a turn of Melanie's). ``context`` is
    the (author, text) of the turns said just before it, indexed as the ``@`` layer.
    """
    return _index(content, author, context, _text_forms)


def index_all(turns: Iterable[tuple[str, str, Iterable[tuple[str, str]]]]) -> list[str]:
    """``index_tokens`` of each (content, author, context), each text's words found once
    however many of the turns hold it (a session's turn is the context of the next
    ``CONTEXT_TURNS``). What it remembers lives for the call only: no cache keeps a
    memory's words after it, where erasure could not reach them."""
    memo: dict[str, list[tuple[str, ...]]] = {}

    def text_forms(text: str) -> list[tuple[str, ...]]:
        if text not in memo:
            memo[text] = _text_forms(text)
        return memo[text]

    return [_index(content, author, context, text_forms) for content, author, context in turns]


def _index(
    content: str,
    author: str,
    context: Iterable[tuple[str, str]],
    text_forms: Callable[[str], list[tuple[str, ...]]],
) -> str:
    text = f"{author} {content}" if author else content
    own = " ".join(form for forms in text_forms(text) for form in forms)
    return _within_budget(_joined(own, _context(context, text_forms)))


def _within_budget(tokens: str) -> str:
    """``tokens`` cut where their distinct words' cost (``INDEX_BUDGET``) would pass it."""
    if len(tokens) * 8 <= INDEX_BUDGET:  # 4 bytes a character, 4 a word at most
        return tokens
    seen: set[str] = set()
    used = 0
    kept: list[str] = []
    for token in tokens.split(" "):
        if token not in seen:
            used += len(token.encode("utf-8", "surrogatepass")) + 4
            if used > INDEX_BUDGET:
                break
            seen.add(token)
        kept.append(token)
    return " ".join(kept)


def context_tokens(context: Iterable[tuple[str, str]]) -> str:
    """The ``@`` layer of preceding turns: each word's exact and stem forms, marked."""
    return _context(context, _text_forms)


def _context(
    context: Iterable[tuple[str, str]], text_forms: Callable[[str], list[tuple[str, ...]]]
) -> str:
    return _joined(
        *(
            " ".join(CONTEXT_MARK + form for forms in text_forms(f"{a} {t}") for form in forms[:2])
            for a, t in context
        )
    )


def _text_forms(text: str) -> list[tuple[str, ...]]:
    """``_forms`` of every word of ``text``, in order (stemmed in one call)."""
    words = _words(text, for_query=False)
    return list(map(_layers, words, _stemmer().stemWords(words)))


def reindex(content: str, author: str, tokens: str) -> str:
    """``index_tokens`` of a record's content and author, keeping the context layer of
    its current ``tokens`` (the turns before it are not stored with the record)."""
    kept = " ".join(t for t in tokens.split(" ") if t.startswith(CONTEXT_MARK))
    return _within_budget(_joined(index_tokens(content, author), kept))


def _joined(*layers: str) -> str:
    return " ".join(layer for layer in layers if layer)


def query_words(query: str) -> list[str]:
    """A query's distinct meaningful words, in order, at most MAX_QUERY_WORDS, read from
    its first MAX_QUERY_CHARS characters (a megabyte-long query took a second to split)."""
    words = _words(query[:MAX_QUERY_CHARS], for_query=True)
    return list(dict.fromkeys(words))[:MAX_QUERY_WORDS]


@dataclass(frozen=True)
class QueryTerm:
    token: str
    weight: float
    word: int = 0  # which query word it is a form of (its index in ``query_words``)


def query_terms(query: str) -> list[QueryTerm]:
    """The tokens a query looks up, each with its layer's weight (one entry per token).

    Exact and stem forms are also looked up in the context layer, at CONTEXT_WEIGHT.
    A token two words share (two words with one stem) belongs to the first of them.
    Each word's own forms come in the order exact, stem, prefix (``bm25_scores`` takes
    the first a record holds), each exact or stem form followed by its context form.
    """
    weights: dict[str, float] = {}
    words: dict[str, int] = {}
    layer_weights = (EXACT_WEIGHT, STEM_WEIGHT, PREFIX_WEIGHT)
    for index, word in enumerate(query_words(query)):
        for form, weight in zip(_forms(word), layer_weights, strict=False):
            forms = [(form, weight)]
            if not form.startswith(PREFIX_MARK):
                forms.append((CONTEXT_MARK + form, weight * CONTEXT_WEIGHT))
            for token, w in forms:
                weights[token] = max(weights.get(token, 0.0), w)
                words.setdefault(token, index)
    return [QueryTerm(t, w, words[t]) for t, w in weights.items()]


# --- ranking -------------------------------------------------------------------------------


class Candidate(NamedTuple):
    """A record that shares at least one token with the query (a tuple: built per row)."""

    id: int
    counts: Sequence[int]  # how often it holds each query term, in the terms' order
    length: int  # its size (the record's token count), for length normalisation
    written_at: int  # when it was said (microseconds since 1970): newer wins a tie
    live: bool  # unexpired; expired candidates still count in document frequencies
    named: bool = False  # the query names its author (``author_named``): AUTHOR_WEIGHT


def author_named(author: str, words: Collection[str]) -> bool:
    """Whether one of the meaningful words of ``author`` is one of ``words`` (a query's
    ``query_words``): "Melanie" in "What has Melanie painted?"."""
    return bool(author) and not set(_author_words(author)).isdisjoint(words)


def _author_words(author: str) -> tuple[str, ...]:
    return tuple(_words(author, for_query=True))


def term_counts(tokens: str, terms: Sequence[QueryTerm]) -> tuple[int, ...]:
    """How often ``tokens`` (index_tokens of a record) holds each term."""
    return term_counter(terms)(tokens)


def term_counter(terms: Sequence[QueryTerm]) -> Callable[[str], tuple[int, ...]]:
    """``term_counts`` for one query's terms, prepared once for all its candidates.

    A candidate holds few of the query's terms: its tokens are filtered by the terms'
    set in one pass in C (``filter``), and only the occurrences kept are counted (a
    set intersection, then a scan of the tokens per term held, was ~20% slower).
    """
    tokens_of_terms = [t.token for t in terms]
    position = {token: i for i, token in enumerate(tokens_of_terms)}
    zeros = (0,) * len(tokens_of_terms)
    is_term = frozenset(tokens_of_terms).__contains__

    def counts(tokens: str) -> tuple[int, ...]:
        held = list(filter(is_term, tokens.split(" ")))
        if not held:
            return zeros
        out = list(zeros)
        for token in held:
            out[position[token]] += 1
        return tuple(out)

    return counts


@dataclass(frozen=True)
class Scope:
    """The collection a user's search ranks against: all their records."""

    records: int
    mean_length: float


def term_idf(term: QueryTerm, df: int, records: int) -> float:
    """A term's BM25 IDF, its layer's weight included.

    A stem or prefix form of the record's own words counts as the exact word would if
    1/weight times as many records held it (2 for a stem, 4 for a prefix): the weight
    divides the rarity, not its logarithm (for a rare word, the IDF less ln 2 or ln 4).
    Halving the IDF instead scored a stem match of a word one record in 568 holds
    ("sleep" for "sleeping") below an exact match of a word one in 47 holds ("coffee"),
    as if the rare word were held by √N records. A form held by at least 1/2 (stem) or
    1/4 (prefix) of the records counts as held by all of them: the smallest IDF, the
    same for both layers (newer first then, as in any tie).

    The context layer (``@``) keeps its weight as a factor of the IDF: it is other
    turns' words, not this record's, and its weight was measured that way (LoCoMo:
    making it a frequency factor too lost category-1 questions).
    """
    if term.token.startswith(CONTEXT_MARK):
        return term.weight * math.log(1 + (records - df + 0.5) / (df + 0.5))
    d = min(records, df / term.weight)  # the weight is 1, 1/2 or 1/4: exact arithmetic
    return math.log(1 + (records - d + 0.5) / (d + 0.5))


def bm25_scores(
    terms: Sequence[QueryTerm], candidates: Sequence[Candidate], scope: Scope
) -> dict[int, float]:
    """BM25 of every candidate; document frequencies are counted over the candidates.

    Every record holding a query token is a candidate, so the counts are exact for the
    user's scope. Each layer's weight is in its term's IDF (``term_idf``), and each
    query word counts once: by the narrowest of its own layers the record holds (exact,
    else stem, else prefix; a broader layer's higher count, "allergi" in "allergy,
    allergies", does not outscore the exact word), or by its context layer if that
    scores more (see the note on the module's constants). A candidate whose author the
    query names (``Candidate.named``) scores AUTHOR_WEIGHT times its BM25.
    """
    shapes = _shapes_of(candidates)
    return {m[0]: score for score, members in _scored(terms, shapes, scope) for m in members}


# A candidate's shape: its counts of the query's terms, its length, whether the query
# names its author. Its score depends on nothing else, so candidates sharing a shape
# (most of them, in a large candidate set) share one computation. A member of a shape is
# (id, written_at, live): what ordering and filtering the ranked need.
type _Shape = tuple[tuple[int, ...], int, bool]
type _Member = tuple[int, int, bool]


def _shapes_of(candidates: Iterable[Candidate]) -> dict[_Shape, list[_Member]]:
    by_shape: dict[_Shape, list[_Member]] = {}
    for c in candidates:
        shape = (tuple(c.counts), c.length, c.named)
        member = (c.id, c.written_at, c.live)
        members = by_shape.get(shape)
        if members is None:
            by_shape[shape] = [member]
        else:
            members.append(member)
    return by_shape


def _scored(
    terms: Sequence[QueryTerm], by_shape: dict[_Shape, list[_Member]], scope: Scope
) -> Iterable[tuple[float, list[_Member]]]:
    """(BM25, the members scoring it) per shape (``bm25_scores``); the author's weight
    is the last of it. Document frequencies are counted over all the shapes' members."""
    df = [0] * len(terms)
    candidates = 0
    for (counts, _, _), members in by_shape.items():
        k = len(members)
        candidates += k
        for i, f in enumerate(counts):
            if f:
                df[i] += k
    n = max(scope.records, candidates)
    idf = [term_idf(t, d, n) for t, d in zip(terms, df, strict=True)]
    words = [t.word for t in terms]
    own = [not t.token.startswith(CONTEXT_MARK) for t in terms]
    mean = scope.mean_length if scope.mean_length > 0 else 1.0
    k1 = BM25_K1
    for (counts, length, named), members in by_shape.items():
        norm = k1 * (1 - BM25_B + BM25_B * max(length, 1) / mean)
        best: dict[int, float] = {}
        held: set[int] = set()  # words matched in one of their own layers already
        for word, w, f, mine in zip(words, idf, counts, own, strict=True):
            if f:
                if mine:
                    if word in held:
                        continue  # a broader form of a word the record holds
                    held.add(word)
                part = w * f * (k1 + 1) / (f + norm)
                if part > best.get(word, 0.0):
                    best[word] = part
        score = sum(best.values())
        yield (score * AUTHOR_WEIGHT if named else score), members


def rank(
    terms: Sequence[QueryTerm], candidates: Sequence[Candidate], scope: Scope, limit: int
) -> list[int]:
    """Ids of the best ``limit`` live candidates, best first.

    Ordered by BM25 (AUTHOR_WEIGHT times it for a record whose author the query names;
    rounded to 9 decimals), then in bands: the first record opens a
    band, every record scoring at least (1 - TIE_BAND) of that first score joins it, and
    within a band newer records (``written_at``) come first, then higher ids.

    Worked per score, not per candidate: the candidates are grouped by their rounded
    score, a band is the groups from its opening score down to its floor, and only the
    bands returned are sorted (the same order as sorting every candidate by score, then
    newest, then id, and cutting bands from the top).
    """
    return _ranked(_scored(terms, _shapes_of(candidates), scope), limit)


def rank_rows(
    terms: Sequence[QueryTerm],
    words: Collection[str],
    rows: Iterable[Sequence],
    scope: Scope,
    limit: int,
    at: int = 0,
) -> list[int]:
    """``rank`` of candidates as the database returns them: rows holding, from column
    ``at``, a record's id, ``index_tokens``, length, written_at, live and author (``words``
    are the query's ``query_words``, for ``author_named``).

    The same ranking as building a ``Candidate`` of each row, without the row's objects:
    each row is counted (``term_counter``) and put in its shape directly, and each
    distinct author is looked up once (a search has hundreds of candidates and a few
    authors). This is what ``records.search`` runs.
    """
    counts = term_counter(terms)
    named_of: dict[str, bool] = {}
    by_shape: dict[_Shape, list[_Member]] = {}
    i_id, i_tokens, i_length, i_written, i_live, i_author = range(at, at + 6)
    for r in rows:
        author = r[i_author]
        named = named_of.get(author)
        if named is None:
            named = named_of[author] = author_named(author, words)
        shape = (counts(r[i_tokens]), r[i_length], named)
        member = (r[i_id], r[i_written], r[i_live])
        members = by_shape.get(shape)
        if members is None:
            by_shape[shape] = [member]
        else:
            members.append(member)
    return _ranked(_scored(terms, by_shape, scope), limit)


def _ranked(scored: Iterable[tuple[float, list[_Member]]], limit: int) -> list[int]:
    """``rank``'s order of the live members of ``scored``, cut at ``limit``."""
    by_score: dict[float, list[_Member]] = {}
    for score, members in scored:
        if score <= 0:
            continue
        live = [m for m in members if m[2]]
        if live:
            by_score.setdefault(round(score, 9), []).extend(live)
    scores = sorted(by_score, reverse=True)
    out: list[int] = []
    i = 0
    while i < len(scores) and len(out) < limit:
        floor = scores[i] * (1 - TIE_BAND)
        band: list[_Member] = []
        while i < len(scores) and scores[i] >= floor:
            band.extend(by_score[scores[i]])
            i += 1
        band.sort(key=_newest_first)
        out.extend(m[0] for m in band)
    return out[:limit]


def _newest_first(m: _Member) -> tuple[int, int]:
    return (-m[1], -m[0])
