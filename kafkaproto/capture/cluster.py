"""The topic names a live cluster gives (``kafkaproto capture --bootstrap-server``, Spark's option
``bootstrapServers``): what names the topic IDs of traffic that holds no Metadata answer of its own. The one place
the capture package opens a socket: a PLAINTEXT connection, ApiVersions, then Metadata of every topic."""

import socket

from ..connection import ClientConnection
from ..messages import ApiKey, ApiVersionsRequest, MetadataRequest, RequestHeader
from ..registry import api

FIRST_WITH_IDS = 10  # Metadata gives topic IDs from v10


class ClusterError(ValueError):
    """The cluster could not be asked, with why."""


def topic_names_of(bootstrap, timeout=30):
    """{topic id: name} of every topic the cluster at bootstrap ("host:port") lists; ClusterError when it cannot
    be asked or does not give topic IDs."""
    host, _, port = bootstrap.rpartition(":")
    try:
        sock = socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout)
    except (OSError, ValueError) as e:
        raise ClusterError(f"cannot connect to {bootstrap}: {e}") from None
    connection = ClientConnection()
    try:
        versions = _call(sock, connection, bootstrap, ApiVersionsRequest(
            client_software_name="kafkaproto", client_software_version="names"), 3, 1)
        theirs = next((k for k in versions.api_keys if k.api_key == ApiKey.METADATA), None)
        ours = api(ApiKey.METADATA).valid_versions
        version = min(ours.stop - 1, theirs.max_version) if theirs is not None else -1
        if version < FIRST_WITH_IDS:
            raise ClusterError(f"{bootstrap} does not give topic IDs in Metadata (v{FIRST_WITH_IDS} or later)")
        answer = _call(sock, connection, bootstrap, MetadataRequest(topics=None, allow_auto_topic_creation=False),
                       version, 2)
    finally:
        sock.close()
    return {t.topic_id: t.name for t in answer.topics if t.error_code == 0 and t.name}


def _call(sock, connection, bootstrap, body, version, correlation_id):
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=correlation_id,
                           client_id="kafkaproto-names")
    try:
        sock.sendall(connection.send_request(header, body))
        while True:
            data = sock.recv(1 << 16)
            if not data:
                raise ClusterError(f"{bootstrap} closed the connection")
            for event in connection.receive_data(data):
                return event.body
    except OSError as e:
        raise ClusterError(f"{bootstrap}: {e}") from None
