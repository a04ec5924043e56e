"""The skills' randomness (s4, s5, s8): one generator per question, seeded from sha256(seed,
question id, skill), so a result depends neither on the order of the questions nor on the others.
Shuffles are a Fisher–Yates over ``random.Random.getrandbits``, stable across Python versions."""
from __future__ import annotations

import hashlib
import random


def question_rng(seed: int, question_id: str, skill: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{question_id}\x1f{skill}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def below(rng: random.Random, n: int) -> int:
    """Uniform integer in [0, n) by rejection on getrandbits (stable across Python versions)."""
    if n <= 1:
        return 0
    bits = (n - 1).bit_length()
    while True:
        value = rng.getrandbits(bits)
        if value < n:
            return value


def shuffle(rng: random.Random, items: list) -> None:
    for i in range(len(items) - 1, 0, -1):
        j = below(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def randint(rng: random.Random, low: int, high: int) -> int:
    return low + below(rng, high - low + 1)
