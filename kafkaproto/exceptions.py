"""Exceptions raised by kafkaproto's codecs."""


class KafkaProtoError(Exception):
    """Base class of every error kafkaproto raises on its own."""


class DecodeError(KafkaProtoError, ValueError):
    """Input bytes do not decode: says what, where in the message, and at which byte.

    ``path`` is the field path (``topics[2].partitions[0].records``), ``offset``
    the byte offset in the buffer given to ``decode``, ``reason`` the problem.
    """

    def __init__(self, reason, offset, path=None, message=None):
        self.reason = reason
        self.offset = offset
        # Built innermost-first while the error climbs out of nested structs.
        self._segments = list(path) if path else []
        self.message = message
        super().__init__(reason)

    def add_segment(self, segment):
        self._segments.append(segment)

    @property
    def truncated(self):
        """Whether the input only ran out (a frame cut short), rather than saying something impossible."""
        return self.reason.endswith(" remain") or self.reason == "varint runs past the end of the input"

    @property
    def path(self):
        out = ""
        for seg in reversed(self._segments):
            out += seg if seg.startswith("[") or not out else "." + seg
        return out

    def __str__(self):
        where = " ".join(p for p in (self.message, self.path) if p)
        head = f"{where}: " if where else ""
        return f"{head}{self.reason} (byte offset {self.offset})"

    def __reduce__(self):
        return (_rebuild_decode_error, (self.reason, self.offset, self._segments, self.message))


def _rebuild_decode_error(reason, offset, segments, message):
    return DecodeError(reason, offset, segments, message)


class RecordsError(KafkaProtoError, ValueError):
    """Record data (a record batch or legacy message set) does not decode.

    ``position`` is the byte in the buffer given to the records reader;
    ``batch_offset`` the base offset of the batch concerned (None when its
    header could not be read); for a fault inside a compressed batch,
    ``inner_position`` is the byte within the decompressed records.

    ``kind`` says what sort of fault it is, for callers that act on it (a broker
    choosing its error code) without reading the text; None where the reader
    does not say:

    - ``"truncated"``: the data ends inside a batch;
    - ``"corrupt"``: bytes that cannot be a batch (a length below the header, an
      unknown magic) or whose CRC does not match;
    - ``"magic"``: a legacy (magic 0 or 1) batch where only magic 2 is taken;
    - ``"empty"``: no batch at all where one is needed;
    - ``"multiple"``: more than one batch where one is allowed;
    - ``"too_large"``: a batch over the size limit, or one that decompresses to
      more than the cap on decompressed size;
    - ``"compression"``: an unknown compression codec, or a compressed payload
      that does not decompress;
    - ``"invalid"``: records that are malformed or disagree with their batch's
      header (counts, offsets, lengths, varints);
    - ``"offsets"``: a compressed batch whose records' offset deltas are not
      0, 1, ... count - 1;
    - ``"key"``, ``"timestamp"``: records refused one by one (a record without a
      key where keys are required, timestamps out of the allowed range;
      ``"timestamp"`` when any timestamp is among them). ``record_errors`` then
      lists each as (index of the record in its batch, reason).
    """

    KINDS = ("truncated", "corrupt", "magic", "empty", "multiple", "too_large", "compression", "invalid", "offsets",
             "key", "timestamp")

    def __init__(self, reason, position, batch_offset=None, inner_position=None, kind=None, record_errors=()):
        self.reason = reason
        self.position = position
        self.batch_offset = batch_offset
        self.inner_position = inner_position
        self.kind = kind
        self.record_errors = tuple(record_errors)
        super().__init__(reason)

    def __str__(self):
        head = "" if self.batch_offset is None else f"batch at offset {self.batch_offset}: "
        if self.inner_position is None:
            where = f"byte {self.position}"
        else:
            where = f"byte {self.inner_position} of the decompressed records of the batch at byte {self.position}"
        return f"{head}{self.reason} ({where})"

    def __reduce__(self):
        return (RecordsError, (self.reason, self.position, self.batch_offset, self.inner_position, self.kind,
                               self.record_errors))


class UnsupportedVersionError(KafkaProtoError, ValueError):
    """A message cannot be written or read at the requested version."""


class EncodeError(KafkaProtoError, ValueError):
    """A value does not fit its field; the message names the field path."""


class EncodeTypeError(KafkaProtoError, TypeError):
    """A value has the wrong type for its field; the message names the field path."""
