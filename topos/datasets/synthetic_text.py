"""The synthetic text: a deterministic, learnable stand-in for a character corpus.

A lexicon of pronounceable words (consonants and vowels alternating, lengths 1 to 9)
and, for every word, a short list of the words that may follow it, most likely first:
a first-order Markov chain over words. Sentences of 4 to 15 words start with a
capital and end in `.`, `?` or `!`, an occasional comma between words; paragraphs of
2 to 6 sentences end in a newline. So a character model can learn the spelling of
the words (most of the text), which words follow which, and the punctuation, but not
the chain's draws: the loss has a floor well above zero, as with real text.

Every draw comes from splitmix64 and every choice is integer arithmetic, so the bytes
are the same on every machine and with every NumPy version; the fingerprint is pinned
in the tests.
"""

from __future__ import annotations

import numpy as np

from topos.splitmix64 import SplitMix64

CONSONANTS = "bcdfghklmnprstvwz"
VOWELS = "aeiou"

#: Words in the lexicon, and how many successors each word has (weights 2^-rank).
LEXICON_SIZE = 512
SUCCESSORS = 6
#: The text's length in characters (ASCII, so bytes): about 1 MB.
LENGTH = 1_000_000


class _Draws:
    """Integers from a splitmix64 stream, drawn in blocks so the loop stays cheap."""

    def __init__(self, seed: int, block: int = 1 << 16) -> None:
        self._generator = SplitMix64(seed)
        self._block = block
        self._pending: list[int] = []
        self._position = 0

    def below(self, bound: int) -> int:
        """The next draw modulo `bound`."""
        if self._position == len(self._pending):
            self._pending = self._generator.draws(self._block).tolist()
            self._position = 0
        value = self._pending[self._position]
        self._position += 1
        return value % bound


def _word(draws: _Draws) -> str:
    """A pronounceable word of 1 to 9 letters, consonant and vowel alternating."""
    length = 1 + draws.below(4) + draws.below(6)
    vowel = draws.below(3) == 0
    letters = []
    for _ in range(length):
        alphabet = VOWELS if vowel else CONSONANTS
        letters.append(alphabet[draws.below(len(alphabet))])
        vowel = not vowel
    return "".join(letters)


def _successor(draws: _Draws) -> int:
    """A successor rank: 0 with probability 1/2, 1 with 1/4, ... (the last takes the rest)."""
    rank = 0
    while rank < SUCCESSORS - 1 and draws.below(2):
        rank += 1
    return rank


def synthetic_text(seed: int, length: int = LENGTH) -> str:
    """`length` characters of the synthetic text drawn from stream `seed` (see the module)."""
    draws = _Draws(seed)
    lexicon = []
    seen = set()
    while len(lexicon) < LEXICON_SIZE:
        word = _word(draws)
        if word not in seen:
            seen.add(word)
            lexicon.append(word)
    followers = [[draws.below(LEXICON_SIZE) for _ in range(SUCCESSORS)] for _ in lexicon]
    pieces: list[str] = []
    size = 0
    word = draws.below(LEXICON_SIZE)
    while size < length:
        sentences = 2 + draws.below(5)
        for number in range(sentences):
            words = 4 + draws.below(12)
            for position in range(words):
                text = lexicon[word]
                if position == 0:
                    text = text[0].upper() + text[1:]
                if position == words - 1:
                    text += ".?!."[draws.below(4)]
                elif draws.below(10) == 0:
                    text += ","
                separator = "\n" if position == words - 1 and number == sentences - 1 else " "
                pieces.append(text + separator)
                size += len(text) + 1
                word = followers[word][_successor(draws)]
    return "".join(pieces)[:length]


def synthetic_bytes(seed: int, length: int = LENGTH) -> np.ndarray:
    """The synthetic text as uint8 ASCII bytes `[length]` (what the cache stores)."""
    return np.frombuffer(synthetic_text(seed, length).encode("ascii"), dtype=np.uint8).copy()
