"""Before a replay: the topics the capture uses but does not create itself, created on the target as the capture
shows them (partition count, replication factor where the target has the brokers for it, the configs a captured
DescribeConfigs answer shows set on the topic), and waited for until every partition has a leader.

It asks the target on a connection of its own (``Setup.KEY``): ApiVersions (to pick versions both know), Metadata
(what exists already: a topic the target has is left as it is, and its offsets may then differ from the capture's;
see rewrite's shifts), CreateTopics for the rest, then Metadata until they are ready. Nothing here does I/O.
"""

from .. import errors
from ..connection import ClientConnection, ProtocolError, ResponseReceived
from ..messages import (ApiKey, ApiVersionsRequest, CreateTopicsRequest, MetadataRequest, RequestHeader)

_READY_TIMEOUT = 30.0  # seconds to wait for the created topics' leaders
_ANSWER_TIMEOUT = 30.0  # seconds to wait for any one answer
_POLL = 0.2


class Setup:
    KEY = "setup"

    def __init__(self, plan):
        self.plan = plan
        self.done = False
        self.wakeup = None
        self.versions = {}  # api key -> (min, max) the target serves
        self.brokers = []  # the target's MetadataResponseBroker list
        self.topic_ids = {}  # name -> the target's topic id, for the topics it has
        self.created, self.existing, self.failed = [], [], {}  # failed: name -> why
        self.error = None  # why setting up stopped, if it did
        self._client = ClientConnection()
        self._next_id = 0
        self._waiting = None  # what the answer awaited is for
        self._deadline = None  # for the topics to be ready
        self.now = None

    # ---- the replayer's side ----

    def start(self, now):
        self.now = now
        return [("connect", self.KEY, None), *self._ask("versions", ApiVersionsRequest(), ApiKey.API_VERSIONS, 0)]

    def received(self, data, now):
        self.now = now
        try:
            events = self._client.receive_data(data)
        except ProtocolError as e:
            return self._stop(f"the target's answer cannot be read: {e}")
        out = []
        for event in events:
            if isinstance(event, ResponseReceived):
                out.extend(self._answer(event.body, now))
        return out

    def lost(self, reason, now):
        return self._stop(f"the connection for setting up closed: {reason}") if not self.done else []

    def tick(self, now):
        self.now = now
        if self.done or self.wakeup is None or now < self.wakeup:
            return []
        self.wakeup = None
        if self._waiting is not None:
            return self._stop(f"no answer to setting up's {self._waiting} request within {_ANSWER_TIMEOUT:g} s")
        return self._metadata("ready", self.created)

    # ---- the conversation ----

    def _answer(self, body, now):
        what, self._waiting = self._waiting, None
        self.wakeup = None
        if what == "versions":
            if body.error_code:
                return self._stop(f"ApiVersions answered {errors.by_code(body.error_code).name}")
            self.versions = {v.api_key: (v.min_version, v.max_version) for v in body.api_keys}
            return self._metadata("existing", None)
        if what == "existing":
            self.brokers = list(body.brokers)
            have = {t.name: t.topic_id for t in body.topics if t.name and t.error_code == 0}
            for name in self.plan.topics:
                if name in have:
                    self.existing.append(name)
            self.topic_ids.update(have)
            missing = [self.plan.topics[name] for name in sorted(self.plan.topics) if name not in have]
            if not missing:
                return self._finish()
            return self._create(missing)
        if what == "create":
            for result in body.topics:
                if result.error_code == 0:
                    self.created.append(result.name)
                elif result.error_code == errors.TOPIC_ALREADY_EXISTS.code:
                    self.existing.append(result.name)
                else:
                    self.failed[result.name] = (f"{errors.by_code(result.error_code).name}"
                                                + (f": {result.error_message}" if result.error_message else ""))
            if not self.created:
                return self._finish()
            self._deadline = now + _READY_TIMEOUT
            return self._metadata("ready", self.created)
        if what == "ready":
            ready = all(t.error_code == 0 and t.partitions and all(p.leader_id >= 0 and p.error_code == 0
                                                                   for p in t.partitions) for t in body.topics)
            self.topic_ids.update({t.name: t.topic_id for t in body.topics if t.error_code == 0})
            if ready:
                return self._finish()
            if now >= self._deadline:
                self.error = f"topics not ready within {_READY_TIMEOUT:g} s: {', '.join(self.created)}"
                return self._finish()
            self.wakeup = now + _POLL
        return []

    def _finish(self):
        self.done = True
        self.wakeup = None
        return []

    def _stop(self, reason):
        self.error = reason
        return self._finish()

    # ---- requests ----

    def _version(self, key, highest):
        low, high = self.versions.get(key, (0, -1))
        version = min(high, highest)
        return version if version >= low else None

    def _ask(self, what, body, key, version):
        """The actions sending one request, whose answer is for what."""
        self._waiting = what
        header = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=self._next_id,
                               client_id="kafkaproto-replay-setup")
        self._next_id += 1
        self.wakeup = self.now + _ANSWER_TIMEOUT
        return [("send", self.KEY, self._client.send_request(header, body))]

    def _metadata(self, what, names):
        version = self._version(ApiKey.METADATA, 12)
        if version is None or version < 1:
            return self._stop("the target does not serve Metadata v1 or later")
        topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
        return self._ask(what, MetadataRequest(topics=topics, allow_auto_topic_creation=False), ApiKey.METADATA,
                         version)

    def _create(self, topics):
        version = self._version(ApiKey.CREATE_TOPICS, 7)
        if version is None:
            return self._stop("the target does not serve CreateTopics")
        brokers = len(self.brokers)
        creatable = []
        for topic in topics:
            replication = topic.replication_factor
            if not 0 < replication <= brokers:
                replication = -1 if version >= 4 else 1
            creatable.append(CreateTopicsRequest.CreatableTopic(
                name=topic.name, num_partitions=topic.partitions, replication_factor=replication,
                configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                         for k, v in sorted(topic.configs.items())]))
        return self._ask("create", CreateTopicsRequest(topics=creatable, timeout_ms=30000), ApiKey.CREATE_TOPICS,
                         version)
