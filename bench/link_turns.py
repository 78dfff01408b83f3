"""What one turn of a link costs with its two processes on two processors and on one: a child
process echoes a small message back through a pair of pipes, as a Link's two workers take turns
(autograder/isolation/worker.py), both placements alternately in one command.

    python -m bench.link_turns [--turns 20000] [--rounds 3]

Prints, per placement, the least wall time and CPU time of a side per round trip, and the
ratios one processor / two. The placement of autograder/isolation/affinity.py rests on it.
"""
import argparse
import os
import time


def turns(count, cpu):
    """(wall, CPU of this side, CPU of the other side) per round trip, in microseconds; both
    processes on `cpu`, or wherever the kernel puts them when it is None."""
    there, back = os.pipe(), os.pipe()
    report = os.pipe()
    pid = os.fork()
    if pid == 0:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        started = time.process_time()
        for _ in range(count):
            os.write(back[1], os.read(there[0], 128))
        os.write(report[1], repr(time.process_time() - started).encode())
        os._exit(0)
    allowed = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    message = b"x" * 64
    try:
        wall, started = time.perf_counter(), time.process_time()
        for _ in range(count):
            os.write(there[1], message)
            os.read(back[0], 128)
        wall, mine = time.perf_counter() - wall, time.process_time() - started
    finally:
        os.sched_setaffinity(0, allowed)
    theirs = float(os.read(report[0], 64))
    os.waitpid(pid, 0)
    for fd in (*there, *back, *report):
        os.close(fd)
    return tuple(seconds / count * 1e6 for seconds in (wall, mine, theirs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise SystemExit("one processor only: there is nothing to compare")
    found = {"two processors": [], "one processor": []}
    for _ in range(args.rounds):
        found["two processors"].append(turns(args.turns, None))
        found["one processor"].append(turns(args.turns, allowed[-1]))
    best = {name: tuple(min(run[i] for run in runs) for i in range(3)) for name, runs in found.items()}
    for name, (wall, mine, theirs) in best.items():
        print(f"{name}: {wall:6.1f} us wall a round trip, CPU {mine:5.1f} us here and {theirs:5.1f} us there "
              f"(least of {args.rounds} rounds of {args.turns})")
    two, one = best["two processors"], best["one processor"]
    print(f"one / two: wall {one[0] / two[0]:.2f}, CPU {(one[1] + one[2]) / (two[1] + two[2]):.2f}")


if __name__ == "__main__":
    main()
