"""Writing a job's script: the topic cut near 900 characters, then seeded sentences at 2.5 words a second.

A topic over 900 characters is cut at the sentence end nearest 900 characters within 600 to 1,200,
else at the last space before 900. Without a topic the job picks an angle, shown as its ``topic``. The
script's words come from ``words.toml``; sentences repeat only after all were used.
"""

import random
import re

from mediagen_nb.protocol import limits
from mediagen_nb.sandbox import datafiles

WORDS_PER_SECOND = 2.5
_WORDS = datafiles.load(__package__ or __name__, "words.toml")
ANGLES = datafiles.words(_WORDS, "angles")
OPENERS = datafiles.words(_WORDS, "openers")
SENTENCES = datafiles.words(_WORDS, "sentences")
CLOSERS = datafiles.words(_WORDS, "closers")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def cut_topic(topic: str) -> str:
    """A topic cut at the sentence end nearest ``TOPIC_CUT_CHARS`` (see the module rules)."""
    limit = limits.TOPIC_CUT_CHARS
    if len(topic) <= limit:
        return topic
    ends = [m.end() for m in _SENTENCE_END.finditer(topic) if limit * 2 // 3 <= m.end() <= limit * 4 // 3]
    if ends:
        return topic[: min(ends, key=lambda end: (abs(end - limit), end))]
    head = topic[:limit]
    return head.rsplit(" ", 1)[0] if " " in head else head


def write_script(rng: random.Random, topic: str, seconds: float) -> str:
    """A script of about ``seconds`` of speech on ``topic``."""
    subject = topic.split(".")[0].strip().rstrip("!?")
    if len(subject) > 80:
        subject = subject[:80].rsplit(" ", 1)[0]
    if subject[:2].istitle():
        subject = subject[0].lower() + subject[1:]
    lines = [rng.choice(OPENERS).format(topic=subject)]
    closer = rng.choice(CLOSERS)
    target = seconds * WORDS_PER_SECOND - len(closer.split())
    pool: list[str] = []
    while sum(len(line.split()) for line in lines) < target:
        if not pool:
            pool = rng.sample(SENTENCES, len(SENTENCES))
        lines.append(pool.pop())
    return " ".join([*lines, closer])


def speech_seconds(rng: random.Random, script: str) -> float:
    """How long the voice takes to say ``script``: 92 % to 110 % of its length at 2.5 words a second."""
    return round(len(script.split()) / WORDS_PER_SECOND * rng.uniform(0.92, 1.10), 1)
