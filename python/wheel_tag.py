"""The capguard wheel's tag, and the checks that make it true.

The tag is a promise: manylinux_2_34_x86_64 says the wheel runs on any x86-64
Linux with glibc 2.34 or newer and nothing else installed. So retag fails,
rather than tag a wheel that breaks that promise, when an ELF file
  - asks for a symbol version above GLIBC_2.34 (objdump -T), or
  - needs a shared library beyond glibc's own (objdump -p, NEEDED).
The wheel holds no Python extension module (the package runs a native
command), so it fits any Python 3: py3-none.
"""
import base64
import hashlib
import os
import re
import subprocess
import tempfile
import zipfile

GLIBC_MAX = (2, 34)
PLATFORM = "manylinux_2_34_x86_64"
TAG = "py3-none-" + PLATFORM
# glibc's libraries: present on every image the tag covers.
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
              "ld-linux-x86-64.so.2"}


def elf_problems(path, name):
    """What in the ELF file at path breaks the tag's promise (empty if nothing)."""
    problems = []
    dyn = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    for line in dyn.splitlines():
        # "(GLIBC_2.36) arc4random" for a symbol it needs, "GLIBC_2.2.5 x" for one it defines
        m = re.search(r"\bGLIBC_(\d+)\.(\d+)(?:\.\d+)?\)?\s+(\S+)\s*$", line)
        if m and (int(m.group(1)), int(m.group(2))) > GLIBC_MAX:
            problems.append("%s: %s needs GLIBC_%s.%s" % (name, m.group(3), m.group(1), m.group(2)))
    head = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout
    for lib in re.findall(r"^\s*NEEDED\s+(\S+)", head, re.M):
        if lib not in GLIBC_LIBS:
            problems.append("%s: needs %s, which a clean image lacks" % (name, lib))
    return problems


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=" + digest


def retag(path):
    """Check the ELF files of the wheel at path, rewrite it tagged TAG (WHEEL
    and RECORD updated, file modes kept); returns the new file name."""
    dirname, base = os.path.split(path)
    dist, version = base.split("-")[:2]
    info_dir = "%s-%s.dist-info" % (dist, version)
    new_base = "%s-%s-%s.whl" % (dist, version, TAG)
    problems = []
    rows = []
    tmp = os.path.join(dirname, new_base + ".part")
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout, \
            tempfile.TemporaryDirectory() as scratch:
        for info in zin.infolist():
            if info.filename == info_dir + "/RECORD":
                continue
            data = zin.read(info)
            if data[:4] == b"\x7fELF":
                elf = os.path.join(scratch, "elf")
                with open(elf, "wb") as f:
                    f.write(data)
                problems += elf_problems(elf, info.filename)
            if info.filename == info_dir + "/WHEEL":
                lines = [l for l in data.decode().splitlines() if not l.startswith("Tag:")]
                data = ("\n".join(lines) + "\nTag: %s\n" % TAG).encode()
            zout.writestr(info, data)
            rows.append("%s,%s,%d" % (info.filename, _record_hash(data), len(data)))
        rows.append(info_dir + "/RECORD,,")
        zout.writestr(info_dir + "/RECORD", "\n".join(rows) + "\n")
    if problems:
        os.unlink(tmp)
        raise SystemExit("capguard wheel: not tagged %s:\n  %s" % (PLATFORM, "\n  ".join(problems)))
    os.replace(tmp, os.path.join(dirname, new_base))
    if new_base != base:
        os.unlink(path)
    return new_base
