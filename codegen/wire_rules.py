"""Where Kafka's wire format departs from what the specs say.

Older specs do not say which header version frames each message (newer ones
may, in headerVersions), nor which responses are read at another version than
asked; Kafka's own generator and clients hard-code these rules, and so does
this module, once, with the reason.
The generated package carries the results (SpecInfo.header_versions and the
fallback version), so no runtime code repeats them.
"""

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


def header_version(spec, version):
    """(header version, reason or None) of a request or response spec at a version.

    A spec's own headerVersions (newer Kafka specs state them) wins over the rules below.
    """
    for versions, number in spec.header_map or ():
        if version in versions:
            return number, None
    flexible = version in spec.flexible
    if spec.type == "request":
        if spec.api_key == CONTROLLED_SHUTDOWN and version == 0:
            return 0, "ControlledShutdown v0 requests use header v0, with no client id: the API predates it"
        return (2 if flexible else 1), None
    if spec.api_key == API_VERSIONS:
        return 0, ("ApiVersions responses always use header v0: a client reads the reply before it knows "
                   "which versions (and so which headers) the broker speaks")
    return (1 if flexible else 0), None


def fallback_version(spec):
    """(version, reason) for a response a broker may write at another version than asked, else None."""
    if spec.type == "response" and spec.api_key == API_VERSIONS:
        return 0, ("a broker that lacks the requested ApiVersions version answers at version 0, with "
                   "UNSUPPORTED_VERSION and the versions it has, so the client can retry at one of them")
    return None
