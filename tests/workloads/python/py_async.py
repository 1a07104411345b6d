"""py_async.py - coroutines and generators whose calls, counts and
latencies are known from this source, for --trace py: and --split py:
across suspensions (tests/e2e/test_py_async.py).

Once GOFILE exists (the test creates it when liveprof's probes are in),
it runs three parts and prints "done":

1. An asyncio event loop with TASKS tasks at once, each awaiting
   handle(i) for its share of ROUNDS values of i, one after the other.
   handle(i) spins WORK_US, sleeps SLEEP_US (asyncio.sleep: the task is
   suspended and the other runs), spins WORK_US again, and when
   i % SLOW_EVERY == SLOW_EVERY - 1 also calls slow_extra() (a plain
   function, SLOW_US of spinning); then it awaits inner(i), a coroutine
   that yields once to the loop (asyncio.sleep(0)) and spins INNER_US.
   So handle and inner run ROUNDS times each, slow_extra
   ROUNDS // SLOW_EVERY times; a handle call lasts at least
   2 * WORK_US + SLEEP_US + INNER_US of wall time. While a slow_extra
   spins, the loop runs nothing else: the other task's call in flight
   waits for it too, so at most 2 * ROUNDS // SLOW_EVERY calls (2%) are
   longer than SLOW_US, all of them far above p95 of the rest.
   Then DOOMED tasks of doomed(), which awaits a sleep of an hour, are
   cancelled after CANCEL_AFTER_US: each ends by the CancelledError that
   the loop throws into it, DOOMED calls of at least CANCEL_AFTER_US.

2. Generators: GENS times, a for loop over produce(ITEMS), which spins
   PRODUCE_US before each of its ITEMS yields; the loop spins CONSUME_US
   per item while produce is suspended. A produce call lasts from its
   first resumption to its return, at least
   ITEMS * (PRODUCE_US + CONSUME_US).

3. Abandoned generators: ABANDONED times, produce(ITEMS) is advanced once
   and dropped: Python closes it (GeneratorExit thrown in), which ends
   that call, of at least PRODUCE_US. produce runs GENS + ABANDONED
   times in all.

Every spin is on the wall clock (time.perf_counter_ns).

Usage: python3.11 py_async.py GOFILE
"""
import asyncio
import os
import sys
import time

TASKS = 2
ROUNDS = 1000
WORK_US = 200
SLEEP_US = 1000
INNER_US = 100
SLOW_US = 20000
SLOW_EVERY = 100
DOOMED = 10
CANCEL_AFTER_US = 50000
GENS = 200
ITEMS = 4
PRODUCE_US = 300
CONSUME_US = 500
ABANDONED = 100


def spin(us):
    end = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < end:
        pass


def slow_extra():
    spin(SLOW_US)


async def inner(i):
    await asyncio.sleep(0)
    spin(INNER_US)
    return i


async def handle(i):
    spin(WORK_US)
    await asyncio.sleep(SLEEP_US / 1e6)
    spin(WORK_US)
    if i % SLOW_EVERY == SLOW_EVERY - 1:
        slow_extra()
    return await inner(i)


async def worker(first):
    for i in range(first, ROUNDS, TASKS):
        await handle(i)


async def doomed():
    await asyncio.sleep(3600)


async def event_loop_part():
    await asyncio.gather(*(worker(k) for k in range(TASKS)))
    tasks = [asyncio.create_task(doomed()) for _ in range(DOOMED)]
    await asyncio.sleep(CANCEL_AFTER_US / 1e6)
    for t in tasks:
        t.cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    return sum(isinstance(d, asyncio.CancelledError) for d in done)


def produce(n):
    for i in range(n):
        spin(PRODUCE_US)
        yield i


def generator_part():
    items = 0
    for _ in range(GENS):
        for _ in produce(ITEMS):
            spin(CONSUME_US)
            items += 1
    for _ in range(ABANDONED):
        g = produce(ITEMS)
        next(g)
        del g  # the last reference: closed now, by GeneratorExit
    return items


def main():
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.01)
    cancelled = asyncio.run(event_loop_part())
    items = generator_part()
    print(f"done {ROUNDS} handled, {cancelled} cancelled, {items} items", flush=True)
    time.sleep(3600)


main()
