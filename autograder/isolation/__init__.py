"""What a submission's code meets, and nothing else of the grader: the sandbox that starts a
worker (sandbox.py, with the kernel's own limits in seccomp.py and cgroups.py, the rooms of
workers that may not run side by side, rooms.py, and the one processor a link's two workers
share, affinity.py), the worker that runs in it (worker.py, the one file of the grader a sandbox
mounts), the zygote that forks warm workers (zygote.py, warm.py), the private copy of the files
a worker without PyTorch reads (private_root.py, shared_copy.py), what such a worker finds in
PyTorch's place (unavailable/), and the grader's exception (errors.py).

It imports only the lab model (``course``) below it. worker.py and zygote.py import nothing of
the grader at all (tests/test_layers.py).
"""
