"""Copies of an ELF file with bytes of one section corrupted (issue 11).

Only sections that are not loaded (.symtab, .debug_line) are touched, so
the corrupted program itself runs exactly as the original; what changes is
what a profiler reads from it. Reads the ELF64 little-endian section headers
itself (no pyelftools on the test machines).
"""

import random
import struct
from pathlib import Path

SHT_SYMTAB = 2
STT_FUNC = 2


def sections(data):
    """{name: (file offset, size, type, entsize)} from the section headers."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    hdrs = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, _link, _info, _align, ent = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        hdrs.append((name, typ, off, size, ent))
    strtab_off = hdrs[shstrndx][2]
    out = {}
    for name, typ, off, size, ent in hdrs:
        end = data.index(b"\0", strtab_off + name)
        out[data[strtab_off + name:end].decode()] = (off, size, typ, ent)
    return out


def flip_bytes(src, dst, section, n, seed):
    """Copy @src to @dst with @n random bytes of @section XORed with a random
    non-zero value. Returns the file offsets changed."""
    data = bytearray(Path(src).read_bytes())
    off, size, _typ, _ent = sections(data)[section]
    rng = random.Random(seed)
    where = sorted(rng.sample(range(off, off + size), min(n, size)))
    for pos in where:
        data[pos] ^= rng.randrange(1, 256)
    _write(dst, data)
    return where


def shift_func_symbols(src, dst, names, seed, max_delta=7):
    """Copy @src to @dst with the st_value of the .symtab functions in
    @names moved by 1..@max_delta bytes either way (a start that lands in
    the middle of an instruction, or on another one). Returns
    {name: (old value, new value)}."""
    data = bytearray(Path(src).read_bytes())
    secs = sections(data)
    off, size, _typ, ent = secs[".symtab"]
    stroff = secs[".strtab"][0]
    rng = random.Random(seed)
    changed = {}
    for i in range(size // ent):
        base = off + i * ent
        name_off, info = struct.unpack_from("<IB", data, base)
        value, = struct.unpack_from("<Q", data, base + 8)
        end = data.index(b"\0", stroff + name_off)
        name = data[stroff + name_off:end].decode(errors="replace")
        if info & 0xf != STT_FUNC or not value or name not in names:
            continue
        new = value + rng.choice([-1, 1]) * rng.randint(1, max_delta)
        struct.pack_into("<Q", data, base + 8, new)
        changed[name] = (value, new)
    _write(dst, data)
    return changed


def _write(dst, data):
    p = Path(dst)
    p.write_bytes(bytes(data))
    p.chmod(0o755)
