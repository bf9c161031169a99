// Apache Kafka's Java clients doing a little real work against a broker, so their traffic can be
// captured (tests/kafka/record_captures.py) and kafkaproto's broker tried (tests/test_broker_*.py).
// Usage: Clients <bootstrap> <mode> <topic>, with -Dclient.config=FILE for more client properties
//   admin     create the topic, list and describe it (by name and by topic ID), describe the cluster
//   produce   an idempotent producer sends 30 records with headers, lz4-compressed, in small batches, and
//             stays open -Dproduce.stay.ms more (0 by default: long enough for its metrics to be pushed)
//   txn       a transactional producer commits one transaction and aborts another
//   consume   a consumer in group "captures" reads everything (read_committed) and commits
//   delete    delete the topic by its topic ID
//   member    a consumer in group "members" (-Dmember.group) that commits after every poll and stops 5 s
//             (-Dmember.quiet.ms) after its last record, printing "partition offset" per record (run several
//             to form a group; group.protocol=consumer in -Dclient.config makes it a KIP-848 member)

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Clients {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String mode = args[1];
        String topic = args[2];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "java-" + mode);
        // Security settings (sasl.*, ssl.*, security.protocol) from a properties file, when one is named.
        String extra = System.getProperty("client.config");
        if (extra != null) {
            try (java.io.FileReader reader = new java.io.FileReader(extra)) {
                props.load(reader);
            }
        }
        switch (mode) {
            case "admin": admin(props, topic); break;
            case "produce": produce(props, topic, null); break;
            case "txn": produce(props, topic, "captures-txn"); break;
            case "consume": consume(props, topic); break;
            case "delete": delete(props, topic); break;
            case "member": member(props, topic); break;
            default: throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    private static void admin(Properties props, String topic) throws Exception {
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            admin.listTopics().names().get();
            TopicDescription byName = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            Uuid id = byName.topicId();
            admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds().get();
            admin.describeCluster().nodes().get();
        }
    }

    private static void delete(Properties props, String topic) throws Exception {
        try (Admin admin = Admin.create(props)) {
            Uuid id = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId();
            admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all().get();
        }
    }

    private static void produce(Properties props, String topic, String transactionalId) throws Exception {
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.putIfAbsent("acks", "all");  // -Dclient.config may set acks (and enable.idempotence=false)
        props.put("compression.type", "lz4");
        props.put("linger.ms", "5");
        if (transactionalId != null) {
            props.put("transactional.id", transactionalId);
        }
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (transactionalId == null) {
                for (int i = 0; i < 30; i++) {
                    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, i % 2, bytes("key-" + i),
                            bytes("value-" + i + " from the Java producer"));
                    record.headers().add("trace", bytes("t" + i));
                    producer.send(record);
                    if (i % 10 == 9) {
                        producer.flush();
                    }
                }
                Thread.sleep(Long.getLong("produce.stay.ms", 0L));
                return;
            }
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, bytes("txn"), bytes("committed")));
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, bytes("txn"), bytes("aborted")));
            producer.flush();
            producer.abortTransaction();
        }
    }

    private static void consume(Properties props, String topic) {
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("group.id", "captures");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("isolation.level", "read_committed");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            int seen = 0;
            while (seen < 31 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                seen += records.count();
            }
            consumer.commitSync();
            if (seen < 31) {
                throw new IllegalStateException("consumed " + seen + " of 31 records");
            }
        }
    }

    private static void member(Properties props, String topic) {
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("group.id", System.getProperty("member.group", "members"));
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        long quiet = Long.parseLong(System.getProperty("member.quiet.ms", "5000"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 40_000 + quiet;
            long quietSince = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline && System.currentTimeMillis() - quietSince < quiet) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r : records) {
                    System.out.println(r.partition() + " " + r.offset());
                    quietSince = System.currentTimeMillis();
                }
                if (!records.isEmpty()) {
                    consumer.commitSync();
                }
            }
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
