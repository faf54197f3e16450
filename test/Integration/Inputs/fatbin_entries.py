"""Lists the entries of a GPU rank's embedded kernel image: reads the
__pf_kernels_image global of an LLVM-dialect module (pf-embed-gpu-kernels'
output), checks the fatbin header (magic 0xBA55ED50) and prints one line a
entry, `elf sm_<arch>` for SASS or `ptx sm_<arch>` for PTX, from each
entry's header (kind 2 = ELF, 1 = PTX; the architecture at byte 28)."""

import re
import struct
import sys


def image_bytes(text):
    m = re.search(r'@__pf_kernels_image\("((?:[^"\\]|\\[0-9A-Fa-f]{2}|\\\\|\\")*)"\)', text)
    if not m:
        sys.exit("FAIL: no __pf_kernels_image global")
    raw, out, i = m.group(1), bytearray(), 0
    while i < len(raw):
        if raw[i] == "\\":
            if raw[i + 1] in '\\"':
                out.append(ord(raw[i + 1]))
                i += 2
            else:
                out.append(int(raw[i + 1:i + 3], 16))
                i += 3
        else:
            out += raw[i].encode("latin1")
            i += 1
    return bytes(out)


def main():
    data = image_bytes(open(sys.argv[1]).read())
    magic, _, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50 or header + size != len(data):
        sys.exit(f"FAIL: not a fatbin ({len(data)} bytes, magic {magic:#x})")
    at = header
    while at < header + size:
        kind, _, entry_header, entry_size = struct.unpack_from("<HHIQ", data, at)
        arch = struct.unpack_from("<I", data, at + 28)[0]
        print({1: "ptx", 2: "elf"}.get(kind, f"kind{kind}"), f"sm_{arch}")
        at += entry_header + entry_size


if __name__ == "__main__":
    main()
