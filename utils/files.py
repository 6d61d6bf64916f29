"""Writing a file or a folder so that a killed write never leaves half of it behind: everything is written
beside the target, then renamed over it (os.replace is atomic within one filesystem, on POSIX and Windows).
A reader sees the old file or the new one, never a truncated one."""
import contextlib
import os
import shutil


@contextlib.contextmanager
def atomic_write(path, mode="w"):
    """open(path, mode) for writing, through a temporary file beside it that replaces `path` only once the
    block has finished without an error (and the bytes are on disk)."""
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
    path = os.path.normpath(path)
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
    folder = os.fspath(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        with atomic_write(os.path.join(folder, ".write-check")) as f:
            f.write("ok")
        os.remove(os.path.join(folder, ".write-check"))
    except OSError as e:
        raise OSError(f"{what}={folder!r} cannot be written ({e.strerror or e}): choose a folder you can write "
                      f"to, before the run rather than after it") from None
