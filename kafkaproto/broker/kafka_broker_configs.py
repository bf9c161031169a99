"""Every broker config Apache Kafka 4.3.1 describes: the keys of its KafkaConfig that are not internal.

Each line: the key; its type; whether Kafka changes it while running, for one broker ("per-broker") or for every
broker at once ("cluster-wide"), or reads it only at start ("read-only"); its default as DescribeConfigs shows it
("-" when it has none, '' when it is empty); and, if Kafka checks the value, how: a range ("1.." at least 1,
"0..1", "1..9|-1" also -1), the values allowed ("a|b", "any-case:" when case does not matter), or "non-empty".

DescribeConfigs of a broker lists every one of them, as Kafka does. config.py defines the settings this broker acts
on; the others are checked as Kafka checks them, kept as given, shown with Kafka's default, and do nothing here.
"""

from dataclasses import dataclass

READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"


@dataclass(frozen=True)
class KafkaBrokerConfig:
    type: str  # Kafka's ConfigDef type: BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS or PASSWORD
    mode: str  # READ_ONLY, PER_BROKER or CLUSTER_WIDE
    default: str = None  # as text; None when there is none
    at_least: object = None
    at_most: object = None
    also: tuple = ()  # values allowed outside the range
    one_of: tuple = None
    ignore_case: bool = False
    non_empty: bool = False


_TABLE = """\
add.partitions.to.txn.retry.backoff.max.ms                  INT      read-only    100 0..
add.partitions.to.txn.retry.backoff.ms                      INT      read-only    20 1..
advertised.listeners                                        LIST     read-only    -
alter.config.policy.class.name                              CLASS    read-only    -
alter.log.dirs.replication.quota.window.num                 INT      read-only    11 1..
alter.log.dirs.replication.quota.window.size.seconds        INT      read-only    1 1..
authorizer.class.name                                       STRING   read-only    ''
auto.create.topics.enable                                   BOOLEAN  read-only    true
auto.leader.rebalance.enable                                BOOLEAN  read-only    true
background.threads                                          INT      cluster-wide 10 1..
broker.heartbeat.interval.ms                                INT      read-only    2000
broker.id                                                   INT      read-only    -1
broker.rack                                                 STRING   read-only    -
broker.session.timeout.ms                                   INT      read-only    9000
client.quota.callback.class                                 CLASS    read-only    -
compression.gzip.level                                      INT      cluster-wide -1 1..9|-1
compression.lz4.level                                       INT      cluster-wide 9 1..17
compression.type                                            STRING   cluster-wide producer uncompressed|zstd|lz4|snappy|gzip|producer
compression.zstd.level                                      INT      cluster-wide 3 -131072..22
config.providers                                            LIST     cluster-wide ''
connection.failed.authentication.delay.ms                   INT      read-only    100 0..
connections.max.idle.ms                                     LONG     read-only    600000
connections.max.reauth.ms                                   LONG     read-only    0
controlled.shutdown.enable                                  BOOLEAN  read-only    true
controller.listener.names                                   LIST     read-only    -
controller.quorum.append.linger.ms                          INT      read-only    25 0..
controller.quorum.auto.join.enable                          BOOLEAN  read-only    false
controller.quorum.bootstrap.servers                         LIST     read-only    ''
controller.quorum.election.backoff.max.ms                   INT      read-only    1000 0..
controller.quorum.election.timeout.ms                       INT      read-only    1000 0..
controller.quorum.fetch.max.bytes                           INT      read-only    1048576 1..
controller.quorum.fetch.snapshot.max.bytes                  INT      read-only    1048576 1..
controller.quorum.fetch.timeout.ms                          INT      read-only    2000 0..
controller.quorum.request.timeout.ms                        INT      read-only    2000 0..
controller.quorum.retry.backoff.ms                          INT      read-only    20 0..
controller.quorum.voters                                    LIST     read-only    ''
controller.quota.window.num                                 INT      read-only    11 1..
controller.quota.window.size.seconds                        INT      read-only    1 1..
controller.socket.timeout.ms                                INT      read-only    30000
cordoned.log.dirs                                           LIST     per-broker   ''
create.topic.policy.class.name                              CLASS    read-only    -
default.replication.factor                                  INT      read-only    1
delegation.token.expiry.check.interval.ms                   LONG     read-only    3600000 1..
delegation.token.expiry.time.ms                             LONG     read-only    86400000 1..
delegation.token.max.lifetime.ms                            LONG     read-only    604800000 1..
delegation.token.secret.key                                 PASSWORD read-only    -
delete.records.purgatory.purge.interval.requests            INT      read-only    1
delete.topic.enable                                         BOOLEAN  read-only    true
early.start.listeners                                       LIST     read-only    -
fetch.max.bytes                                             INT      read-only    57671680 1024..
fetch.purgatory.purge.interval.requests                     INT      read-only    1000
follower.fetch.last.tiered.offset.enable                    BOOLEAN  cluster-wide false
group.consumer.assignment.interval.ms                       INT      cluster-wide 1000 0..
group.consumer.assignors                                    LIST     read-only    uniform,range
group.consumer.heartbeat.interval.ms                        INT      read-only    5000 1..
group.consumer.max.assignment.interval.ms                   INT      read-only    15000 0..
group.consumer.max.heartbeat.interval.ms                    INT      read-only    15000 1..
group.consumer.max.session.timeout.ms                       INT      read-only    60000 1..
group.consumer.max.size                                     INT      read-only    2147483647 1..
group.consumer.migration.policy                             STRING   read-only    bidirectional any-case:DISABLED|DOWNGRADE|UPGRADE|BIDIRECTIONAL
group.consumer.min.assignment.interval.ms                   INT      read-only    0 0..
group.consumer.min.heartbeat.interval.ms                    INT      read-only    5000 1..
group.consumer.min.session.timeout.ms                       INT      read-only    45000 1..
group.consumer.session.timeout.ms                           INT      read-only    45000 1..
group.coordinator.append.linger.ms                          INT      read-only    -1 -1..
group.coordinator.background.threads                        INT      read-only    2 1..
group.coordinator.cached.buffer.max.bytes                   INT      cluster-wide 1048588 524288..
group.coordinator.rebalance.protocols                       LIST     read-only    classic,consumer,streams consumer|classic|share|streams
group.coordinator.threads                                   INT      read-only    4 1..
group.initial.rebalance.delay.ms                            INT      read-only    3000
group.max.session.timeout.ms                                INT      read-only    1800000
group.max.size                                              INT      read-only    2147483647 1..
group.min.session.timeout.ms                                INT      read-only    6000
group.share.assignment.interval.ms                          INT      cluster-wide 1000 0..
group.share.assignors                                       LIST     read-only    simple
group.share.delivery.count.limit                            INT      read-only    5 2..10
group.share.heartbeat.interval.ms                           INT      read-only    5000 1..
group.share.max.assignment.interval.ms                      INT      read-only    15000 0..
group.share.max.delivery.count.limit                        INT      read-only    10 5..25
group.share.max.heartbeat.interval.ms                       INT      read-only    15000 1..
group.share.max.partition.max.record.locks                  INT      read-only    4000 2000..10000
group.share.max.record.lock.duration.ms                     INT      read-only    60000 30000..3600000
group.share.max.session.timeout.ms                          INT      read-only    60000 1..
group.share.max.share.sessions                              INT      read-only    2000 1..
group.share.max.size                                        INT      read-only    200 1..1000
group.share.min.assignment.interval.ms                      INT      read-only    0 0..
group.share.min.delivery.count.limit                        INT      read-only    2 2..5
group.share.min.heartbeat.interval.ms                       INT      read-only    5000 1..
group.share.min.partition.max.record.locks                  INT      read-only    100 100..2000
group.share.min.record.lock.duration.ms                     INT      read-only    15000 1000..30000
group.share.min.session.timeout.ms                          INT      read-only    45000 1..
group.share.partition.max.record.locks                      INT      read-only    2000 100..10000
group.share.record.lock.duration.ms                         INT      read-only    30000 1000..3600000
group.share.session.timeout.ms                              INT      read-only    45000 1..
group.streams.assignment.interval.ms                        INT      cluster-wide 1000 0..
group.streams.heartbeat.interval.ms                         INT      read-only    5000 1..
group.streams.initial.rebalance.delay.ms                    INT      read-only    3000 0..
group.streams.max.assignment.interval.ms                    INT      read-only    15000 0..
group.streams.max.heartbeat.interval.ms                     INT      read-only    15000 1..
group.streams.max.session.timeout.ms                        INT      read-only    60000 1..
group.streams.max.size                                      INT      read-only    2147483647 1..
group.streams.max.standby.replicas                          INT      read-only    2 0..
group.streams.min.assignment.interval.ms                    INT      read-only    0 0..
group.streams.min.heartbeat.interval.ms                     INT      read-only    5000 1..
group.streams.min.session.timeout.ms                        INT      read-only    45000 1..
group.streams.num.standby.replicas                          INT      read-only    0 0..
group.streams.session.timeout.ms                            INT      read-only    45000 1..
initial.broker.registration.timeout.ms                      INT      read-only    60000
inter.broker.listener.name                                  STRING   read-only    -
kafka.metrics.polling.interval.secs                         INT      read-only    10 1..
kafka.metrics.reporters                                     LIST     read-only    ''
leader.imbalance.check.interval.seconds                     LONG     read-only    300 1..
listener.security.protocol.map                              STRING   per-broker   SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
listeners                                                   LIST     per-broker   PLAINTEXT://:9092
log.cleaner.backoff.ms                                      LONG     cluster-wide 15000 0..
log.cleaner.dedupe.buffer.size                              LONG     cluster-wide 134217728
log.cleaner.delete.retention.ms                             LONG     cluster-wide 86400000 0..
log.cleaner.enable                                          BOOLEAN  read-only    true
log.cleaner.io.buffer.load.factor                           DOUBLE   cluster-wide 0.9
log.cleaner.io.buffer.size                                  INT      cluster-wide 524288 0..
log.cleaner.io.max.bytes.per.second                         DOUBLE   cluster-wide 1.7976931348623157E308
log.cleaner.max.compaction.lag.ms                           LONG     cluster-wide 9223372036854775807 1..
log.cleaner.min.cleanable.ratio                             DOUBLE   cluster-wide 0.5 0..1
log.cleaner.min.compaction.lag.ms                           LONG     cluster-wide 0 0..
log.cleaner.threads                                         INT      cluster-wide 1 0..
log.cleanup.policy                                          LIST     cluster-wide delete compact|delete
log.dir                                                     LIST     read-only    /tmp/kafka-logs
log.dir.failure.timeout.ms                                  LONG     read-only    30000 1..
log.dirs                                                    LIST     read-only    -
log.flush.interval.messages                                 LONG     cluster-wide 9223372036854775807 1..
log.flush.interval.ms                                       LONG     cluster-wide -
log.flush.offset.checkpoint.interval.ms                     INT      read-only    60000 0..
log.flush.scheduler.interval.ms                             LONG     read-only    9223372036854775807
log.flush.start.offset.checkpoint.interval.ms               INT      read-only    60000 0..
log.index.interval.bytes                                    INT      cluster-wide 4096 0..
log.index.size.max.bytes                                    INT      cluster-wide 10485760 4..
log.local.retention.bytes                                   LONG     cluster-wide -2 -2..
log.local.retention.ms                                      LONG     cluster-wide -2 -2..
log.message.timestamp.after.max.ms                          LONG     cluster-wide 3600000 0..
log.message.timestamp.before.max.ms                         LONG     cluster-wide 9223372036854775807 0..
log.message.timestamp.type                                  STRING   cluster-wide CreateTime CreateTime|LogAppendTime
log.preallocate                                             BOOLEAN  cluster-wide false
log.retention.bytes                                         LONG     cluster-wide -1
log.retention.check.interval.ms                             LONG     read-only    300000 1..
log.retention.hours                                         INT      read-only    168
log.retention.minutes                                       INT      read-only    -
log.retention.ms                                            LONG     cluster-wide -
log.roll.hours                                              INT      read-only    168 1..
log.roll.jitter.hours                                       INT      read-only    0 0..
log.roll.jitter.ms                                          LONG     cluster-wide -
log.roll.ms                                                 LONG     cluster-wide -
log.segment.bytes                                           INT      cluster-wide 1073741824 1048576..
log.segment.delete.delay.ms                                 LONG     cluster-wide 60000 0..
max.connection.creation.rate                                INT      cluster-wide 2147483647 0..
max.connections                                             INT      cluster-wide 2147483647 0..
max.connections.per.ip                                      INT      cluster-wide 2147483647 0..
max.connections.per.ip.overrides                            STRING   cluster-wide ''
max.incremental.fetch.session.cache.slots                   INT      read-only    1000 0..
max.request.partition.size.limit                            INT      read-only    2000 1..
message.max.bytes                                           INT      cluster-wide 1048588 0..
metadata.log.dir                                            STRING   read-only    -
metadata.log.max.record.bytes.between.snapshots             LONG     read-only    20971520 1..
metadata.log.max.snapshot.interval.ms                       LONG     read-only    3600000 0..
metadata.log.segment.bytes                                  INT      read-only    1073741824 8388608..
metadata.log.segment.ms                                     LONG     read-only    604800000
metadata.max.idle.interval.ms                               INT      read-only    500 0..
metadata.max.retention.bytes                                LONG     read-only    104857600
metadata.max.retention.ms                                   LONG     read-only    604800000
metric.reporters                                            LIST     cluster-wide org.apache.kafka.common.metrics.JmxReporter
metrics.num.samples                                         INT      read-only    2 1..
metrics.recording.level                                     STRING   read-only    INFO
metrics.sample.window.ms                                    LONG     read-only    30000 1..
min.insync.replicas                                         INT      cluster-wide 1 1..
node.id                                                     INT      read-only    - 0..
num.io.threads                                              INT      cluster-wide 8 1..
num.network.threads                                         INT      cluster-wide 3 1..
num.partitions                                              INT      read-only    1 1..
num.recovery.threads.per.data.dir                           INT      cluster-wide 2 1..
num.replica.alter.log.dirs.threads                          INT      read-only    -
num.replica.fetchers                                        INT      cluster-wide 1 1..
offset.metadata.max.bytes                                   INT      read-only    4096
offsets.commit.timeout.ms                                   INT      read-only    5000 1..
offsets.load.buffer.size                                    INT      read-only    5242880 1..
offsets.retention.check.interval.ms                         LONG     read-only    600000 1..
offsets.retention.minutes                                   INT      read-only    10080 1..
offsets.topic.compression.codec                             INT      read-only    0
offsets.topic.num.partitions                                INT      read-only    50 1..
offsets.topic.replication.factor                            SHORT    read-only    3 1..
offsets.topic.segment.bytes                                 INT      read-only    104857600 1..
principal.builder.class                                     CLASS    per-broker   org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder
process.roles                                               LIST     read-only    - broker|controller
producer.id.expiration.ms                                   INT      cluster-wide 86400000 1..
producer.purgatory.purge.interval.requests                  INT      read-only    1000
queued.max.request.bytes                                    LONG     read-only    -1
queued.max.requests                                         INT      read-only    500 1..
quota.window.num                                            INT      read-only    11 1..
quota.window.size.seconds                                   INT      read-only    1 1..
remote.fetch.max.wait.ms                                    INT      cluster-wide 500 1..
remote.list.offsets.request.timeout.ms                      LONG     cluster-wide 30000 1..
remote.log.index.file.cache.total.size.bytes                LONG     cluster-wide 1073741824 1..
remote.log.manager.copier.thread.pool.size                  INT      cluster-wide 10 1..
remote.log.manager.copy.max.bytes.per.second                LONG     cluster-wide 9223372036854775807 1..
remote.log.manager.copy.quota.window.num                    INT      read-only    11 1..
remote.log.manager.copy.quota.window.size.seconds           INT      read-only    1 1..
remote.log.manager.expiration.thread.pool.size              INT      cluster-wide 10 1..
remote.log.manager.fetch.max.bytes.per.second               LONG     cluster-wide 9223372036854775807 1..
remote.log.manager.fetch.quota.window.num                   INT      read-only    11 1..
remote.log.manager.fetch.quota.window.size.seconds          INT      read-only    1 1..
remote.log.manager.follower.thread.pool.size                INT      cluster-wide 2 1..
remote.log.manager.task.interval.ms                         LONG     read-only    30000 1..
remote.log.manager.thread.pool.size                         INT      read-only    2 1..
remote.log.metadata.custom.metadata.max.bytes               INT      read-only    128 0..
remote.log.metadata.manager.class.name                      STRING   read-only    org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager non-empty
remote.log.metadata.manager.class.path                      STRING   read-only    -
remote.log.metadata.manager.impl.prefix                     STRING   read-only    rlmm.config. non-empty
remote.log.metadata.manager.listener.name                   STRING   read-only    - non-empty
remote.log.reader.max.pending.tasks                         INT      read-only    100 1..
remote.log.reader.threads                                   INT      cluster-wide 10 1..
remote.log.storage.manager.class.name                       STRING   read-only    - non-empty
remote.log.storage.manager.class.path                       STRING   read-only    -
remote.log.storage.manager.impl.prefix                      STRING   read-only    rsm.config. non-empty
remote.log.storage.system.enable                            BOOLEAN  read-only    false
replica.fetch.backoff.ms                                    INT      read-only    1000 0..
replica.fetch.max.bytes                                     INT      read-only    1048576 0..
replica.fetch.min.bytes                                     INT      read-only    1
replica.fetch.response.max.bytes                            INT      read-only    10485760 0..
replica.fetch.wait.max.ms                                   INT      read-only    500
replica.high.watermark.checkpoint.interval.ms               LONG     read-only    5000
replica.lag.time.max.ms                                     LONG     read-only    30000
replica.selector.class                                      STRING   read-only    -
replica.socket.receive.buffer.bytes                         INT      read-only    65536
replica.socket.timeout.ms                                   INT      read-only    30000
replication.quota.window.num                                INT      read-only    11 1..
replication.quota.window.size.seconds                       INT      read-only    1 1..
request.timeout.ms                                          INT      read-only    30000
sasl.client.callback.handler.class                          CLASS    read-only    -
sasl.enabled.mechanisms                                     LIST     per-broker   GSSAPI
sasl.jaas.config                                            PASSWORD per-broker   -
sasl.kerberos.kinit.cmd                                     STRING   per-broker   /usr/bin/kinit
sasl.kerberos.min.time.before.relogin                       LONG     per-broker   60000
sasl.kerberos.principal.to.local.rules                      LIST     per-broker   DEFAULT
sasl.kerberos.service.name                                  STRING   per-broker   -
sasl.kerberos.ticket.renew.jitter                           DOUBLE   per-broker   0.05
sasl.kerberos.ticket.renew.window.factor                    DOUBLE   per-broker   0.8
sasl.login.callback.handler.class                           CLASS    read-only    -
sasl.login.class                                            CLASS    read-only    -
sasl.login.connect.timeout.ms                               INT      read-only    -
sasl.login.read.timeout.ms                                  INT      read-only    -
sasl.login.refresh.buffer.seconds                           SHORT    per-broker   300
sasl.login.refresh.min.period.seconds                       SHORT    per-broker   60
sasl.login.refresh.window.factor                            DOUBLE   per-broker   0.8
sasl.login.refresh.window.jitter                            DOUBLE   per-broker   0.05
sasl.login.retry.backoff.max.ms                             LONG     read-only    10000
sasl.login.retry.backoff.ms                                 LONG     read-only    100
sasl.mechanism.controller.protocol                          STRING   read-only    GSSAPI
sasl.mechanism.inter.broker.protocol                        STRING   per-broker   GSSAPI
sasl.oauthbearer.assertion.algorithm                        STRING   read-only    RS256 any-case:ES256|RS256
sasl.oauthbearer.assertion.claim.aud                        STRING   read-only    -
sasl.oauthbearer.assertion.claim.exp.seconds                INT      read-only    300 0..86400
sasl.oauthbearer.assertion.claim.iss                        STRING   read-only    -
sasl.oauthbearer.assertion.claim.jti.include                BOOLEAN  read-only    false
sasl.oauthbearer.assertion.claim.nbf.seconds                INT      read-only    60 0..3600
sasl.oauthbearer.assertion.claim.sub                        STRING   read-only    -
sasl.oauthbearer.assertion.file                             STRING   read-only    -
sasl.oauthbearer.assertion.private.key.file                 STRING   read-only    -
sasl.oauthbearer.assertion.private.key.passphrase           PASSWORD read-only    -
sasl.oauthbearer.assertion.template.file                    STRING   read-only    -
sasl.oauthbearer.client.credentials.client.id               STRING   read-only    -
sasl.oauthbearer.client.credentials.client.secret           PASSWORD read-only    -
sasl.oauthbearer.clock.skew.seconds                         INT      read-only    30
sasl.oauthbearer.expected.audience                          LIST     read-only    ''
sasl.oauthbearer.expected.issuer                            STRING   read-only    -
sasl.oauthbearer.jwks.endpoint.refresh.ms                   LONG     read-only    3600000
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms         LONG     read-only    10000
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms             LONG     read-only    100
sasl.oauthbearer.jwks.endpoint.url                          STRING   read-only    -
sasl.oauthbearer.jwt.retriever.class                        CLASS    read-only    org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever
sasl.oauthbearer.jwt.validator.class                        CLASS    read-only    org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator
sasl.oauthbearer.scope                                      STRING   read-only    -
sasl.oauthbearer.scope.claim.name                           STRING   read-only    scope
sasl.oauthbearer.sub.claim.name                             STRING   read-only    sub
sasl.oauthbearer.token.endpoint.url                         STRING   read-only    -
sasl.server.callback.handler.class                          CLASS    read-only    -
sasl.server.max.receive.size                                INT      read-only    524288
security.inter.broker.protocol                              STRING   read-only    PLAINTEXT PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL
security.providers                                          STRING   read-only    -
share.coordinator.append.linger.ms                          INT      read-only    -1 -1..
share.coordinator.cached.buffer.max.bytes                   INT      cluster-wide 1048588 524288..
share.coordinator.load.buffer.size                          INT      read-only    5242880 1..
share.coordinator.snapshot.update.records.per.snapshot      INT      read-only    500 0..500
share.coordinator.state.topic.compression.codec             INT      read-only    0
share.coordinator.state.topic.min.isr                       SHORT    read-only    2 1..
share.coordinator.state.topic.num.partitions                INT      read-only    50 1..
share.coordinator.state.topic.replication.factor            SHORT    read-only    3 1..
share.coordinator.state.topic.segment.bytes                 INT      read-only    104857600 1..
share.coordinator.threads                                   INT      read-only    1 1..
share.coordinator.write.timeout.ms                          INT      read-only    5000 1..
share.fetch.purgatory.purge.interval.requests               INT      read-only    1000
socket.connection.setup.timeout.max.ms                      LONG     read-only    30000
socket.connection.setup.timeout.ms                          LONG     read-only    10000
socket.listen.backlog.size                                  INT      read-only    50 1..
socket.receive.buffer.bytes                                 INT      read-only    102400
socket.request.max.bytes                                    INT      read-only    104857600 1..
socket.send.buffer.bytes                                    INT      read-only    102400
ssl.allow.dn.changes                                        BOOLEAN  read-only    false
ssl.allow.san.changes                                       BOOLEAN  read-only    false
ssl.cipher.suites                                           LIST     per-broker   ''
ssl.client.auth                                             STRING   per-broker   none required|requested|none
ssl.enabled.protocols                                       LIST     per-broker   TLSv1.2,TLSv1.3
ssl.endpoint.identification.algorithm                       STRING   per-broker   https
ssl.engine.factory.class                                    CLASS    per-broker   -
ssl.key.password                                            PASSWORD per-broker   -
ssl.keymanager.algorithm                                    STRING   per-broker   SunX509
ssl.keystore.certificate.chain                              PASSWORD per-broker   -
ssl.keystore.key                                            PASSWORD per-broker   -
ssl.keystore.location                                       STRING   per-broker   -
ssl.keystore.password                                       PASSWORD per-broker   -
ssl.keystore.type                                           STRING   per-broker   JKS
ssl.principal.mapping.rules                                 STRING   read-only    DEFAULT
ssl.protocol                                                STRING   per-broker   TLSv1.3
ssl.provider                                                STRING   per-broker   -
ssl.secure.random.implementation                            STRING   per-broker   -
ssl.trustmanager.algorithm                                  STRING   per-broker   PKIX
ssl.truststore.certificates                                 PASSWORD per-broker   -
ssl.truststore.location                                     STRING   per-broker   -
ssl.truststore.password                                     PASSWORD per-broker   -
ssl.truststore.type                                         STRING   per-broker   JKS
telemetry.max.bytes                                         INT      read-only    1048576 1..
transaction.abort.timed.out.transaction.cleanup.interval.ms INT      read-only    10000 1..
transaction.max.timeout.ms                                  INT      read-only    900000 1..
transaction.partition.verification.enable                   BOOLEAN  cluster-wide true
transaction.remove.expired.transaction.cleanup.interval.ms  INT      read-only    3600000 1..
transaction.state.log.load.buffer.size                      INT      read-only    5242880 1..
transaction.state.log.min.isr                               INT      read-only    2 1..
transaction.state.log.num.partitions                        INT      read-only    50 1..
transaction.state.log.replication.factor                    SHORT    read-only    3 1..
transaction.state.log.segment.bytes                         INT      read-only    104857600 1..
transaction.two.phase.commit.enable                         BOOLEAN  read-only    false
transactional.id.expiration.ms                              INT      read-only    604800000 1..
unclean.leader.election.enable                              BOOLEAN  cluster-wide false
"""


def _number(text, kind):
    return float(text) if kind == "DOUBLE" else int(text)


def _read(table):
    out = {}
    for line in table.splitlines():
        name, kind, mode, default, *check = line.split()
        rules = {}
        for rule in check:
            if ".." in rule:
                span, *also = rule.split("|")
                low, high = span.split("..")
                rules.update(at_least=_number(low, kind) if low else None,
                             at_most=_number(high, kind) if high else None,
                             also=tuple(_number(a, kind) for a in also))
            elif rule == "non-empty":
                rules["non_empty"] = True
            else:
                rules["ignore_case"] = rule.startswith("any-case:")
                rules["one_of"] = tuple(rule.removeprefix("any-case:").split("|"))
        out[name] = KafkaBrokerConfig(kind, mode, None if default == "-" else "" if default == "''" else default,
                                      **rules)
    return out


KAFKA_BROKER_CONFIGS = _read(_TABLE)
