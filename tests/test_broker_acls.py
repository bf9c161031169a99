"""Authorization without sockets: the decisions of Kafka's StandardAuthorizer (state/acls.py), the ACL
requests, ACLs kept across a restart, and requests refused as Kafka refuses them. What Kafka answers to the same
requests under the same ACLs is compared in test_broker_differential.py (test_acls_enforced)."""

import types

import pytest

from kafkaproto import decode_request, encode_request, errors
from kafkaproto.broker.config import STANDARD_AUTHORIZER
from kafkaproto.broker.dispatch import Close, Context, dispatch
from kafkaproto.broker.state import acls as A
from kafkaproto.broker.state.acls import Acl, Acls, Filter
from kafkaproto.messages import (CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, FindCoordinatorRequest,
                                 MetadataRequest, RequestHeader)

from test_broker_handlers import batch, make_state, produce

pytestmark = pytest.mark.above_the_codecs


def acl(name, operation=A.READ, permission=A.ALLOW, principal="User:alice", host="*", pattern=A.LITERAL,
        resource_type=A.TOPIC):
    return Acl(resource_type, name, pattern, principal, host, operation, permission)


def decisions(*acl_list, **options):
    acls = Acls(enabled=True, **options)
    for i, item in enumerate(acl_list):
        acls.add(i, item)
    return lambda operation, name, principal="User:alice", host="10.0.0.1", resource_type=A.TOPIC: acls.allowed(
        principal, host, operation, resource_type, name)


def test_literal_prefixed_and_wildcard_patterns():
    allowed = decisions(acl("orders"), acl("logs-", pattern=A.PREFIXED), acl("*", A.WRITE))
    assert allowed(A.READ, "orders") and not allowed(A.READ, "orders2")
    assert allowed(A.READ, "logs-app") and not allowed(A.READ, "log")
    assert allowed(A.WRITE, "anything") and not allowed(A.DELETE, "anything")


def test_deny_wins_and_all_matches_every_operation():
    allowed = decisions(acl("t", A.ALL), acl("t", A.WRITE, A.DENY))
    assert allowed(A.READ, "t") and allowed(A.ALTER_CONFIGS, "t") and not allowed(A.WRITE, "t")
    allowed = decisions(acl("t", A.ALL), acl("t", A.ALL, A.DENY, principal="User:*"))
    assert not allowed(A.READ, "t")


def test_what_an_allow_implies():
    allowed = decisions(acl("r", A.READ), acl("c", A.ALTER_CONFIGS), acl("d", A.READ), acl("d", A.DESCRIBE, A.DENY))
    assert allowed(A.DESCRIBE, "r") and not allowed(A.DESCRIBE_CONFIGS, "r")
    assert allowed(A.DESCRIBE_CONFIGS, "c") and not allowed(A.DESCRIBE, "c")
    assert not allowed(A.DESCRIBE, "d") and allowed(A.READ, "d")  # a DENY of DESCRIBE denies DESCRIBE alone


def test_principals_hosts_super_users_and_resources_no_acl_names():
    allowed = decisions(acl("t", host="10.0.0.1"), acl("u", principal="User:*"), super_users=["User:admin"])
    assert allowed(A.READ, "t") and not allowed(A.READ, "t", host="10.0.0.2")
    assert allowed(A.READ, "u", principal="User:bob") and not allowed(A.READ, "t", principal="User:bob")
    assert allowed(A.DELETE, "anything", principal="User:admin")
    assert not allowed(A.READ, "unnamed")  # no ACL names it: refused, unless allow.everyone.if.no.acl.found
    open_if_none = decisions(acl("t"), allow_if_none=True)
    assert open_if_none(A.READ, "unnamed", principal="User:bob") and not open_if_none(A.READ, "t", principal="User:bob")


def test_authorized_on_some_resource_of_a_type():
    acls = Acls(enabled=True)
    acls.add(1, acl("orders", A.WRITE))
    assert acls.allowed_on_any("User:alice", "h", A.WRITE, A.TOPIC)
    acls.add(2, acl("ord", A.WRITE, A.DENY, pattern=A.PREFIXED))
    assert not acls.allowed_on_any("User:alice", "h", A.WRITE, A.TOPIC)
    assert not acls.allowed_on_any("User:bob", "h", A.WRITE, A.TOPIC)


def test_filters_as_kafka_matches_them():
    literal, prefixed, wildcard = acl("orders"), acl("ord", pattern=A.PREFIXED), acl("*")
    every = Filter(A.ANY, None, A.ANY, None, None, A.ANY, A.ANY)
    assert all(every.matches(x) for x in (literal, prefixed, wildcard))
    match = every._replace(resource_name="orders", pattern_type=A.MATCH)
    assert all(match.matches(x) for x in (literal, prefixed, wildcard))
    exact = every._replace(resource_name="orders")
    assert exact.matches(literal) and not exact.matches(prefixed) and not exact.matches(wildcard)
    assert not every._replace(principal="User:bob").matches(literal)
    assert not every._replace(operation=A.WRITE).matches(literal)


def call_as(state, principal, body, version):
    """A request from principal, through the codecs, as the server hands it to the handler."""
    header = RequestHeader(request_api_key=body.api_key, request_api_version=version, correlation_id=1,
                           client_id="tests")
    request = decode_request(encode_request(header, body, version)[4:])
    session = types.SimpleNamespace(principal=principal, listener=state.advertised[0])
    response = dispatch(Context(state, request.header, final=True, session=session, client_host="/10.0.0.1"),
                        request.body)
    if isinstance(response, Close):
        return response
    return type(response).decode(response.encode(version), version)


def authorizing(tmp_path, **more):
    return make_state(tmp_path, **{"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin",
                                   **more})


def creation(name, operation, permission=A.ALLOW, principal="User:alice", resource_type=A.TOPIC,
             pattern=A.LITERAL):
    return CreateAclsRequest.AclCreation(resource_type=resource_type, resource_name=name,
                                         resource_pattern_type=pattern, principal=principal, host="*",
                                         operation=operation, permission_type=permission)


EVERY = dict(resource_type_filter=A.ANY, resource_name_filter=None, pattern_type_filter=A.ANY,
             principal_filter=None, host_filter=None, operation=A.ANY, permission_type=A.ANY)


def listed(state, principal="User:admin", **narrower):
    response = call_as(state, principal, DescribeAclsRequest(**{**EVERY, **narrower}), 3)
    return response.error_code, sorted((r.resource_name, a.principal, a.operation, a.permission_type)
                                       for r in response.resources for a in r.acls)


def test_acl_requests_and_acls_kept_across_a_restart(tmp_path):
    state = authorizing(tmp_path)
    made = call_as(state, "User:admin", CreateAclsRequest(creations=[
        creation("orders", A.READ), creation("orders", A.READ), creation("logs-", A.WRITE, pattern=A.PREFIXED),
        creation("", A.READ), creation("t", 16), creation("t", A.READ, principal="alice"),
        creation("other", A.READ, resource_type=A.CLUSTER)]), 3)
    assert [r.error_code for r in made.results] == [0, 0, 0] + [errors.INVALID_REQUEST.code] * 4
    # ANY cannot be an ACL's: the whole request fails, as in Kafka; UNKNOWN (0) cannot be read at all
    failed = call_as(state, "User:admin", CreateAclsRequest(creations=[creation("t", A.READ),
                                                                        creation("t", A.ANY)]), 3)
    assert [r.error_code for r in failed.results] == [errors.UNKNOWN_SERVER_ERROR.code] * 2
    assert isinstance(call_as(state, "User:admin", CreateAclsRequest(creations=[creation("t", 0)]), 3), Close)
    assert listed(state) == (0, [("logs-", "User:alice", A.WRITE, A.ALLOW), ("orders", "User:alice", A.READ, A.ALLOW)])
    assert listed(state, resource_name_filter="orders-eu", pattern_type_filter=A.MATCH) == (0, [])
    assert listed(state, resource_name_filter="logs-app", pattern_type_filter=A.MATCH)[1][0][0] == "logs-"
    assert listed(state, operation=16) == (0, [])  # a code Kafka does not know matches nothing
    # only a principal with the right on the cluster may list or change ACLs
    assert listed(state, "User:alice") == (errors.CLUSTER_AUTHORIZATION_FAILED.code, [])
    state.close()
    state = authorizing(tmp_path)
    assert len(listed(state)[1]) == 2
    deleted = call_as(state, "User:admin", DeleteAclsRequest(filters=[
        DeleteAclsRequest.DeleteAclsFilter(**{**EVERY, "resource_name_filter": "orders"})]), 3)
    assert [(m.resource_name, m.operation) for m in deleted.filter_results[0].matching_acls] == [("orders", A.READ)]
    state.close()
    state = authorizing(tmp_path)
    assert [r[0] for r in listed(state)[1]] == ["logs-"]
    state.close()


def test_acl_requests_without_an_authorizer_are_security_disabled(tmp_path):
    state = make_state(tmp_path)
    assert listed(state)[0] == errors.SECURITY_DISABLED.code
    made = call_as(state, "User:admin", CreateAclsRequest(creations=[creation("t", A.READ)]), 3)
    assert made.results[0].error_code == errors.SECURITY_DISABLED.code
    state.close()


def test_requests_are_refused_what_the_acls_do_not_allow(tmp_path):
    state = authorizing(tmp_path)
    state.cluster.create_topic("open", 1)
    state.cluster.create_topic("closed", 1)
    call_as(state, "User:admin", CreateAclsRequest(creations=[
        creation("open", A.WRITE), creation("open", A.READ, principal="User:bob"),
        creation("g", A.READ, resource_type=A.GROUP)]), 3)

    def produced(principal, topic):
        from kafkaproto.messages import ProduceRequest
        body = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(b"v"))])])
        return call_as(state, principal, body, 9).responses[0].partition_responses[0].error_code

    assert produced("User:alice", "open") == 0
    assert produced("User:alice", "closed") == errors.TOPIC_AUTHORIZATION_FAILED.code
    assert produced("User:alice", "missing") == errors.TOPIC_AUTHORIZATION_FAILED.code  # existence is not told
    assert produced("User:bob", "open") == errors.TOPIC_AUTHORIZATION_FAILED.code
    assert produce(state, batch(b"v"), topic="open").error_code == errors.TOPIC_AUTHORIZATION_FAILED.code  # anonymous
    # Metadata lists only what a principal may describe, and says so of what it asked for
    everything = call_as(state, "User:alice", MetadataRequest(topics=None), 12)
    assert [t.name for t in everything.topics] == ["open"]
    asked = call_as(state, "User:alice", MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="closed"),
                                                                 MetadataRequest.MetadataRequestTopic(name="nope")],
                                                         allow_auto_topic_creation=True), 12)
    assert [(t.name, t.error_code) for t in asked.topics] == [("closed", errors.TOPIC_AUTHORIZATION_FAILED.code),
                                                              ("nope", errors.TOPIC_AUTHORIZATION_FAILED.code)]
    assert "nope" not in state.cluster.topics
    found = call_as(state, "User:alice", FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]), 4)
    assert [c.error_code for c in found.coordinators] == [0, errors.GROUP_AUTHORIZATION_FAILED.code]
    state.close()
