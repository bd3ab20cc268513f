# Copyright: tfdist maintainers
# Apache-2.0 (see LICENSE)
"""Files the modules lay down on a node: rewritten only when they differ, replaced atomically.

Also how a set of files is named by its checksums (a SHA256SUMS text), and whether a folder has them in place as
written (in_place()): the actions check with it before a module run on a re-run. Standard library only, imports
none of the collection: it is shipped to the nodes with the package tfdist, where that check runs.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
import zipfile

# What tfdist writes for a job, on the nodes and on the controller, is its user's alone: the job's scripts, settings
# and environment, its datasets, logs and models, the training program, the records of its processes. The job runs as
# the user who lays its files down (the play's become user), so it reads them all.
FILE_MODE = 0o600
DIR_MODE = 0o700
# The umask of the processes tfdist starts for a job (its tasks, their supervisors, warm starts, the idle guard): what
# they write is as private as what tfdist writes for them.
PRIVATE_UMASK = 0o077
# The file of a package that names its files by their checksums (sha256sum's format, see checksums()).
CHECKSUMS_FILE = "SHA256SUMS"
# The package the collection lays down on the nodes (_package): its folder under a destination, and its import name.
PACKAGE_NAME = "tfdist"


def needs_write(path, content, mode=FILE_MODE):
    """True when the file is missing, or its content (bytes) or mode differ."""
    try:
        if (os.stat(path).st_mode & 0o7777) != mode:
            return True
        with open(path, "rb") as handle:
            return handle.read() != content
    except OSError:
        return True


def make_folder(path, mode=DIR_MODE):
    """os.makedirs(path, exist_ok=True), but every folder it makes gets mode, not only the last one (Python gives the
    folders above it the umask's mode, 0755 as a rule). Folders that exist are left as they are."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path.rstrip(os.sep))
    if parent and parent != path:
        make_folder(parent, mode)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return  # another process made it meanwhile
    os.chmod(path, mode)  # mkdir's mode goes through the umask


def write_file(path, content, mode=FILE_MODE):
    """Write then rename, its folder made if missing: a process that reads it meanwhile never sees half a file.

    The one atomic write of the collection's node-side code (_json_files writes its records with it)."""
    folder = os.path.dirname(path) or os.curdir
    make_folder(folder)
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def digest(content):
    """The SHA256 of a file's content (bytes), as sha256sum prints it."""
    return hashlib.sha256(content).hexdigest()


def checksums(files):
    """A SHA256SUMS text (sha256sum's format, sorted by path) for {path: content}."""
    return "".join("%s  %s\n" % (digest(files[path]), path) for path in sorted(files))


def read_checksums(text):
    """{path: SHA256} of a SHA256SUMS text; ValueError on a line that is not one."""
    digests = {}
    for line in text.splitlines():
        value, path = line.split("  ", 1)
        digests[path] = value
    return digests


def stale_entries(root, files):
    """Paths under root (relative) that are not among files: whole folders where none of them lives."""
    wanted_dirs = {os.path.dirname(path) for path in files}
    wanted_dirs |= {os.path.dirname(d) for d in list(wanted_dirs)}
    stale = []
    for folder, dirs, names in os.walk(root):
        relative = os.path.relpath(folder, root).replace(os.sep, "/")
        relative = "" if relative == "." else relative
        for name in sorted(dirs):
            path = "%s/%s" % (relative, name) if relative else name
            if name == "__pycache__":
                dirs.remove(name)  # Python's own: left alone
            elif not any(w == path or w.startswith(path + "/") for w in wanted_dirs):
                stale.append(path)
                dirs.remove(name)
        for name in sorted(names):
            path = "%s/%s" % (relative, name) if relative else name
            if path not in files:
                stale.append(path)
    return sorted(stale)


def package_root(dest):
    """The folder of the package's copy laid down in dest (a folder then on the Python path)."""
    return os.path.join(dest, PACKAGE_NAME)


def lay_down(root, files, check_mode=False):
    """Write files ({path relative to root: content}) where they differ and remove what else is under root (Python's
    caches aside); (paths written, entries removed). Raises OSError (its filename) when root cannot be written."""
    written = [path for path in sorted(files) if needs_write(os.path.join(root, path), files[path])]
    removed = stale_entries(root, files) if os.path.isdir(root) else []
    if not check_mode:
        for path in written:
            write_file(os.path.join(root, path), files[path])
        for path in removed:
            target = os.path.join(root, path)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.remove(target)
    return written, removed


def read_copy(root):
    """{path: content} of the files root's CHECKSUMS_FILE names, that file included: a package copy as its files
    dictionary (check it with is_copy_of first). Raises OSError or ValueError."""
    with open(os.path.join(root, CHECKSUMS_FILE), "rb") as handle:
        files = {CHECKSUMS_FILE: handle.read()}
    for path in read_checksums(files[CHECKSUMS_FILE].decode()):
        with open(os.path.join(root, path), "rb") as handle:
            files[path] = handle.read()
    return files


def zip_package(files):
    """A package's files ({path: content}) as the bytes of a zip that Python imports the package from (its folder
    PACKAGE_NAME at the top)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            archive.writestr("%s/%s" % (PACKAGE_NAME, path), files[path])
    return buffer.getvalue()


def unzip_package(path):
    """{path: content} of the package in the zip file at path (zip_package's). Raises OSError or ValueError."""
    top = PACKAGE_NAME + "/"
    try:
        with zipfile.ZipFile(path) as archive:
            return {name[len(top):]: archive.read(name) for name in archive.namelist() if name.startswith(top)}
    except zipfile.BadZipFile as error:
        raise ValueError("%s: %s" % (path, error)) from error


def in_place(root, digests, folders=(), only=False):
    """True when root holds each file of digests ({path relative to root: SHA256}) with that content and FILE_MODE,
    each of folders (relative, "" is root itself) and, with only, nothing else (Python's caches aside): what
    writing those files with write_file and removing stale_entries would leave as it is.
    """
    if not all(os.path.isdir(os.path.join(root, folder)) for folder in folders):
        return False
    for path, wanted in digests.items():
        target = os.path.join(root, path)
        try:
            if (os.stat(target).st_mode & 0o7777) != FILE_MODE:
                return False
            with open(target, "rb") as handle:
                if digest(handle.read()) != wanted:
                    return False
        except OSError:
            return False
    return not (only and stale_entries(root, digests))


def is_copy_of(root, text):
    """True when root's CHECKSUMS_FILE reads text and root holds each file it names, intact (a package's copy is
    this version's)."""
    try:
        with open(os.path.join(root, CHECKSUMS_FILE)) as handle:
            if handle.read() != text:
                return False
        return in_place(root, read_checksums(text))
    except (OSError, ValueError):
        return False
