"""The CPU a grading run uses is counted where the run is counted: a sandboxed worker's control
group is made below the grader's own, so that whatever counts the grader (the speed benchmark's
group, a service manager, a container) counts its workers too, although no process waits for a
worker forked from a zygote."""
import sys
import textwrap

from bench import cpu
from tests.helpers import ROOT

BURN = textwrap.dedent('''
    import resource, sys, tempfile
    from pathlib import Path
    from autograder.isolation.sandbox import Limits, Pool, WITHOUT_PYTORCH, Worker
    from autograder.isolation.warm import lab_imports

    pool = Pool.launch(lab_imports) if sys.argv[1] == "warm" else None
    worker = Worker(Path(tempfile.mkdtemp()), Limits(), True, pool, WITHOUT_PYTORCH)
    worker.ask({"op": "run", "source": "import time\\nend = time.process_time() + 1.5\\n"
                                       "while time.process_time() < end: pass"}, 30)
    used = worker.used()
    worker.close()
    if pool is not None:
        pool.close()  # waits for the zygote, whose CPU then counts among this process's children
    waited = sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                 for field in ("ru_utime", "ru_stime"))
    print(used, waited)
''')


def test_a_sandboxed_workers_cpu_is_counted_in_the_group_of_the_run_that_started_it():
    """Neither a cold worker (inside bubblewrap's PID namespace) nor a warm one (forked by the
    zygote, waited for by nobody) is in the account of the process that started it, which was
    all the speed benchmark could count before. The run's group must count the worker and
    everything else the process used."""
    for path in ("cold", "warm"):
        measured = cpu.run([sys.executable, "-c", BURN, path], ROOT)
        assert measured.counted == "control group", "the count needs root and cgroup v1's cpuacct"
        worker, waited = map(float, measured.stdout.split()[-2:])
        assert worker >= 1.5, measured.stdout
        assert measured.cpu >= waited + worker - 0.3, (
            f"{path} worker: the run's group counted {measured.cpu:.2f} s of CPU where the process and "
            f"those it waited for used {waited:.2f} s and its worker {worker:.2f} s: the worker's control "
            "group is not below the run's")
