"""One module per API: each takes the decoded request and a Context and returns the response.

Importing this package registers every handler with ``dispatch``.
"""

from . import (api_versions, create_partitions, create_topics, delete_topics, describe_cluster, fetch,  # noqa: F401
               find_coordinator, init_producer_id, list_offsets, metadata, offset_for_leader_epoch, produce)
