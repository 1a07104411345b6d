"""py_churn.py - code objects made and freed all the time.

Round N compiles a new function gen_N from source whose file name is
genM.py (M = N % 100) and whose def stands on line N % 5 + 1, calls it
for about a millisecond and drops it. Its code object is freed then, and
the next round's is often allocated at the same address: a profiler that
names a code object by its address some time after the sample can give a
frame another round's name, file or line. Every gen frame's name, file
and line must agree (N, N % 100, N % 5 + 1).

Usage: python3 py_churn.py [SECONDS]
"""
import sys
import time


def churn(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        name = f"gen_{n}"
        src = "\n" * (n % 5) + (f"def {name}(k):\n    s = 0\n    for i in range(k):\n"
                                f"        s += i * {n % 7 + 1}\n    return s\n")
        space = {}
        exec(compile(src, f"gen{n % 100}.py", "exec"), space)
        space[name](3000)
        del space
        n += 1


churn(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
