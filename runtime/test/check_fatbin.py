#!/usr/bin/env python3
"""check_fatbin.py FATBIN SRC_DIR: libpfrt's embedded CUDA kernels.

Checks, without a GPU or cuobjdump, that the fatbin nvcc built from
src/cuda/kernels/Kernels.cu holds an sm_90 ELF (SASS) and compute_90 PTX,
that the ELF defines every kernel Kernels.cu declares, and that every name
the device twins look up (src/cuda/Module.h's PFRT_CUDA_KERNELS table) is
one of them, so a misspelt name fails here rather than at the first launch
on a GPU.

The container format is read from its headers as nvcc 12/13 write it: a
16-byte header (magic 0xBA55ED50, version, header size, payload size), then
entries, each with a header (kind: 1 PTX, 2 ELF; header size; payload
size; architecture at byte 28) and its payload.
"""

import re
import struct
import sys


def entries(blob):
    magic, _version, header, size = struct.unpack_from("<IHHQ", blob, 0)
    if magic != 0xBA55ED50:
        sys.exit("not a fatbin: magic 0x%08x" % magic)
    if header + size > len(blob):
        sys.exit("truncated fatbin: %d bytes, header says %d" %
                 (len(blob), header + size))
    at = header
    while at < header + size:
        kind, _flags, eheader, payload = struct.unpack_from("<HHIQ", blob, at)
        arch = struct.unpack_from("<I", blob, at + 28)[0]
        yield kind, arch, blob[at + eheader:at + eheader + payload]
        at += eheader + payload


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_fatbin.py FATBIN SRC_DIR")
    blob = open(sys.argv[1], "rb").read()
    src = sys.argv[2]
    found = [(kind, arch) for kind, arch, _ in entries(blob)]
    print("entries (kind 1 = PTX, 2 = ELF; arch):", found)
    elf = [p for kind, arch, p in entries(blob) if kind == 2 and arch == 90]
    if not elf:
        sys.exit("no sm_90 ELF (SASS) in the fatbin")
    if not any(kind == 1 and arch == 90 for kind, arch in found):
        sys.exit("no compute_90 PTX in the fatbin")
    cu = open(src + "/src/cuda/kernels/Kernels.cu").read()
    kernels = re.findall(r"__global__\s+void\s+(\w+)\s*\(", cu)
    missing = [k for k in kernels if k.encode() + b"\0" not in elf[0]]
    if missing:
        sys.exit("kernels missing from the sm_90 ELF: %s" % missing)
    twins = open(src + "/src/cuda/Module.h").read()
    table = re.findall(r'X\(\w+,\s*"(\w+)"\)', twins)
    if not table:
        sys.exit("no PFRT_CUDA_KERNELS table in Module.h")
    unknown = [k for k in table if k not in kernels]
    if unknown:
        sys.exit("Module.h looks up kernels Kernels.cu lacks: %s" % unknown)
    unused = [k for k in kernels if k not in table]
    if unused:
        sys.exit("Kernels.cu kernels Module.h never looks up: %s" % unused)
    print("fatbin OK: sm_90 ELF with all %d kernels, compute_90 PTX" %
          len(kernels))


if __name__ == "__main__":
    main()
