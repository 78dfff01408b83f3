"""How the benches that run two ways alternately print what they measured."""
import statistics


def report(walls, cpus, after, before, indent=""):
    """Print each way's median wall and CPU seconds, {way: [seconds of each round]}, and the
    ratios `after` / `before`."""
    wall = {way: statistics.median(seconds) for way, seconds in walls.items()}
    cpu = {way: statistics.median(seconds) for way, seconds in cpus.items()}
    for way in walls:
        print(f"{indent}{str(way) + ':':<8} {wall[way]:.1f} s wall, {cpu[way]:.1f} s CPU (every process)")
    print(f"{indent}ratios {after} / {before}: wall {wall[after] / wall[before]:.2f}, "
          f"CPU {cpu[after] / cpu[before]:.2f}")
