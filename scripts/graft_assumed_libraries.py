"""Bundles into a repaired wheel the libraries that the manylinux policy
assumes every system has and that a bare one lacks.

    python scripts/graft_assumed_libraries.py WHEEL

auditwheel leaves out the libraries its policy lists as the system's (libX11,
libGL, libz, ...). Debian's OpenCV core links libGLX, and so libX11 and the
X libraries under it: a minimal Debian root has none of them, and
patch_NLM's module would not load there. This adds each library that a file
of the wheel needs and that neither the wheel nor glibc and the compiler's
runtime (libstdc++, libgcc_s) provide: copied from where this machine's
loader finds it into <package>.libs/, renamed as auditwheel renames what
it bundles (libz.so.1 -> libz-<hash>.so.1, its soname and the names its
users need changed to match), with an rpath of $ORIGIN, until nothing is
left to add; then RECORD is written again.
patchelf (0.14.5 or later) must be on PATH.
"""
import base64
import csv
import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

# Always the system's: glibc, the dynamic loader and the compiler's runtime
# (manylinux's own rule: a wheel never carries these), and Halide's library,
# which the `halide` wheel provides.
SYSTEM = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libutil.so.1",
          "libresolv.so.2", "ld-linux-x86-64.so.2", "libgcc_s.so.1", "libstdc++.so.6", "libHalide.so"}


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    out = subprocess.run(["patchelf", "--print-needed", str(path)], capture_output=True, text=True, check=True)
    return out.stdout.split()


def in_its_rpath(path, name):
    """Whether `name` is in a folder of path's rpath (a file of the wheel found through $ORIGIN)."""
    rpath = subprocess.run(["patchelf", "--print-rpath", str(path)], capture_output=True, text=True).stdout.strip()
    return any((Path(d.replace("$ORIGIN", str(path.parent))) / name).exists() for d in rpath.split(":") if d)


def reach(path, libs):
    """Adds libs to path's rpath unless it is there: a library auditwheel
    bundled that needed only the system's libraries has no rpath at all."""
    rpath = subprocess.run(["patchelf", "--print-rpath", str(path)], capture_output=True, text=True).stdout.strip()
    dirs = [d for d in rpath.split(":") if d]
    if any(Path(d.replace("$ORIGIN", str(path.parent))).resolve() == libs.resolve() for d in dirs):
        return
    dirs.append("$ORIGIN" if path.parent == libs else f"$ORIGIN/{os.path.relpath(libs, path.parent)}")
    subprocess.run(["patchelf", "--set-rpath", ":".join(dirs), str(path)], check=True)


def resolved(path):
    """soname -> path, as this machine's loader resolves path's libraries."""
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            found[parts[0]] = parts[2]
    return found


def graft(wheel):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(root)
            entries = {i.filename: i for i in z.infolist()}
        package = next(d for d in root.iterdir() if d.is_dir() and not d.name.endswith((".dist-info", ".data", ".libs")))
        libs = root / f"{package.name}.libs"
        libs.mkdir(exist_ok=True)
        added = []
        while True:
            present = {f.name for f in libs.iterdir()}
            # The sonames the wheel's bundled copies stand for (auditwheel renames them).
            present |= {subprocess.run(["patchelf", "--print-soname", str(f)], capture_output=True,
                                       text=True).stdout.strip() for f in libs.iterdir()}
            missing = {}  # soname -> (the machine's file, the wheel's files that need it)
            for f in root.rglob("*"):
                if f.is_file() and is_elf(f):
                    lacking = [n for n in needed(f) if n not in SYSTEM and n not in present
                               and not in_its_rpath(f, n)]
                    if lacking:
                        where = resolved(f)
                        for n in lacking:
                            if n not in where:
                                sys.exit(f"{f.relative_to(root)} needs {n}, which this machine does not have")
                            missing.setdefault(n, (where[n], []))[1].append(f)
            if not missing:
                break
            for name, (src, users) in sorted(missing.items()):
                # Renamed as auditwheel renames what it bundles (libz.so.1 -> libz-<hash>.so.1), so
                # that the copy never stands in for another library of that name in the process.
                digest = hashlib.sha256(Path(src).read_bytes()).hexdigest()[:8]
                stem, _, ext = name.partition(".so")
                new = f"{stem}-{digest}.so{ext}"
                dst = libs / new
                shutil.copy2(src, dst)
                os.chmod(dst, 0o755)
                subprocess.run(["patchelf", "--set-soname", new, str(dst)], check=True)
                subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", str(dst)], check=True)
                for user in users:
                    subprocess.run(["patchelf", "--replace-needed", name, new, str(user)], check=True)
                    reach(user, libs)
                added.append(f"{name} (as {new})")
        # RECORD again: every file's hash and size (RECORD itself has neither).
        info = next(d for d in root.iterdir() if d.name.endswith(".dist-info"))
        buf = io.StringIO()
        record = csv.writer(buf, lineterminator="\n")
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            if f == info / "RECORD":
                continue
            digest = base64.urlsafe_b64encode(hashlib.sha256(f.read_bytes()).digest()).rstrip(b"=").decode()
            record.writerow([f.relative_to(root).as_posix(), f"sha256={digest}", f.stat().st_size])
        record.writerow([(info / "RECORD").relative_to(root).as_posix(), "", ""])
        (info / "RECORD").write_text(buf.getvalue())
        out = Path(str(wheel) + ".tmp")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            # dist-info last, as wheels are written.
            files = sorted((p for p in root.rglob("*") if p.is_file()),
                           key=lambda p: (p.is_relative_to(info), p.as_posix()))
            for f in files:
                rel = f.relative_to(root).as_posix()
                old = entries.get(rel)
                zi = zipfile.ZipInfo(rel, date_time=old.date_time if old else time.localtime()[:6])
                mode = (old.external_attr >> 16) if old else 0
                # (A regular file's type bits too: pip marks a file executable only then.)
                zi.external_attr = (mode or (stat.S_IFREG | (0o755 if os.access(f, os.X_OK) else 0o644))) << 16
                zi.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(zi, f.read_bytes())
        os.replace(out, wheel)
        return added


if __name__ == "__main__":
    added = graft(Path(sys.argv[1]))
    print(f"grafted {len(added)} libraries the manylinux policy assumes: {', '.join(added) or 'none'}")
