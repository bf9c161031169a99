"""One module per API: each takes the decoded request and a Context and returns the response.

Importing this package registers every handler with ``dispatch``.
"""

from . import (  # noqa: F401
    add_offsets_to_txn, add_partitions_to_txn, add_raft_voter, alter_client_quotas, alter_configs,
    alter_partition_reassignments, alter_replica_log_dirs, alter_share_group_offsets, api_versions,
    consumer_group_describe, consumer_group_heartbeat, create_acls, create_delegation_token, create_partitions,
    create_topics, delete_acls, delete_groups, delete_partitions, delete_records, delete_share_group_offsets,
    delete_share_group_state, delete_topics, describe_acls, describe_client_quotas, describe_cluster,
    describe_configs, describe_delegation_token, describe_groups, describe_log_dirs, describe_producers,
    describe_quorum, describe_share_group_offsets, describe_topic_partitions, describe_transactions, elect_leaders,
    end_txn, expire_delegation_token, fetch, find_coordinator, get_telemetry_subscriptions, heartbeat,
    incremental_alter_configs, init_producer_id, initialize_share_group_state, join_group, leave_group,
    list_config_resources, list_groups, list_offsets, list_partition_reassignments, list_transactions, metadata,
    offset_commit, offset_delete, offset_fetch, offset_for_leader_epoch, produce, push_telemetry,
    read_share_group_state, read_share_group_state_summary, remove_raft_voter, renew_delegation_token,
    sasl_authenticate, sasl_handshake, scram_credentials, share_acknowledge, share_fetch, share_group_describe,
    share_group_heartbeat, streams_group_describe, streams_group_heartbeat, sync_group, txn_offset_commit,
    unregister_broker, update_features, write_share_group_state, write_txn_markers)
