"""Access control lists and the decisions Kafka's StandardAuthorizer makes from them.

An ACL allows or denies one principal ("User:alice", or "User:*" for every user), from one host (or "*"), one
operation on the resources a pattern names: a literal name ("*" is every resource of the type) or a prefix.
Deciding whether a principal may do an operation on a resource:

- a super user (``super.users``) may do everything;
- a matching DENY wins over any ALLOW; ALL matches every operation;
- an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and ALTER_CONFIGS allows DESCRIBE_CONFIGS;
- a resource no ACL names at all (for any principal) is allowed only under ``allow.everyone.if.no.acl.found``.

Filters (DescribeAcls, DeleteAcls) match as Kafka's AclBindingFilter does: ANY matches every value of a field
and a null name or principal every one; the MATCH pattern type selects the ACLs that apply to one resource name.
The ACLs themselves live in the metadata log (state/cluster.py applies the records to an Acls).
"""

from typing import NamedTuple

# Kafka's codes (org.apache.kafka.common.resource, .acl)
UNKNOWN, ANY = 0, 1
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION = 2, 3, 4, 5, 6, 7, 8, 9
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS, TWO_PHASE_COMMIT = range(10, 16)
DENY, ALLOW = 2, 3
RESOURCE_TYPES = frozenset({TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER})
OPERATIONS = frozenset(range(ALL, TWO_PHASE_COMMIT + 1))
# The codes Kafka knows, ANY (and MATCH) included: a greater one reads as its UNKNOWN.
KNOWN = {"resource_type": USER, "pattern_type": PREFIXED, "operation": TWO_PHASE_COMMIT, "permission_type": ALLOW}
WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"
# What an ALLOW of an operation also allows.
IMPLIED = {DESCRIBE: (READ, WRITE, DELETE, ALTER), DESCRIBE_CONFIGS: (ALTER_CONFIGS,)}


class Acl(NamedTuple):
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def names(self, resource_name):
        """Whether the pattern covers a resource of its type named resource_name."""
        if self.pattern_type == LITERAL:
            return self.resource_name in (resource_name, WILDCARD)
        return resource_name.startswith(self.resource_name)


class Filter(NamedTuple):
    """An AclBindingFilter: which ACLs DescribeAcls lists and DeleteAcls removes."""
    resource_type: int
    resource_name: str  # None: any
    pattern_type: int
    principal: str  # None: any
    host: str  # None: any
    operation: int
    permission_type: int

    def matches(self, acl):
        if self.resource_type not in (ANY, acl.resource_type):
            return False
        if self.pattern_type not in (ANY, MATCH, acl.pattern_type):
            return False
        if self.resource_name is not None:
            if self.pattern_type in (ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif not acl.names(self.resource_name):
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (ANY, acl.operation) and self.permission_type in (ANY, acl.permission_type))


def principal_error(principal):
    """Why principal is not a Kafka principal ("Type:name"), or None."""
    kind, colon, name = (principal or "").partition(":")
    if not colon or not kind or not name:
        return f"{principal!r} is not a principal (Type:name, such as User:alice)"
    return None


class Acls:
    """The ACLs by id, and the decisions made from them; enabled only when the broker has an authorizer."""

    def __init__(self, enabled=False, super_users=(), allow_if_none=False):
        self.enabled = enabled
        self.super_users = frozenset(super_users)
        self.allow_if_none = allow_if_none
        self.by_id = {}  # Uuid -> Acl

    def add(self, acl_id, acl):
        self.by_id[acl_id] = acl

    def remove(self, acl_id):
        self.by_id.pop(acl_id, None)

    def matching(self, acl_filter):
        """[(id, Acl)] that the filter selects, in the order they were made."""
        return [(acl_id, acl) for acl_id, acl in self.by_id.items() if acl_filter.matches(acl)]

    def allowed(self, principal, host, operation, resource_type, resource_name):
        """Whether principal, connected from host, may do operation on the resource (always, without an
        authorizer)."""
        if not self.enabled or principal in self.super_users:
            return True
        found_any = False
        allowed = False
        wanted = (operation, *IMPLIED.get(operation, ()))
        for acl in self.by_id.values():
            if acl.resource_type != resource_type or not acl.names(resource_name):
                continue
            found_any = True
            if acl.principal not in (principal, "User:*") or acl.host not in (host, WILDCARD):
                continue
            if acl.permission_type == DENY:
                if acl.operation in (ALL, operation):
                    return False
            elif acl.operation == ALL or acl.operation in wanted:
                allowed = True
        return allowed if found_any else self.allow_if_none

    def allowed_on_any(self, principal, host, operation, resource_type):
        """Whether principal may do operation on some resource of the type, as Kafka's authorizeByResourceType
        decides (an idempotent producer needs WRITE on any topic): allowed on a resource no pattern singles
        out, or by an ALLOW whose pattern no DENY covers."""
        if not self.enabled or self.allowed(principal, host, operation, resource_type, "hardcode"):
            return True

        def applies(acl):
            return (acl.resource_type == resource_type and acl.principal in (principal, "User:*")
                    and acl.host in (host, WILDCARD) and acl.operation in (ALL, operation))
        denies = [acl for acl in self.by_id.values() if acl.permission_type == DENY and applies(acl)]
        if any(d.pattern_type == LITERAL and d.resource_name == WILDCARD for d in denies):
            return False
        for acl in self.by_id.values():
            if acl.permission_type == ALLOW and applies(acl) and not any(
                    (d.pattern_type == acl.pattern_type and d.resource_name == acl.resource_name)
                    or (d.pattern_type == PREFIXED and acl.resource_name.startswith(d.resource_name))
                    for d in denies):
                return True
        return False
