#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""threads.py - a threaded Python workload for scripts/bench-e2e.

Usage: threads.py ITEMS [PRODUCERS] [CONSUMERS]

Producers put ITEMS work items (in all) into a bounded queue.Queue; consumers
take them, do a little work each (string building, a dict, hashing: the
interpreter allocates), add the result to shared totals under a
threading.Lock and pass a record on to a second queue that a collector thread
drains. So the threads contend on the GIL, on the lock and on the queues'
condition variables (pthread mutexes and condition variables underneath).
Deterministic: prints the same checksum on every run.
"""
import hashlib
import queue
import sys
import threading


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    items = int(sys.argv[1])
    producers = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    consumers = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = queue.Queue(maxsize=64)
    done = queue.Queue(maxsize=256)
    lock = threading.Lock()
    totals = {"n": 0, "bytes": 0, "xor": 0}

    def produce(k):
        for i in range(k, items, producers):
            work.put(i)
        # Nothing after the last item: the main thread sends the stops.

    def consume():
        while True:
            i = work.get()
            if i is None:
                done.put(None)
                return
            words = {("w%d" % (i * j % 97)): j for j in range(24)}
            text = "|".join("%s=%d" % kv for kv in sorted(words.items()))
            h = hashlib.blake2b(text.encode(), digest_size=8).digest()
            v = int.from_bytes(h, "little")
            with lock:
                totals["n"] += 1
                totals["bytes"] += len(text)
                totals["xor"] ^= v
            done.put((i, v & 0xFFFF))

    collected = [0, 0]

    def collect():
        stops = 0
        while stops < consumers:
            r = done.get()
            if r is None:
                stops += 1
                continue
            collected[0] += 1
            collected[1] = (collected[1] * 31 + r[1]) % 1000000007 if r[0] % 2 else collected[1] + r[1]

    ps = [threading.Thread(target=produce, args=(k,), name="producer%d" % k) for k in range(producers)]
    cs = [threading.Thread(target=consume, name="consumer%d" % k) for k in range(consumers)]
    col = threading.Thread(target=collect, name="collector")
    for t in ps + cs + [col]:
        t.start()
    for t in ps:
        t.join()
    for _ in cs:
        work.put(None)
    for t in cs + [col]:
        t.join()
    if collected[0] != items or totals["n"] != items:
        sys.exit("lost items: %d collected, %d counted, %d expected" % (collected[0], totals["n"], items))
    print("threads: %d items, %d bytes, xor %016x" % (items, totals["bytes"], totals["xor"]))


if __name__ == "__main__":
    main()
