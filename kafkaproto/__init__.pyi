# What editors and type checkers see of the package itself (its compiled() is the one function defined here).
from . import errors as errors
from ._generated import ApiKey as ApiKey
from .exceptions import DecodeError as DecodeError
from .exceptions import EncodeError as EncodeError
from .exceptions import EncodeTypeError as EncodeTypeError
from .exceptions import KafkaProtoError as KafkaProtoError
from .exceptions import RecordsError as RecordsError
from .exceptions import UnsupportedVersionError as UnsupportedVersionError
from .protocol import FrameBuffer as FrameBuffer
from .protocol import FrameError as FrameError
from .protocol import Request as Request
from .protocol import Response as Response
from .protocol import decode_request as decode_request
from .protocol import decode_response as decode_response
from .protocol import encode_request as encode_request
from .protocol import encode_response as encode_response
from .protocol import split_frames as split_frames
from .uuid import Uuid as Uuid

__version__: str

def compiled() -> bool:
    """True when the Cython-compiled codecs are in use (not the pure-Python fallback)."""

__all__ = [
    "ApiKey", "DecodeError", "EncodeError", "EncodeTypeError", "FrameBuffer", "FrameError", "KafkaProtoError",
    "RecordsError", "Request", "Response", "UnsupportedVersionError", "Uuid", "compiled", "decode_request",
    "decode_response", "encode_request", "encode_response", "errors", "split_frames",
]
