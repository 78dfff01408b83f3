"""What a read of a small message from a pipe costs a fresh process, by the size it asks for:
the 1 MiB every worker asked for before, and worker.READ_BYTES (a pipe's capacity). Each size is
measured in a fresh Python process of its own, both alternately in one command, since what
glibc does with a large buffer depends on what the process freed before.

    python -m bench.pipe_reads [--reads 20000] [--rounds 3]

Prints, per size, the least CPU time and the page faults per read, and the ratio of the two.
"""
import argparse
import json
import subprocess
import sys

from autograder.isolation.worker import READ_BYTES

BEFORE = 1 << 20

READER = """
import json, os, resource, sys, time
size, count = int(sys.argv[1]), int(sys.argv[2])
r, w = os.pipe()
message = b"x" * 100
faults, started = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
for _ in range(count):
    os.write(w, message)
    os.read(r, size)
print(json.dumps({"cpu": (time.process_time() - started) / count,
                  "faults": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / count}))
"""


def measured(size, reads):
    run = subprocess.run([sys.executable, "-c", READER, str(size), str(reads)], capture_output=True, text=True,
                         check=True)
    return json.loads(run.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    found = {BEFORE: [], READ_BYTES: []}
    for _ in range(args.rounds):
        for size in found:
            found[size].append(measured(size, args.reads))
    best = {size: (min(r["cpu"] for r in runs), min(r["faults"] for r in runs)) for size, runs in found.items()}
    for size, (cpu, faults) in best.items():
        print(f"reads of {size >> 10:5d} KiB: {cpu * 1e6:5.1f} us of CPU and {faults:.2f} page faults a read "
              f"(least of {args.rounds} fresh processes, {args.reads} reads each)")
    print(f"{READ_BYTES >> 10} KiB / {BEFORE >> 10} KiB: CPU {best[READ_BYTES][0] / best[BEFORE][0]:.2f}")


if __name__ == "__main__":
    main()
