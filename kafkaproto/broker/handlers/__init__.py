"""One module per API: each takes the decoded request and a Context and returns the response.

Importing this package registers every handler with ``dispatch``.
"""

from . import (api_versions, create_partitions, create_topics, delete_groups, delete_topics,  # noqa: F401
               describe_cluster, describe_groups, fetch, find_coordinator, heartbeat, init_producer_id, join_group,
               leave_group, list_groups, list_offsets, metadata, offset_commit, offset_fetch, offset_for_leader_epoch,
               produce, sync_group)
