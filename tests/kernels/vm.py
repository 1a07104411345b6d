#!/usr/bin/python3
"""Boot Debian's own kernel packages in QEMU and run a command in them.

The kernel matrix of liveprof's tests (tests/kernels/test_kernels.py) and a
tool for a person chasing a verifier message by hand:

    tests/kernels/vm.py 6.1 -- ./liveprof --check
    tests/kernels/vm.py 6.12 -- sh

How a guest is made (as libbpf's and bpftrace's vmtest do it, smaller):
  * the kernel is Debian's package (linux-image-6.1.0-N-amd64-unsigned, the
    newest bookworm has; linux-image-6.12.N+deb12-amd64-unsigned), fetched
    with `apt-get download` into a cache outside the checkout and unpacked
    there; nothing is installed into /boot;
  * its initramfs is busybox-static and the package's own modules for
    virtio, 9p, netfs and overlayfs, loaded in dependency order;
  * this machine's root file system is shared read-only over virtio-9p and
    a tmpfs overlay takes the guest's writes; the command runs chrooted in
    it, in the directory it was started from, so the guest runs this
    checkout's build with this machine's tools;
  * a second 9p share (read-write) brings the command's exit status back.

TCG only: /dev/kvm exists on these machines, but guests fault in the
kernel's decompressor there (CPU features are not passed through).
"""

import argparse
import glob
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("LIVEPROF_KERNEL_CACHE", "/var/cache/liveprof-kernels"))

# The matrix: series -> the package name pattern (newest version wins).
SERIES = {
    "6.1": r"^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$",
    "6.12": r"^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$",
}

# Modules the guest needs to mount its root; their dependencies are added
# from each module's own .modinfo.
ROOT_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay"]
MODULE_DIRS = ["drivers/virtio", "net/9p", "fs/9p", "fs/netfs", "fs/overlayfs",
               "fs/fscache", "drivers/char/hw_random"]

INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /host /job /ovl /newroot
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs dev /dev
for m in $(/bin/busybox cat /modules.order); do /bin/busybox insmod /mod/$m.ko 2>/dev/null; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 host /host || { echo "lpvm: no 9p root"; /bin/busybox poweroff -f; }
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 job /job
/bin/busybox mount -t tmpfs -o size=6g tmpfs /ovl
/bin/busybox mkdir -p /ovl/upper /ovl/work
/bin/busybox mount -t overlay overlay -o lowerdir=/host,upperdir=/ovl/upper,workdir=/ovl/work /newroot
for d in proc sys dev; do /bin/busybox mount --move /$d /newroot/$d; done
/bin/busybox mkdir -p /newroot/job && /bin/busybox mount --move /job /newroot/job
exec /bin/busybox chroot /newroot /bin/sh /job/guest.sh
"""

GUEST = r"""#!/bin/sh
# Runs chrooted in the guest's overlay of the host's root.
mount -t tmpfs tmpfs /run
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ip link set lo up 2>/dev/null
hostname lpvm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
export LIVEPROF_IN_VM=1 LPVM_JOB=/job
# TCG runs user code about ten times slower: runs that collect samples
# get three times as long (tests/e2e/lputil.py scaled())
export LIVEPROF_TIME_SCALE=3
__ENV__
echo "lpvm: $(uname -r) up"
cd __CWD__ && __CMD__
echo $? > /job/rc
sync
poweroff -f
"""


def newest_package(series):
    """Name of the newest package of SERIES that apt knows, or None."""
    def search():
        return subprocess.run(["apt-cache", "search", "--names-only", SERIES[series]],
                              capture_output=True, text=True).stdout
    out = search()
    if not out.strip() and os.geteuid() == 0:
        # a fresh machine's package lists may be empty
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        out = search()
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    if not names:
        return None
    key = lambda n: [int(x) for x in re.findall(r"\d+", n)]
    return max(names, key=key)


def kernel_dir(series):
    """Unpack (once) the newest kernel package of SERIES; return its folder.

    Downloads it with apt-get when the cache has none of that series.
    Raises RuntimeError with the reason when that fails."""
    have = sorted(CACHE.glob(f"k-{series}-*/ready"))
    pkg = newest_package(series)
    if pkg:
        want = CACHE / f"k-{series}-{pkg}"
        if (want / "ready").exists():
            return want
    elif have:
        return have[-1].parent
    if not pkg:
        raise RuntimeError(f"no Debian kernel package of {series} (apt-get update?)")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    try:
        r = subprocess.run(["apt-get", "download", pkg], cwd=tmp, capture_output=True, text=True)
        debs = list(tmp.glob("*.deb"))
        if r.returncode or not debs:
            raise RuntimeError(f"apt-get download {pkg}: {r.stderr.strip()[-300:]}")
        x = tmp / "x"
        x.mkdir()
        # only the kernel and the modules the initramfs takes
        pats = ["./boot/vmlinuz-*"] + [f"./lib/modules/*/kernel/{d}/*" for d in MODULE_DIRS]
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(debs[0])],
                               stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(x), "--wildcards"] + pats,
                       stdin=tar.stdout, capture_output=True)
        tar.wait()
        if not list(x.glob("boot/vmlinuz-*")):
            raise RuntimeError(f"{debs[0].name} holds no vmlinuz")
        for d in debs:
            d.unlink()
        (x / "ready").write_text(pkg + "\n")
        want = CACHE / f"k-{series}-{pkg}"
        shutil.rmtree(want, ignore_errors=True)
        x.rename(want)
        return want
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _module_files(kdir):
    files = {}
    for f in kdir.glob("lib/modules/*/kernel/**/*.ko*"):
        files[re.sub(r"\.ko(\.xz)?$", "", f.name).replace("-", "_")] = f
    return files


def _module_bytes(path):
    data = path.read_bytes()
    return lzma.decompress(data) if path.name.endswith(".xz") else data


def _load_order(files):
    """ROOT_MODULES and what they depend on, dependencies first."""
    order, seen = [], set()

    def visit(name):
        if name in seen or name not in files:
            return
        seen.add(name)
        m = re.search(rb"depends=([^\0]*)\0", _module_bytes(files[name]))
        for dep in (m.group(1).decode().split(",") if m and m.group(1) else []):
            visit(dep.replace("-", "_"))
        order.append(name)

    for name in ROOT_MODULES:
        visit(name)
    return order


def initramfs(kdir):
    """The guest's initramfs for the kernel in KDIR (made once, cached)."""
    out = kdir / "initramfs.cpio.gz"
    if out.exists():
        return out
    busybox = shutil.which("busybox")
    if not busybox:
        raise RuntimeError("busybox-static is not installed (make deps)")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "bin").mkdir()
        (d / "mod").mkdir()
        shutil.copy(busybox, d / "bin" / "busybox")
        files = _module_files(kdir)
        order = _load_order(files)
        for name in order:
            (d / "mod" / f"{name}.ko").write_bytes(_module_bytes(files[name]))
        (d / "modules.order").write_text("\n".join(order) + "\n")
        (d / "init").write_text(INIT)
        (d / "init").chmod(0o755)
        listing = subprocess.run(f"find . | {busybox} cpio -o -H newc | gzip -1", shell=True,
                                 cwd=d, capture_output=True, check=True).stdout
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(listing)
        tmp.rename(out)
    return out


def run(series, command, cwd=None, env=None, timeout=900, memory="4G", cpus=1, log=None,
        files=None):
    """Boot SERIES, run COMMAND (a shell string) in CWD; return (rc, output).

    rc is None when the guest did not report one (it crashed or timed
    out); output is everything the guest's console printed. The command
    finds $LPVM_JOB, a folder shared with this machine: what it writes
    there comes back in FILES (a dict, name -> bytes) if one is given."""
    kdir = kernel_dir(series)
    vmlinuz = next(kdir.glob("boot/vmlinuz-*"))
    initrd = initramfs(kdir)
    cwd = os.path.abspath(cwd or os.getcwd())
    exports = "\n".join(f"export {k}={shlex_quote(v)}" for k, v in (env or {}).items())
    with tempfile.TemporaryDirectory(prefix="lpvm-") as job:
        script = (GUEST.replace("__ENV__", exports).replace("__CWD__", shlex_quote(cwd))
                  .replace("__CMD__", command))
        Path(job, "guest.sh").write_text(script)
        # thread=single: one host thread runs every vCPU in turn. With a
        # thread per vCPU (MTTCG), a guest that patches its own code
        # (text_poke_bp: enabling a tracepoint, here local_timer_entry)
        # while another vCPU runs it took an int3 oops in 1 of 3 runs.
        qemu = ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg,thread=single",
                "-cpu", "max",
                "-smp", str(cpus), "-m", memory, "-nographic", "-no-reboot",
                "-kernel", str(vmlinuz), "-initrd", str(initrd),
                "-append", "console=ttyS0 quiet panic=-1 nokaslr mitigations=off",
                "-fsdev", "local,id=host,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=host,mount_tag=host",
                "-fsdev", f"local,id=job,path={job},security_model=none",
                "-device", "virtio-9p-pci,fsdev=job,mount_tag=job",
                "-nic", "none"]
        try:
            p = subprocess.run(qemu, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout)
            output = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode(errors="replace") + "\nlpvm: timed out\n"
        if log:
            Path(log).write_text(output)
        rc_file = Path(job, "rc")
        rc = int(rc_file.read_text()) if rc_file.exists() else None
        if files is not None:
            for f in Path(job).iterdir():
                if f.is_file() and f.name not in ("guest.sh", "rc"):
                    files[f.name] = f.read_bytes()
        return rc, output


def shlex_quote(s):
    import shlex
    return shlex.quote(str(s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("series", choices=sorted(SERIES) + ["fetch"],
                    help="a kernel of the matrix, or 'fetch' to download and unpack them all")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--cpus", type=int, default=1)
    a = ap.parse_args()
    if a.series == "fetch":
        for series in sorted(SERIES):
            print(f"kernel {series}: {initramfs(kernel_dir(series)).parent.name}")
        return
    cmd = " ".join(a.command[1:] if a.command[:1] == ["--"] else a.command) or "sh"
    rc, out = run(a.series, cmd, timeout=a.timeout, cpus=a.cpus)
    sys.stdout.write(out)
    sys.exit(125 if rc is None else rc)


if __name__ == "__main__":
    main()
