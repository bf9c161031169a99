"""One connection's transport end for the server: bytes received straight into its ServerConnection, whole
requests waiting for the connection's task, reading paused and resumed as Kafka mutes a channel, and the server's
request queue (queued.max.requests) that stops all reading when full. No sockets are opened here."""

import asyncio
import collections

from ..connection import ProtocolError

READ_SIZE = 1 << 16
# Bytes of whole requests a connection holds behind the one being answered before it stops reading: what Kafka's
# default socket receive buffer (socket.receive.buffer.bytes) holds.
READ_AHEAD = 100 * 1024
# Answers written while the connection's task runs are held and sent together when it next waits (Stream.write);
# past this many bytes they go at once.
HOLD_BYTES = 1 << 16


class RequestQueue:
    """Requests read and ready, over every connection, that their connection's task has not started yet (Kafka's
    request queue, bounded by queued.max.requests). When it is full, every connection stops reading (as Kafka's
    network threads do when the queue is full), and all read again once it is not. A request read while another
    of its connection is answered (the one read beyond, see Stream) is not ready and does not count: it waits
    for its own connection, not for the broker."""

    def __init__(self, limit):
        self.limit = limit
        self.size = 0
        self.streams = set()  # the connections' streams
        self.blocked = set()  # streams that stopped reading for the queue

    @property
    def full(self):
        return self.size >= self.limit

    def added(self):
        self.size += 1
        if self.size == self.limit:
            for stream in list(self.streams):
                stream.update_reading()  # each stops reading, and is noted in blocked

    def taken(self):
        self.size -= 1
        if self.blocked and not self.full:
            blocked, self.blocked = self.blocked, set()
            for stream in blocked:
                stream.update_reading()


class Stream(asyncio.BufferedProtocol):
    """One connection's transport end: the client's bytes are received straight into its ServerConnection's
    frame buffer (a large request into a bytearray of its own, never copied on its way to the log), whole
    frames wait for the connection's task, and writes are paced as StreamWriter paces them (drain).

    As Kafka mutes a channel while its request is handled, it stops reading once the whole requests waiting
    behind the one being answered hold more than READ_AHEAD bytes: a pipelining client's next requests then wait
    in the socket, not in the broker. (Stopping and starting cost a system call each, so a producer's few
    requests in flight are read on without them.) It reads nothing either while the server's request queue is
    full (queued.max.requests)."""

    def __init__(self, connection, queue=None):
        self._connection = connection
        self._queue = queue
        self.transport = None
        self._frames = collections.deque()
        self._waiting = 0  # bytes in _frames
        self._ended = False  # no more frames: end of stream, connection lost or an unreadable size prefix
        self._error = None  # what ended it, raised after the frames before it
        self._wake = None  # the future the connection's task waits on for frames
        self._writable = None  # the future drain waits on while the transport's buffer is full
        self._spare = None
        self._held = []  # answers written and not yet handed to the transport (write)
        self._held_bytes = 0
        self._queued = False  # the next frame counts in the server's request queue (its task waits for it)
        # Done when the connection is lost: a request waiting for data ends then, rather than at its time.
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport
        if self._queue is not None:
            self._queue.streams.add(self)
            self.update_reading()  # the queue may be full now

    def get_buffer(self, sizehint):
        if not self._ended:
            try:
                return self._connection.get_buffer(sizehint)
            except ProtocolError as e:
                self._end(e)
        if self._spare is None:  # what still arrives after the end is dropped
            self._spare = bytearray(READ_SIZE)
        return self._spare

    def buffer_updated(self, nbytes):
        if self._ended:
            return
        try:
            frames = self._connection.buffer_updated(nbytes)
        except ProtocolError as e:
            self._end(e)
            return
        if frames:
            self._frames.extend(frames)
            if self._connection.frame_error is not None:  # these are the last: the stream ends after them
                self._end(self._connection.frame_error)
            self._waiting += sum(map(len, frames))
            if self._queue is not None and self._wake is not None and not self._queued:
                self._queued = True  # ready for its task, which has not run yet
                self._queue.added()
            self.update_reading()
            self._wakeup()

    def update_reading(self):
        """Read while the whole requests waiting beyond the one the task is about to take hold at most READ_AHEAD
        bytes, and the server's request queue has room."""
        transport = self.transport
        if self._ended or transport is None or transport.is_closing():
            return
        beyond = len(self._frames) - (1 if self._wake is not None else 0)
        full = self._queue is not None and self._queue.full
        if beyond > 0 and self._waiting > READ_AHEAD or full:
            if full:
                self._queue.blocked.add(self)  # to read again when the queue has room
            if transport.is_reading():
                transport.pause_reading()
        elif not transport.is_reading():
            transport.resume_reading()

    def eof_received(self):
        self._end(None)
        return False  # close: a Kafka client that stops sending is gone

    def connection_lost(self, exc):
        if self._queue is not None:
            self._queue.streams.discard(self)
            self._queue.blocked.discard(self)
            if self._queued:
                self._queued = False
                self._queue.taken()
        self._frames.clear()  # no one is left to read their answers
        self._waiting = 0
        self._end(exc)
        if not self.lost.done():
            self.lost.set_result(None)
        self.resume_writing()  # drain sees the loss

    def pause_writing(self):
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self):
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _end(self, error):
        if not self._ended:
            self._ended, self._error = True, error
            if self.transport is not None and not self.transport.is_closing():
                self.transport.pause_reading()
        self._wakeup()

    def _wakeup(self):
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def frame(self):
        """The next whole frame; None at the end of the stream. An unreadable size prefix or a lost
        connection is raised once the frames before it are taken."""
        while not self._frames:
            if self._ended:
                if self._error is not None:
                    raise self._error
                return None
            self.send_held()
            self._wake = asyncio.get_running_loop().create_future()
            self.update_reading()  # the task takes the next request at once: read it
            await self._wake
        frame = self._frames.popleft()
        self._waiting -= len(frame)
        if self._queued:
            self._queued = False
            self._queue.taken()
        self.update_reading()
        return frame

    def write(self, data):
        """Held until the connection's task next waits (frame, drain, send_held), then sent with the answers
        held beside it in one system call: a send on loopback costs tens of microseconds (the client's receive
        runs in it), and the requests of a pipelining client read together are answered together."""
        self._held.append(data)
        self._held_bytes += len(data)
        if self._held_bytes >= HOLD_BYTES:
            self.send_held()

    def send_held(self):
        """Hand the answers write holds to the transport: before every wait of the connection's task."""
        held = self._held
        if held:
            data = held[0] if len(held) == 1 else b"".join(held)
            held.clear()
            self._held_bytes = 0
            if not self.transport.is_closing():
                self.transport.write(data)

    async def drain(self):
        writable = self._writable
        if writable is not None:
            self.send_held()
            await writable
            if self.lost.done():
                raise ConnectionResetError("the connection was lost while its answers waited to be sent")

    def get_extra_info(self, name):
        return self.transport.get_extra_info(name)

    def close(self):
        self.send_held()
        self.transport.close()
