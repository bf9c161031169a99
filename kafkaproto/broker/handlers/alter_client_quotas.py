"""AlterClientQuotas (kafka-configs --alter --entity-type users/clients/ips): set or remove quotas of an
entity, checked as Kafka checks them (state/quotas.py: the entity, the keys it takes, values above 0 and whole
where Kafka's are), each entity on its own; those that pass are written to the metadata log together. An entity
named twice by one request is refused, and so is a key given twice; the answer names each entity once."""

from ... import errors
from ...messages import AlterClientQuotasResponse, ApiKey
from ..dispatch import handles
from ..state.acls import ALTER_CONFIGS, CLUSTER, CLUSTER_NAME
from ..state.quotas import entity_error, entity_key, value_error

Entry, Entity = AlterClientQuotasResponse.EntryData, AlterClientQuotasResponse.EntityData


def _duplicate(entity):
    shown = ", ".join(f"{kind}={name}" for kind, name in entity_key(entity))
    return f"Ignoring duplicate entity ClientQuotaEntity(entries={{{shown}}})"


def _problem(entity, ops):
    why = entity_error(entity)
    if why:
        return why
    keys = [op.key for op in ops]
    if len(set(keys)) < len(keys):
        return _duplicate(entity)
    for op in ops:
        why = value_error(entity, op.key, op.value) if not op.remove else None
        if why:
            return why
    return None


@handles(ApiKey.ALTER_CLIENT_QUOTAS, versions=range(0, 2))
def alter_client_quotas(ctx, request):
    allowed = ctx.allowed(ALTER_CONFIGS, CLUSTER, CLUSTER_NAME)
    # Kafka answers once per entity, however many entries name it; an entity named twice is refused.
    by_entity = {}
    for entry in request.entries:
        entity = list(dict((e.entity_type, e.entity_name) for e in entry.entity).items())
        by_entity.setdefault(entity_key(entity), []).append((entity, entry))
    results, changes = [], []
    for found in by_entity.values():
        entity, entry = found[0]
        if not allowed:
            error, message = errors.CLUSTER_AUTHORIZATION_FAILED, None
        else:
            message = _problem(entity, entry.ops) if len(found) == 1 else _duplicate(entity)
            error = errors.INVALID_REQUEST if message else errors.NONE
        if error is errors.NONE:
            changes += [(entity, op.key, op.value, op.remove) for op in entry.ops]
        results.append(Entry(error_code=error.code, error_message=message, entity=[
            Entity(entity_type=kind, entity_name=name) for kind, name in entity]))
    if changes and not request.validate_only:
        ctx.state.cluster.set_quotas(changes)
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=results)
