"""A prompt's segments written out as text, for routers that match characters (sgl-router, vLLM's router).

The lab's requests are segments: a hashable key and a token count. A real
router never sees tokens; it matches the raw text of the prompt, character
by character. `Renderer` writes a prompt as text so that both agree:

- a segment of `n` tokens becomes `CHARS_PER_TOKEN * n` characters (4, the
  usual rule of thumb for English text);
- its first character is one no other key has (assigned in order of first
  appearance, from code points past ASCII, surrogates skipped), the rest
  is the filler `FILLER`, which no key's first character is.

So two prompts' texts share exactly the characters of the segments they
share, and a character match stops where the segment match stops: a
router matching this text decides what one matching the segments would.
Sharing below a segment (a template several system prompts start with)
is written into the keys by the source that makes it: the template is its
own segment, so the replicas' caches share it as a token cache would, and
the router's text shares its characters.

A renderer is per run (the assignment is its only state): the same requests
in the same order always give the same text. It takes a key to stand for
the same tokens wherever it appears, as every source of the lab makes them:
a key seen with two sizes would share its first characters, and a character
match would run on past the segment match.
"""

from collections.abc import Hashable, Sequence

__all__ = ["CHARS_PER_TOKEN", "FILLER", "Renderer"]

CHARS_PER_TOKEN = 4
FILLER = "."
_FIRST = 0x100  # first code point a key may start with: past ASCII, so never the filler
_SURROGATES = range(0xD800, 0xE000)  # not characters: JSON and Rust's str refuse them


class Renderer:
    """Writes prompts as text, each key starting with a character of its own."""

    __slots__ = ("_firsts", "_next")

    def __init__(self) -> None:
        self._firsts: dict[Hashable, str] = {}
        self._next = _FIRST

    def first_char(self, key: Hashable) -> str:
        """The character `key`'s text starts with (a new one the first time a key is seen)."""
        c = self._firsts.get(key)
        if c is None:
            point = self._next
            if point in _SURROGATES:
                point = _SURROGATES.stop
            if point > 0x10FFFF:
                raise OverflowError("more distinct segments than Unicode has characters")
            self._next = point + 1
            c = self._firsts[key] = chr(point)
        return c

    def segment(self, key: Hashable, tokens: int) -> str:
        """The text of one segment of `tokens` tokens ("" for none)."""
        chars = CHARS_PER_TOKEN * tokens
        return self.first_char(key) + FILLER * (chars - 1) if chars > 0 else ""

    def prompt(self, keys: Sequence[Hashable], sizes: Sequence[int]) -> str:
        """The whole prompt's text: its segments' texts in order."""
        return "".join([self.segment(k, n) for k, n in zip(keys, sizes)])
