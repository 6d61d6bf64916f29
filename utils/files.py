"""Writing a file or a folder so that a killed write never leaves half of it behind: everything is written
beside the target, then renamed over it (os.replace is atomic within one filesystem, on POSIX and Windows).
A reader sees the old file or the new one, never a truncated one."""
import contextlib
import os
import shutil

from utils import checks

WRITE_MODES = ("w", "wt", "wb")


@contextlib.contextmanager
def atomic_write(path, mode="w"):
    """open(path, mode) for writing, through a temporary file beside it that replaces `path` only once the
    block has finished without an error (and the bytes are on disk). mode: 'w' (text) or 'wb' (bytes)."""
    path = checks.path("atomic_write", "path", path)
    if not isinstance(mode, str) or mode not in WRITE_MODES:
        raise ValueError(f"atomic_write: mode={checks._short(mode)} must be one of {WRITE_MODES}")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path):
    """Yields a fresh temporary folder beside `path`; once the block has finished without an error, that
    folder takes the place of `path` (the old one, if any, is removed after the swap)."""
    path = os.path.normpath(checks.path("atomic_dir", "path", path))
    tmp, old = f"{path}.{os.getpid()}.tmp", f"{path}.{os.getpid()}.old"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        yield tmp
        if os.path.exists(path):
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def check_writable(folder, what):
    """Make `folder` and write a probe file there now, so a run that will save into it fails before it starts
    rather than after: an OSError that names `what` (the argument) and the folder."""
    if isinstance(folder, bool) or not isinstance(folder, (str, os.PathLike)) or not os.fspath(folder):
        raise ValueError(f"{what}={checks._short(folder)} must be a folder's path (a non-empty str or pathlib.Path)")
    folder = os.fspath(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        with atomic_write(os.path.join(folder, ".write-check")) as f:
            f.write("ok")
        os.remove(os.path.join(folder, ".write-check"))
    except OSError as e:
        raise OSError(f"{what}={folder!r} cannot be written ({e.strerror or e}): choose a folder you can write "
                      f"to, before the run rather than after it") from None
