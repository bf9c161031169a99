"""kafkaproto: the Apache Kafka wire protocol, every API and version, compiled.

    from kafkaproto.messages import MetadataRequest
    data = MetadataRequest(topics=None).encode(12)
    MetadataRequest.decode(data, 12)
"""

from . import errors
from .exceptions import (
    DecodeError,
    EncodeError,
    EncodeTypeError,
    KafkaProtoError,
    RecordsError,
    UnsupportedVersionError,
)
from . import messages as _messages  # noqa: F401 - registers kafkaproto's own specs
from ._impl import COMPILED as _COMPILED
from ._generated import ApiKey
from .protocol import (
    FrameBuffer,
    FrameError,
    Request,
    Response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    split_frames,
)
from .uuid import Uuid

__version__ = "0.1.0"


def compiled():
    """True when the Cython-compiled codecs are in use (not the pure-Python fallback)."""
    return _COMPILED


__all__ = [
    "ApiKey", "DecodeError", "EncodeError", "EncodeTypeError", "FrameBuffer", "FrameError", "KafkaProtoError",
    "RecordsError", "Request", "Response", "UnsupportedVersionError", "Uuid", "compiled", "decode_request",
    "decode_response", "encode_request", "encode_response", "errors", "split_frames",
]
