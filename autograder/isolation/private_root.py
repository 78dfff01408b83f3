"""A copy, held in memory, of every file that a worker graded without PyTorch may read.

Which of a file's pages the kernel holds in memory (its page cache) outlives the process that
read them, and any later process that reads the same file can tell, by the time its first read
takes. So a worker with an oracle (PyTorch, or a re-grade's reference) could leave a message in
the page cache of a file that a worker graded without it reads later, in this grading run or in
another one. Workers without PyTorch, and their zygote, therefore see none of the machine's own
files: the system, the Python installation and the grader's files they need are copied into a
tmpfs, and mounted from there at the same paths: the system and Python once per machine, in
/dev/shm (autograder/isolation/shared_copy.py), where no worker sees them but through those mounts; the
grader's few files once per grading process. A tmpfs file lives in
memory only, so that its pages are always there and the time to read them tells nothing (on a
machine without swap, as graders run: a page swapped out would take time again). The reference
worker of a re-grade, which also runs without PyTorch, reads the same copies: they hold no state
it could set. (The lab's data that a worker reads below its home is its own copy, made for it.)

What is copied: of the Python path, the standard library but what no graded code can use, and
the distributions a student installs (requirements-student.txt), the worker imports and the labs'
code imports, with all they need, but PyTorch and JupyterLab; the hidden packages' places, empty,
to mount autograder/isolation/unavailable on; the interpreter, the shared libraries that it and every
extension module load, /etc, and the fixed files that cover /proc's host-wide entries.
"""
import atexit
import hashlib
import json
import mmap
import os
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from autograder.isolation import shared_copy
from autograder.isolation.zygote import (CLONE_NEWNS, MNT_DETACH, MS_BIND, MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT, check, libc,
                                         mount, write_proc_covers)

ELF = b"\x7fELF"
SHT_DYNAMIC, DT_NEEDED, DT_RPATH, DT_RUNPATH = 6, 1, 15, 29
GRADER = ".grader"  # below the copy: the grader's own files that a worker reads
# The distributions of a student's install that no graded code imports: the oracle, and the notebook's front-end.
LEFT_OUT = ("torch", "jupyterlab")
STDLIB_LEFT_OUT = {"test", "idlelib", "tkinter", "_tkinter", "turtle", "turtledemo", "ensurepip", "lib2to3"}
PACKAGE_FOLDERS = ("site-packages", "dist-packages")


@cache
def python_folders(mounted):
    """The folders of the Python path of a worker (this Python, isolated), not resolved, that lie
    in the folders a sandbox mounts (`mounted`): a checkout of the course on the path stays out."""
    listed = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                            capture_output=True, text=True, check=True)
    return [entry for entry in json.loads(listed.stdout) if entry and Path(entry).is_dir()
            and any(Path(entry).is_relative_to(folder) for folder in mounted)]


# Run by the worker's Python, isolated: each distribution that the given ones need, transitively
# (extras apart), but those left out, with its version, folder and, if asked (listing them costs
# most of the time), files: its RECORD, less the scripts it installed outside that folder. A
# distribution without a RECORD gets no files: absent whole, never half there.
CLOSURE = """
import importlib.metadata as metadata, json, re, sys
from pathlib import PurePath
from packaging.requirements import Requirement
names, modules, left_out, with_files = json.loads(sys.argv[1])
providers = metadata.packages_distributions()
todo = [*names, *(name for module in modules for name in providers.get(module.split(".")[0], ()))]
found = {}
while todo:
    name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
    if name in found or name in left_out:
        continue
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        continue
    found[name] = {"version": distribution.version, "location": str(distribution.locate_file(""))}
    if with_files:
        found[name]["files"] = sorted(str(distribution.locate_file(path)) for path in distribution.files or ()
                                      if ".." not in PurePath(path).parts)
    for line in distribution.requires or ():
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            todo.append(requirement.name)
print(json.dumps(found))
"""


@cache
def distributions(names, modules, with_files):
    """The distributions of the worker's Python that a worker graded without PyTorch may use: those
    named (a student's install), those providing `modules` (what the worker and the labs' code
    import), and what they need, less LEFT_OUT; name -> version, location and, `with_files`, files."""
    listed = subprocess.run([sys.executable, "-I", "-c", CLOSURE, json.dumps([names, modules, LEFT_OUT, with_files])],
                            capture_output=True, text=True, check=True)
    return json.loads(listed.stdout)


def copy_into(root, paths):
    """Copy each of `paths` (files, folders, links) to the same absolute path below `root`, with one
    `cp` for them all. A path is copied where its folder's links lead (/lib/x86_64-linux-gnu to
    usr/lib/x86_64-linux-gnu on a merged /usr), so that the links mirror_links makes find it."""
    sources = dict.fromkeys(os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
                            for path in map(str, paths))
    # From /, the paths made relative: cp --parents -a looks up each source's folders, to keep
    # their modes, by its path less the leading slash.
    subprocess.run(["xargs", "-0", "-r", "cp", "-a", "--parents", "-t", str(root), "--"], cwd="/",
                   input="\0".join(source.lstrip("/") for source in sources).encode(), check=True)


def mirror_links(root):
    """The top-level links of the system (/lib -> usr/lib on a merged /usr), made again in `root`."""
    for name in ("bin", "lib", "lib64", "sbin"):
        if Path("/", name).is_symlink() and not (root / name).exists():
            (root / name).symlink_to(os.readlink(Path("/", name)))


def shared_objects(folder):
    """The ELF files below `folder`."""
    found = []
    for path in Path(folder).rglob("*.so*"):
        try:
            if path.is_file() and not path.is_symlink() and path.open("rb").read(4) == ELF:
                found.append(path)
        except OSError:
            continue
    return found


def dynamic_entries(path):
    """The libraries that the ELF file `path` needs (DT_NEEDED) and the folders it names to look
    for them in (RPATH, RUNPATH); None where it is no 64-bit little-endian ELF file with a dynamic
    section, which only `ldd` can then tell about."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != ELF or data[4:6] != b"\x02\x01":
            return None
        (start,), (size, count) = struct.unpack_from("<Q", data, 0x28), struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, start + index * size) for index in range(count)]
        for _, kind, _, _, offset, length, link, *_ in sections:
            if kind == SHT_DYNAMIC:
                strings = sections[link][4]
                entries = [struct.unpack_from("<qQ", data, at) for at in range(offset, offset + length, 16)]
                named = [(tag, data[strings + at:data.find(b"\0", strings + at)].decode(errors="surrogateescape"))
                         for tag, at in entries if tag in (DT_NEEDED, DT_RPATH, DT_RUNPATH)]
                return ([name for tag, name in named if tag == DT_NEEDED],
                        [name for tag, name in named if tag != DT_NEEDED])
    return None


def traced_objects(objects, root):
    """Of `objects`, those whose libraries `ldd` must find: each one that needs a library found
    neither in `root` through its own RPATH or RUNPATH, nor through an object traced before it
    (libraries outside those folders are looked up alike for every object: ld.so.cache)."""
    traced, covered = [], set()
    for path in objects:
        found = dynamic_entries(path)
        if found is None:
            traced.append(path)
            continue
        needed, listed = found
        folders = [Path(os.path.normpath(folder.replace("${ORIGIN}", "$ORIGIN").replace("$ORIGIN", str(path.parent))))
                   for entry in listed for folder in entry.split(":") if folder]
        outside = {name for name in needed if not any((folder / name).exists() for folder in folders)}
        if not outside <= covered or not all(folder.is_relative_to(root) for folder in folders):
            traced.append(path)
            covered |= outside
    return traced


def libraries_needed(objects, root):
    """The shared libraries that `objects` load from outside `root`, each with the link that names
    it: what `ldd` says of traced_objects."""
    traced = traced_objects(objects, root)
    needed = set()
    for start in range(0, len(traced), 200):
        listed = subprocess.run(["ldd", *map(str, traced[start:start + 200])], capture_output=True, text=True)
        for line in listed.stdout.splitlines():
            words = line.split()  # "name => /path (address)", or "/path (address)" for the loader
            path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words else ""
            if path.startswith("/") and Path(path).exists() and not Path(path).is_relative_to(root):
                needed.update({path, os.path.realpath(path)})
    return needed


def stdlib_entries(folder):
    """The entries of a folder of the standard library that graded code can use: not its tests,
    its GUI (tkinter, turtle, IDLE), the tools that install pip or convert Python 2 code, the
    static library to build Python with (config-*), nor a site-packages off the path."""
    return [path for path in Path(folder).iterdir() if path.name.split(".")[0] not in STDLIB_LEFT_OUT
            and not path.name.startswith("config-") and path.name not in PACKAGE_FOLDERS]


def path_configurations(mounted):
    """The .pth files of the packages' folders on the Python path, which belong to no distribution
    but may add folders to the path (a virtualenv that reads another's packages)."""
    return sorted(path for folder in python_folders(mounted) if Path(folder).name in PACKAGE_FOLDERS
                  for path in Path(folder).glob("*.pth"))


def python_paths(mounted, chosen):
    """What copied_python copies of the Python path's folders: of the standard library what
    stdlib_entries keeps, of the packages' folders their .pth files and the files of the `chosen`
    distributions."""
    folders = python_folders(mounted)
    return [*(path for folder in folders if Path(folder).name not in PACKAGE_FOLDERS
              for path in stdlib_entries(folder)),
            *path_configurations(mounted),
            *(path for found in chosen.values() if found["location"] in folders
              for path in found["files"] if os.path.lexists(path))]


def copied_python(root, mounted, hidden_paths, chosen):
    """Copy python_paths; the places of `hidden_paths` stay as empty folders and files to be
    mounted over."""
    copy_into(root, python_paths(mounted, chosen))
    for folder in python_folders(mounted):  # a folder of packages none of which is chosen is still mounted
        (root / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for path in hidden_paths:
        target = root / path.lstrip("/")
        if Path(path).is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    interpreter = [Path(sys.executable)]
    while interpreter[-1].is_symlink():  # a virtualenv's python is a chain of links
        interpreter.append(interpreter[-1].parent / os.readlink(interpreter[-1]))
    copy_into(root, [*interpreter, *Path(sys.prefix).glob("pyvenv.cfg")])


def build(root, mounted, hidden_paths, chosen):
    """Fill the empty folder `root` with the copy of the system and Python."""
    mirror_links(root)
    copied_python(root, mounted, hidden_paths, chosen)
    objects = shared_objects(root) + [Path(os.path.realpath(sys.executable))]
    copy_into(root, sorted(libraries_needed(objects, root)))
    copy_into(root, ["/etc"])


def copied_grader(folder, grader_files):
    """Fill `folder` with the grader's files that a worker reads, and the covers of its /proc."""
    folder.mkdir()
    subprocess.run(["cp", "-a", "--", *map(str, grader_files), str(folder)], check=True)
    write_proc_covers(folder / "proc")


def digest(mounted, hidden_paths, chosen):
    """A name for what build copies: the Python, the distributions and where they lie, the folders
    of the standard library and the packages' path files, the places left to be mounted over, and
    what is left out."""
    described = [sys.version, sys.executable, os.path.realpath(sys.executable), python_folders(mounted),
                 [(str(path), path.read_text(errors="replace")) for path in path_configurations(mounted)],
                 sorted(hidden_paths), sorted(STDLIB_LEFT_OUT),
                 sorted((name, found["version"], found["location"]) for name, found in chosen.items())]
    return hashlib.sha256(json.dumps(described).encode()).hexdigest()[:32]


def bytes_below(paths):
    """The bytes that `paths` (files and folders) take."""
    listed = subprocess.run(["du", "-scb", "--files0-from=-"], input="\0".join(map(str, paths)).encode(),
                            capture_output=True, check=True)
    return int(listed.stdout.splitlines()[-1].split()[0])


@dataclass(frozen=True)
class Copy:
    system: Path  # the system and Python, at their paths below it
    grader: Path  # the grader's files, by name, and the covers of /proc below "proc"


def private_root(scratch, mounted, hidden_paths, grader_files, names, modules):
    """The copy of what a sandbox shows of the `mounted` folders (see build): the machine's one in
    /dev/shm (autograder/isolation/shared_copy.py), or where it cannot be, this process's own in a tmpfs
    mounted in `scratch`; the grader's files always in that tmpfs. Read-only, and unmounted when
    the process exits (before `scratch` is removed: atexit runs in reverse). Made once, by the
    first thread to ask."""
    with _building:
        return _made(scratch, mounted, hidden_paths, grader_files, names, modules)


_building = threading.Lock()
SOURCE = "autograder-copy-"  # and the grading process's PID: the name of its copy's mount


def sweep():
    """Unmount the copies of grading processes that ended without unmounting theirs (killed): each
    would hold its memory until the machine restarts."""
    with open("/proc/self/mountinfo") as mounts:
        for fields in map(str.split, mounts):
            source = fields[fields.index("-") + 2]
            if source.startswith(SOURCE) and not Path("/proc", source[len(SOURCE):]).exists():
                libc.umount2(fields[4].encode(), MNT_DETACH)


@cache
def _made(scratch, mounted, hidden_paths, grader_files, names, modules):
    sweep()
    root = Path(scratch, "private-root")
    root.mkdir(mode=0o755)
    mount(f"{SOURCE}{os.getpid()}", root, "tmpfs", 0, "mode=0755")
    atexit.register(libc.umount2, str(root).encode(), MNT_DETACH)
    def chosen():  # the files are listed only where a copy is made
        return distributions(names, modules, True)

    system = shared_copy.copy(digest(mounted, hidden_paths, distributions(names, modules, False)),
                              lambda: bytes_below(python_paths(mounted, chosen())),
                              lambda folder: build(folder, mounted, hidden_paths, chosen()))
    if system is None:
        build(root, mounted, hidden_paths, chosen())
    copied_grader(root / GRADER, grader_files)
    mount(None, root, None, MS_REMOUNT | MS_RDONLY)
    return Copy(system or root, root / GRADER)


def enter(root, folders):
    """In a child about to start a program: a mount namespace of its own in which the copy lies,
    read-only, over each of `folders` that it holds, so that the program reads only the copy."""
    check(libc.unshare(CLONE_NEWNS), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for folder in folders:
        copied = root / str(folder).lstrip("/")
        if not Path(folder).is_symlink() and copied.is_dir():  # a link leads into a folder covered here
            mount(str(copied), folder, None, MS_BIND | MS_REC)
            mount(None, folder, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
