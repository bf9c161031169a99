"""TCP reassembly: one direction's segments, in whatever order they were captured, back into its byte stream.

A capture sees segments as they passed the tap: out of order, retransmitted,
overlapping, cut short by the snap length, some never. ``Direction`` places each
by its sequence number and hands out the stream in order as a list of pieces:
``bytes`` for data, and an ``int`` for a hole of that many bytes that will not
fill. Bytes ahead of a hole wait for it. A hole is given up when the peer
acknowledges bytes past it (the peer has them, so no retransmission will bring
them), when ``max_pending`` bytes wait behind it, or when the stream is flushed
at the end of the connection. Sequence numbers wrap at 2**32.
"""

_MASK = 0xFFFFFFFF
_HALF = 0x80000000


class Direction:
    """The byte stream of one direction of a TCP connection."""

    __slots__ = ("next_seq", "pending", "pending_bytes", "max_pending", "delivered", "gaps", "end_seq")

    def __init__(self, max_pending=4 << 20):
        self.next_seq = None  # sequence number of the next byte owed to the stream
        self.pending = {}  # sequence number -> payload of segments ahead of a hole
        self.pending_bytes = 0
        self.max_pending = max_pending
        self.delivered = 0  # bytes handed out, holes included: the stream offset of the next byte
        self.gaps = 0  # bytes given up as holes
        self.end_seq = None  # the sequence number of its FIN, once seen

    def syn(self, seq):
        """A SYN with sequence number seq: the stream starts at seq + 1."""
        if self.next_seq is None:
            self.next_seq = (seq + 1) & _MASK

    def fin(self, seq):
        """The stream ends at seq (its FIN's sequence number): bytes before it that never arrive are a hole
        when the stream is flushed."""
        if self.next_seq is not None and self.end_seq is None:
            self.end_seq = seq

    def segment(self, seq, payload):
        """Pieces of the stream that this segment makes available."""
        size = len(payload)
        if not size:
            return []
        if self.next_seq is None:  # the capture began after the SYN
            self.next_seq = seq
        if seq == self.next_seq and not self.pending:  # the common case: in order
            self.next_seq = (seq + size) & _MASK
            self.delivered += size
            return [payload]
        ahead = (seq - self.next_seq) & _MASK
        if ahead >= _HALF:  # starts before the next byte owed: a retransmission or an overlap
            behind = (1 << 32) - ahead
            if behind >= size:
                return []
            payload = payload[behind:]
            seq = self.next_seq
            ahead = 0
        if ahead:
            held = self.pending.get(seq)
            if held is None or len(held) < size:
                self.pending_bytes += size - (len(held) if held is not None else 0)
                self.pending[seq] = payload
            if self.pending_bytes <= self.max_pending:
                return []
            return self._give_up_hole()
        out = [payload]
        self.delivered += len(payload)
        self.next_seq = (seq + len(payload)) & _MASK
        return out + self._drain()

    def acked(self, ack):
        """Pieces the peer's acknowledgement releases: bytes before ack that the capture does not hold will not
        come (the peer has them; no retransmission is due), so holes up to there are given up."""
        if self.next_seq is None:  # joined late, nothing seen yet: the stream goes on from what the peer has
            self.next_seq = ack
            return []
        if self.end_seq is not None and 0 < (ack - self.end_seq) & _MASK < _HALF:
            ack = self.end_seq  # the FIN takes a sequence number of its own
        ahead = (ack - self.next_seq) & _MASK
        if not ahead or ahead >= _HALF or (ahead == 1 and not self.pending):
            return []  # one byte past what arrived, with nothing held beyond: the uncaptured FIN's
        out = []
        while self.pending:
            if (ack - self._nearest()) & _MASK >= _HALF:
                break  # what is held lies beyond what was acknowledged
            out += self._give_up_hole()
        hole = (ack - self.next_seq) & _MASK
        if 0 < hole < _HALF:
            out += self._hole(hole)
            out += self._drain()
        return out

    def flush(self):
        """Everything still held, its holes given up: for a connection that ended or went idle."""
        out = []
        while self.pending:
            out += self._give_up_hole()
        if self.end_seq is not None:
            hole = (self.end_seq - self.next_seq) & _MASK
            if 0 < hole < _HALF:
                out += self._hole(hole)
        return out

    def _hole(self, size):
        self.delivered += size
        self.gaps += size
        self.next_seq = (self.next_seq + size) & _MASK
        return [size]

    def _nearest(self):
        return min(self.pending, key=lambda s: (s - self.next_seq) & _MASK)

    def _give_up_hole(self):
        """The hole before the nearest held segment becomes a gap, and the stream goes on from there."""
        return self._hole((self._nearest() - self.next_seq) & _MASK) + self._drain()

    def _drain(self):
        """Held segments that now start at or before the next byte owed, in order."""
        out = []
        pending = self.pending
        while pending:
            payload = pending.pop(self.next_seq, None)
            if payload is None:
                payload = self._pop_overlapping()
                if payload is None:
                    break
            else:
                self.pending_bytes -= len(payload)
            out.append(payload)
            self.delivered += len(payload)
            self.next_seq = (self.next_seq + len(payload)) & _MASK
        return out

    def _pop_overlapping(self):
        """A held segment that starts before the next byte owed and goes past it, trimmed to start there;
        held segments wholly behind it are dropped. None if there is none."""
        for seq in [s for s in self.pending if (s - self.next_seq) & _MASK >= _HALF]:
            payload = self.pending.pop(seq)
            self.pending_bytes -= len(payload)
            behind = (self.next_seq - seq) & _MASK
            if behind < len(payload):
                return payload[behind:]
        return None
