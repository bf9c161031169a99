"""AlterUserScramCredentials and DescribeUserScramCredentials: SCRAM users, kept in the metadata log.

An upsertion brings the salted password (never the password itself); the
broker keeps the stored and server keys derived from it. Iterations must be
4096 to 16384, as Kafka requires.
"""

from ... import errors
from ...messages import AlterUserScramCredentialsResponse, ApiKey, DescribeUserScramCredentialsResponse
from ...metadata import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from ..security import MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_CODES, SCRAM_NAMES, credential_from_salted

AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, versions=range(0, 1))
def alter_user_scram_credentials(ctx, request):
    state = ctx.state
    changes = [(d.name, d.mechanism, None) for d in request.deletions]
    changes += [(u.name, u.mechanism, u) for u in request.upsertions]
    counts = {}
    for name, _, _ in changes:
        counts[name] = counts.get(name, 0) + 1
    results, records = {}, []
    allowed = ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME)
    for name, mechanism, upsert in changes:
        if name in results:
            continue
        error, message = errors.NONE, None
        scram = SCRAM_NAMES.get(mechanism)
        if not allowed:
            error = errors.CLUSTER_AUTHORIZATION_FAILED
        elif counts[name] > 1:
            error, message = errors.DUPLICATE_RESOURCE, f"user {name!r} appears more than once in the request"
        elif not name:
            error, message = errors.UNACCEPTABLE_CREDENTIAL, "the user name is empty"
        elif scram is None:
            error, message = errors.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {mechanism}"
        elif upsert is None and (scram, name) not in state.credentials.scram:
            error, message = errors.RESOURCE_NOT_FOUND, f"no {scram} credential for user {name!r}"
        elif upsert is not None and not MIN_ITERATIONS <= upsert.iterations <= MAX_ITERATIONS:
            error, message = errors.UNACCEPTABLE_CREDENTIAL, (f"{upsert.iterations} iterations; {MIN_ITERATIONS} "
                                                              f"to {MAX_ITERATIONS} are accepted")
        elif upsert is not None and not upsert.salted_password:
            error, message = errors.UNACCEPTABLE_CREDENTIAL, "the salted password is empty"
        elif upsert is None:
            records.append(RemoveUserScramCredentialRecord(name=name, mechanism=mechanism))
        else:
            credential = credential_from_salted(scram, bytes(upsert.salted_password), bytes(upsert.salt),
                                                upsert.iterations)
            records.append(UserScramCredentialRecord(name=name, mechanism=mechanism, salt=credential.salt,
                                                     stored_key=credential.stored_key,
                                                     server_key=credential.server_key,
                                                     iterations=credential.iterations))
        results[name] = AlterResult(user=name, error_code=error.code, error_message=message)
    if records:
        state.cluster.set_scram(records)
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=list(results.values()))


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, versions=range(0, 1))
def describe_user_scram_credentials(ctx, request):
    R = DescribeUserScramCredentialsResponse
    if not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
        return R(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code, error_message=None,
                 results=[])
    known = {}
    for (mechanism, user), credential in ctx.state.credentials.scram.items():
        known.setdefault(user, []).append(R.CredentialInfo(mechanism=SCRAM_CODES[mechanism],
                                                           iterations=credential.iterations))
    users = sorted(known) if request.users is None else [u.name for u in request.users]
    results = []
    for user in users:
        if user in known:
            results.append(R.DescribeUserScramCredentialsResult(
                user=user, error_code=errors.NONE.code,
                credential_infos=sorted(known[user], key=lambda c: c.mechanism)))
        else:
            results.append(R.DescribeUserScramCredentialsResult(
                user=user, error_code=errors.RESOURCE_NOT_FOUND.code,
                error_message=f"no SCRAM credential for user {user!r}", credential_infos=[]))
    return R(throttle_time_ms=0, error_code=errors.NONE.code, results=results)
