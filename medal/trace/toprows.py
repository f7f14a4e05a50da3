"""A node's top tokens, slot by slot, kept as columns: :class:`TopRows` (issue 41).

A search node records, for each masked answer slot, the K1 most likely tokens with their
text and probability. At LLaDA's size (256 slots, ~1,000 nodes, K1 = 3) that is ~760,000
entries; decoded as ``{"token", "text", "p"}`` dicts they took ~200 MB and most of the
gate's time (building them, then walking them four times to check them), while the views
read a few rows of the nodes a user opens. A loaded trace keeps them as four arrays a node
(which slots have a row, how many entries each, the tokens, the probabilities) and one
token -> text table for the whole trace, and builds a slot's row when it is read:

    node["top"][slot]   ->  None, or [{"token": 17, "text": "ab", "p": 0.41}, ...]

It is a read-only sequence of ``gen_length`` rows that equals the list of rows it holds
(``==`` either way), so code written for the plain trace reads it unchanged; JSON is
written through :func:`json_default` (:func:`medal.trace.write_trace` packs it straight
from its columns). The gate checks its columns whole (:mod:`medal.trace.gate.bounds`):
what it holds is what a checked list of rows would hold.
"""
from __future__ import annotations

from typing import Any

import numpy as np


class TopRows:
    """The top tokens of one node's answer slots: row ``s`` is None (no row) or a list of
    ``{"token", "text", "p"}`` built when read. Immutable; pickles as bytes and the
    shared text table."""

    __slots__ = ("_start", "_count", "_tokens", "_probs", "_texts")

    def __init__(self, start: np.ndarray, count: np.ndarray, tokens: np.ndarray,
                 probs: np.ndarray, texts: dict):
        self._start = start      # int64 [L]: the row's first entry, -1 for no row
        self._count = count      # int64 [L]: its entries (0 for no row)
        self._tokens = tokens    # int64 [entries]
        self._probs = probs      # float64 [entries]
        self._texts = texts      # {token id: text}, shared by the trace's nodes

    # ------------------------------------------------------------------ making
    @classmethod
    def from_columns(cls, n_slots: int, slots, counts, tokens, probs, texts: dict) -> "TopRows":
        """Rows from packed-3's columns: ``slots`` (each at most once, within
        ``n_slots``), ``counts`` (entries a slot), then the tokens and probabilities of
        every row in turn; ``texts``: {token id: text} holding every token. Raises
        ValueError naming what is malformed."""
        slots = np.asarray(slots, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        tokens = np.asarray(tokens, dtype=np.int64)
        probs = np.asarray(probs, dtype=np.float64)
        if len(slots) != len(counts) or int(counts.sum()) != len(tokens) or \
                len(tokens) != len(probs):
            raise ValueError("top: the slots, counts, tokens and probabilities disagree in "
                             "length")
        if len(slots) and (int(slots.min()) < 0 or int(slots.max()) >= n_slots):
            bad = int(slots[(slots < 0) | (slots >= n_slots)][0])
            raise ValueError(f"top names slot {bad}, not one of the answer's {n_slots} slots")
        if len(np.unique(slots)) != len(slots):
            raise ValueError("top names a slot twice")
        if len(tokens) and int(tokens.min()) < 0:
            raise ValueError(f"top holds token {int(tokens.min())} (a token id is at least 0)")
        missing = set(np.unique(tokens).tolist()) - texts.keys()
        if missing:
            raise KeyError(f"token_texts has no text for token {min(missing)}")
        for t in np.unique(tokens).tolist():
            if type(texts[t]) is not str:
                raise ValueError(f"token_texts' entry for token {t} is not a text")
        if len(slots) > 1 and bool((np.diff(slots) < 0).any()):   # rows stored slot by slot
            firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            order = np.argsort(slots, kind="stable")
            take = np.concatenate([np.arange(firsts[k], firsts[k] + counts[k])
                                   for k in order.tolist()]).astype(np.int64)
            slots, counts, tokens, probs = slots[order], counts[order], tokens[take], probs[take]
        start = np.full(n_slots, -1, dtype=np.int64)
        count = np.zeros(n_slots, dtype=np.int64)
        start[slots] = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
        count[slots] = counts
        return cls(start, count, tokens, probs, texts)

    @classmethod
    def from_rows(cls, rows: list, texts: dict) -> "TopRows | None":
        """A checked list of rows (None or [{"token": int, "text": str, "p": float}]) as
        columns, its texts added to ``texts`` (the trace's table, {token id: text}); None
        when the columns would not give the rows back exactly (an entry with other keys,
        a p that is not a float, a token whose text differs from the table's)."""
        n = len(rows)
        start = np.full(n, -1, dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        tokens: list = []
        probs: list = []
        for s, row in enumerate(rows):
            if row is None:
                continue
            if type(row) is not list:
                return None
            start[s] = len(tokens)
            count[s] = len(row)
            for e in row:
                if type(e) is not dict or len(e) != 3:
                    return None
                t, text, p = e.get("token"), e.get("text"), e.get("p")
                if type(t) is not int or type(p) is not float or type(text) is not str:
                    return None
                if texts.setdefault(t, text) != text:
                    return None
                tokens.append(t)
                probs.append(p)
        return cls(start, count, np.asarray(tokens, dtype=np.int64),
                   np.asarray(probs, dtype=np.float64), texts)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self._start)

    def __getitem__(self, s):
        if isinstance(s, slice):
            return [self[i] for i in range(*s.indices(len(self)))]
        first = int(self._start[s])          # IndexError past the end, as a list's
        if first < 0:
            return None
        end = first + int(self._count[s])
        texts = self._texts
        return [{"token": t, "text": texts[t], "p": p}
                for t, p in zip(self._tokens[first:end].tolist(),
                                self._probs[first:end].tolist())]

    def __iter__(self):
        for s in range(len(self)):
            yield self[s]

    def __bool__(self) -> bool:
        return len(self) > 0

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, TopRows):     # column by column (the rows they build agree)
            if not (np.array_equal(self._start, other._start)
                    and np.array_equal(self._count, other._count)):
                return False
            mine, theirs = self.columns(), other.columns()
            if not (np.array_equal(mine[2], theirs[2]) and np.array_equal(mine[3], theirs[3])):
                return False
            return all(self._texts[t] == other._texts[t] and
                       type(self._texts[t]) is type(other._texts[t])
                       for t in set(mine[2].tolist()))
        if not isinstance(other, list):
            return NotImplemented
        return list(self) == other

    __hash__ = None  # type: ignore[assignment]   (a list's equal: not hashable)

    def __repr__(self) -> str:
        return f"TopRows({len(self)} slots, {len(self._tokens)} entries)"

    def text_of(self, s: int, token: int) -> str | None:
        """The text of ``token`` in slot ``s``'s row, or None (no row, or not in it),
        without building the row."""
        first = int(self._start[s])
        if first < 0:
            return None
        row = self._tokens[first:first + int(self._count[s])]
        return self._texts[token] if bool((row == token).any()) else None

    def texts_of(self, ids) -> list:
        """For each slot s, the text of token ``ids[s]`` in slot s's row, or None (no row,
        or not in it): :meth:`text_of` for every slot at once (a node's completion)."""
        out: list = [None] * len(self)
        slots, counts, tokens, _ = self.columns()
        if len(tokens) and len(ids) == len(self):
            want = np.asarray(ids, dtype=np.int64)
            slot_of = np.repeat(slots, counts)
            idx = np.flatnonzero(tokens == want[slot_of])
            found, first = np.unique(slot_of[idx], return_index=True)
            texts = self._texts
            for s, t in zip(found.tolist(), tokens[idx[first]].tolist()):
                out[s] = texts[t]
        return out

    # ------------------------------------------------------------------ the columns
    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(slots with a row, their counts, tokens, probabilities): packed-3's columns.
        The arrays are this object's own: read them, never write."""
        slots = np.flatnonzero(self._start >= 0)
        return slots, self._count[slots], self._tokens, self._probs

    @property
    def starts(self) -> np.ndarray:
        """Each slot's first entry (-1: no row); read-only use."""
        return self._start

    @property
    def counts(self) -> np.ndarray:
        return self._count

    @property
    def texts(self) -> dict:
        """{token id: text} of the trace (shared): read-only use."""
        return self._texts

    def __reduce__(self):
        return (_rebuild, (len(self), self._start.tobytes(), self._count.tobytes(),
                           self._tokens.tobytes(), self._probs.tobytes(), self._texts))


def _rebuild(n_slots: int, start: bytes, count: bytes, tokens: bytes, probs: bytes,
             texts: dict) -> TopRows:
    """A pickled :class:`TopRows` back (the gate's child process sends them to the
    server, whose unpickler allows this function and nothing else of ours)."""
    if not (isinstance(n_slots, int) and all(isinstance(b, bytes) for b in (start, count, tokens, probs))
            and isinstance(texts, dict)):
        raise ValueError("malformed top rows")
    arrays = [np.frombuffer(b, dtype=d) for b, d in ((start, np.int64), (count, np.int64),
                                                      (tokens, np.int64), (probs, np.float64))]
    start, count, toks, probs = arrays
    if len(start) != n_slots or len(count) != n_slots or len(toks) != len(probs) or \
            bool(((start >= 0) & ((count < 0) | (start + count > len(toks)))).any()):
        raise ValueError("malformed top rows")
    return TopRows(*arrays, texts)


def json_default(value: Any):
    """``json.dumps(trace, default=json_default)``: a node's :class:`TopRows` as the list
    of rows it is."""
    if isinstance(value, TopRows):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
