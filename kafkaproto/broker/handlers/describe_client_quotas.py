"""DescribeClientQuotas (kafka-configs --describe --entity-type users/clients/ips): the quotas of the entities a
filter selects. Each component matches one entity type: a name exactly (0), the default (1), or any name, the
default too (2: the type is there); strict asks for entities of exactly those types, else entities that have
them among others. A filter that names a type twice, mixes IPs with users or client ids, or misuses a match is
refused whole."""

from ... import errors
from ...messages import ApiKey, DescribeClientQuotasResponse
from ..dispatch import handles
from ..state.acls import CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS
from ..state.quotas import CLIENT_ID, IP, USER

R = DescribeClientQuotasResponse
EXACT, DEFAULT, ANY_NAME = 0, 1, 2


def _filter_error(components):
    seen = set()
    for c in components:
        if c.entity_type not in (USER, CLIENT_ID, IP):
            return errors.UNSUPPORTED_VERSION, f"Unsupported entity type {c.entity_type}"
        if c.entity_type in seen:
            return errors.INVALID_REQUEST, f"Entity type {c.entity_type} cannot appear more than once in the filter."
        seen.add(c.entity_type)
        if c.match_type == EXACT and c.match is None:
            return errors.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."
        if c.match_type == DEFAULT and c.match is not None:
            return errors.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
        if c.match_type not in (EXACT, DEFAULT, ANY_NAME):
            return errors.INVALID_REQUEST, f"Unknown match type {c.match_type}"
    if IP in seen and len(seen) > 1:
        return errors.INVALID_REQUEST, ("Invalid entity filter component combination. IP filter component should "
                                        "not be used with user or clientId filter component.")
    return None


def _matches(entity, components, strict):
    entity = dict(entity)
    if strict and set(entity) != {c.entity_type for c in components}:
        return False
    for c in components:
        if c.entity_type not in entity:
            return False
        name = entity[c.entity_type]
        if (c.match_type == EXACT and name != c.match) or (c.match_type == DEFAULT and name is not None):
            return False
    return True


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, versions=range(0, 2))
def describe_client_quotas(ctx, request):
    if not ctx.allowed(DESCRIBE_CONFIGS, CLUSTER, CLUSTER_NAME):
        return R(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=None,
                 entries=None)
    refused = _filter_error(request.components)
    if refused:
        error, message = refused
        return R(throttle_time_ms=0, error_code=error.code, error_message=message, entries=None)
    entries = [R.EntryData(entity=[R.EntityData(entity_type=kind, entity_name=name) for kind, name in entity],
                           values=[R.ValueData(key=key, value=value) for key, value in values.items()])
               for entity, values in ctx.state.cluster.quotas.by_entity.items()
               if _matches(entity, request.components, request.strict)]
    return R(throttle_time_ms=0, error_code=errors.NONE.code, error_message=None, entries=entries)
