#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gen_text.py - deterministic, compressible English-like text for scripts/bench-e2e.

Usage: gen_text.py MEGABYTES [SEED] > FILE   (MEGABYTES * 2^20 bytes exactly)

Lines of 4 to 16 words drawn from a fixed vocabulary of 4096 synthetic words
with Zipf-like frequencies (so the text compresses about like prose: gzip ~3x),
each line starting with a 6-digit number (so `sort` has keys to compare). The
same arguments give the same bytes on every machine: Python's Mersenne Twister
(random.Random(seed)) and random.choices are stable across Python 3 versions.
"""
import random
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[2])
    size = int(float(sys.argv[1]) * (1 << 20))
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) == 3 else 8)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    lweights = [26 - i for i in range(26)]
    vocab = []
    seen = set()
    while len(vocab) < 4096:
        w = "".join(rng.choices(letters, lweights, k=rng.randint(2, 10)))
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    cum = []
    total = 0.0
    for w in weights:
        total += w
        cum.append(total)
    out = sys.stdout.buffer
    written = 0
    while written < size:
        words = rng.choices(vocab, cum_weights=cum, k=4096)
        lines = []
        i = 0
        while i < len(words):
            n = rng.randint(4, 16)
            lines.append("%06d %s\n" % (rng.randrange(1000000), " ".join(words[i:i + n])))
            i += n
        chunk = "".join(lines).encode()
        if written + len(chunk) > size:
            chunk = chunk[: size - written]
        out.write(chunk)
        written += len(chunk)


if __name__ == "__main__":
    main()
