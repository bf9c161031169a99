"""The C allocator's thresholds, for a process whose work is moving large buffers: reading captures, or serving
as a broker."""

from ._impl import COMPILED


def keep_freed_memory():
    """Asks the C allocator to keep the memory large buffers are freed from, for a process whose main work is
    reading captures or serving as a broker; True where that could be asked (glibc, and the compiled build).

    Each frame is assembled in a buffer of its own and freed once handled: up to megabytes for a Fetch answer in
    a capture, or for a producer's request of large batches at a broker. glibc hands each such block back to the
    kernel once freed and takes fresh pages (faulted in and zeroed) for the next: up to a fifth of the time of a
    capture summary of record-heavy traffic, and of a broker's CPU under a producer of large batches. Afterwards
    blocks up to 16 MiB come from the heap, and up to 64 MiB freed at the top of each of its arenas stays with
    the process. The thresholds are fixed for the process's life (glibc no longer adapts them, and any set in
    MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES give way). ``kafkaproto capture`` and ``kafkaproto broker`` ask
    this; a program that does either beside other work can leave it.
    """
    if not COMPILED:
        return False
    from ._core import keep_freed_memory as keep

    return keep()
