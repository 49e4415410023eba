"""What full-text retrieval matches on: the words of a fact, and of the message looking for it.

Chinese and Japanese are written without spaces, so a word tokenizer (SQLite FTS5's
unicode61, PostgreSQL's ``simple`` parser) sees a whole sentence as one token and a word
inside it never matches. ``memory.retrieval_adapter: fts5_cjk`` matches overlapping character
bigrams of CJK text instead, the classic CJK indexing (Lucene's CJK bigram filter): every
stored fact's index text carries its bigrams, so the adapter can be switched without a
reindex, and "fts5" simply does not query them.
"""

from __future__ import annotations

import re

# Han (with extension A and compatibility ideographs), hiragana, katakana (full and half
# width, phonetic extensions) and Hangul syllables.
CJK_CLASS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD = re.compile(r"\w{2,}", re.UNICODE)

ADAPTERS = ("fts5", "fts5_cjk", "")


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping pairs of each run of CJK characters; a lone character stands for itself."""
    grams: list[str] = []
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i:i + 2] for i in range(len(run) - 1))
    return grams


def index_text(content: str) -> str:
    """The text a fact is indexed under: its content, then its CJK bigrams when it has any."""
    grams = cjk_bigrams(content)
    return f"{content}\n{' '.join(dict.fromkeys(grams))}" if grams else content


def query_terms(text: str, limit: int = 32, adapter: str = "fts5") -> list[str]:
    """The terms of *text* worth matching, in order, each once (FTS-safe: letters and digits).
    With ``fts5_cjk`` a CJK run counts by its bigrams, not as one long word."""
    seen: dict[str, None] = {}
    lowered = text.lower()
    if adapter == "fts5_cjk":
        lowered = _CJK_RUN.sub(lambda m: " " + " ".join(cjk_bigrams(m.group())) + " ", lowered)
        words = re.findall(r"\w+", lowered)
        words = [w for w in words if len(w) >= 2 or _CJK_RUN.fullmatch(w)]
        limit *= 2  # a CJK sentence is many bigrams
    else:
        words = _WORD.findall(lowered)
    for w in words:
        seen.setdefault(w, None)
        if len(seen) >= limit:
            break
    return list(seen)


def substring_terms(text: str, limit: int = 16) -> list[str]:
    """For ``retrieval_adapter: ""`` (no index): terms matched as substrings of a fact, so a
    part of a word matches too; CJK text by its bigrams, as a sentence is never a substring."""
    return query_terms(text, limit, "fts5_cjk")


def matches(content: str, terms: list[str], adapter: str) -> int:
    """How many of *terms* a fact's content matches (the file store's search)."""
    if adapter == "":
        lowered = content.lower()
        return sum(1 for t in terms if t in lowered)
    return len(set(terms) & set(query_terms(content, limit=200, adapter=adapter)))
