"""Suite-wide collection order: the kernel matrix (tests/kernels/test_kernels.py)
last. Its QEMU guests take a CPU each for a few minutes; run beside the
host's tests they slowed those (test_alloc's net-latency check failed), and
starved, they lost samples themselves. With pytest-xdist's --dist loadfile
the last file is the last one handed to a worker."""


def pytest_collection_modifyitems(session, config, items):
    last = [i for i in items if i.nodeid.startswith("tests/kernels/test_kernels.py")]
    if last:
        items[:] = [i for i in items if i not in last] + last
