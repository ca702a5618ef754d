"""redis-py's client-side cache against slotraft (difftest's TestTrackingRedisPy).

Usage: csc.py host:port. Needs redis-py 5.1 or later (cache_config). Exits
non-zero, saying why, when the cache misbehaves: a second read not served
from the cache, or a change not seen soon after it was made.
"""
import sys
import time

import redis
from redis.cache import CacheConfig

host, port = sys.argv[1].rsplit(":", 1)
cached = redis.Redis(host=host, port=int(port), protocol=3, cache_config=CacheConfig(), decode_responses=True)
other = redis.Redis(host=host, port=int(port), decode_responses=True)


def get_calls():
    stats = other.info("commandstats").get("cmdstat_get", {})
    return int(stats.get("calls", 0))


def eventually(what, cond):
    deadline = time.time() + 10
    while not cond():
        if time.time() > deadline:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.02)


other.set("py:k", "v1")
if cached.get("py:k") != "v1":
    sys.exit("first read")
before = get_calls()
if cached.get("py:k") != "v1":
    sys.exit("second read")
if get_calls() != before:
    sys.exit("the second read reached the server: not cached")

other.set("py:k", "v2")
eventually("the write's invalidation", lambda: cached.get("py:k") == "v2")

other.set("py:e", "short", px=300)
eventually("the short-lived key", lambda: cached.get("py:e") == "short")
eventually("active expiry's invalidation", lambda: cached.get("py:e") is None)

cached.get("py:k")
other.flushall()
eventually("FLUSHALL's invalidation", lambda: cached.get("py:k") is None)
print("ok")
