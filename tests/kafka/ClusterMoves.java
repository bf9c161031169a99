// Apache Kafka's Java clients on a cluster whose partition leaders and group coordinator a test moves while they
// run (tests/test_broker_cluster_clients.py). The test reads the lines printed here as they come and answers on
// standard input, so each move falls at a known point of the run.
//
// Usage: ClusterMoves <bootstrap> <topic> <group> <records> <window> <producer gates> <consumer gates>
//        [<group protocol>]
//   An idempotent producer (acks=all) sends <records> records, values "0", "1", ..., a few at a time, printing
//   "ack <value> <offset>" as each is acknowledged and "fail <value> <exception>" for any that is not. Then a consumer
//   of <group> (group.protocol classic by default, or consumer) reads the topic from the start, committing after
//   each record, printing "read <offset> <value>", until it has read as many records as were acknowledged; then
//   "committed <offset>" (the group's committed offset, read back) and "done".
//   Gates (comma-separated counts, or "-" for none): for each gate g the producer (for its gates) or the consumer
//   (for its) reads one line from standard input before going past record g + <window>, so the test can act after
//   seeing g records acknowledged or read while the client still has <window> records to go before it waits.
//   After producing it prints "retries <n>": how many times the producer sent a batch again (record-retry-total).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClusterMoves {
    private static final BufferedReader STDIN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    public static void main(String[] args) throws Exception {
        if (args.length < 7) {
            throw new IllegalArgumentException("usage: ClusterMoves <bootstrap> <topic> <group> <records> <window> "
                    + "<producer gates> <consumer gates> [<group protocol>]");
        }
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int records = Integer.parseInt(args[3]);
        int window = Integer.parseInt(args[4]);
        List<Integer> producerGates = gates(args[5]);
        List<Integer> consumerGates = gates(args[6]);
        String protocol = args.length > 7 ? args[7] : "classic";
        int acknowledged = produce(bootstrap, topic, records, window, producerGates);
        consume(bootstrap, topic, group, protocol, acknowledged, window, consumerGates);
        say("done");
    }

    private static List<Integer> gates(String arg) {
        List<Integer> gates = new ArrayList<>();
        if (!arg.equals("-")) {
            for (String gate : arg.split(",")) {
                gates.add(Integer.parseInt(gate));
            }
        }
        return gates;
    }

    /** One line from the test before going on; it closing standard input is an error. */
    private static void awaitGo(String where) throws Exception {
        if (STDIN.readLine() == null) {
            throw new IllegalStateException("standard input closed while waiting at " + where);
        }
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static int produce(String bootstrap, String topic, int records, int window, List<Integer> gates)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "cluster-moves-producer");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("acks", "all");
        props.put("enable.idempotence", "true");
        props.put("linger.ms", "5");
        props.put("retry.backoff.ms", "50");
        props.put("retry.backoff.max.ms", "500");
        props.put("request.timeout.ms", "10000");
        props.put("delivery.timeout.ms", "60000");
        AtomicInteger acknowledged = new AtomicInteger();
        double retries;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            int gate = 0;
            for (int i = 0; i < records; i++) {
                if (gate < gates.size() && i == gates.get(gate) + window) {
                    awaitGo("producer gate " + gates.get(gate));
                    gate++;
                }
                String value = Integer.toString(i);
                producer.send(new ProducerRecord<>(topic, 0, null, value.getBytes(StandardCharsets.UTF_8)),
                        (metadata, error) -> {
                            if (error == null) {
                                acknowledged.incrementAndGet();
                                say("ack " + value + " " + metadata.offset());
                            } else {
                                say("fail " + value + " " + error);
                            }
                        });
                Thread.sleep(2);  // a steady stream rather than one burst
            }
            producer.flush();
            retries = metric(producer.metrics(), "producer-metrics", "record-retry-total");
        }
        say("retries " + (long) retries);
        return acknowledged.get();  // any record not acknowledged was said ("fail"): the test tells it
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String group, String name) {
        for (Map.Entry<MetricName, ? extends Metric> entry : metrics.entrySet()) {
            if (entry.getKey().group().equals(group) && entry.getKey().name().equals(name)) {
                return ((Number) entry.getValue().metricValue()).doubleValue();
            }
        }
        throw new IllegalStateException("no metric " + group + "/" + name);
    }

    private static void consume(String bootstrap, String topic, String group, String protocol, int expected,
            int window, List<Integer> gates) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "cluster-moves-consumer");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("group.id", group);
        props.put("group.protocol", protocol);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("max.poll.records", "25");
        props.put("retry.backoff.ms", "50");
        props.put("retry.backoff.max.ms", "500");
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            int read = 0;
            int gate = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (read < expected) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + read + " of " + expected + " records in 60 s");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    if (gate < gates.size() && read == gates.get(gate) + window) {
                        awaitGo("consumer gate " + gates.get(gate));
                        gate++;
                    }
                    say("read " + record.offset() + " " + new String(record.value(), StandardCharsets.UTF_8));
                    consumer.commitSync(Map.of(partition, new OffsetAndMetadata(record.offset() + 1)));
                    read++;
                }
            }
            OffsetAndMetadata committed = consumer.committed(Set.of(partition)).get(partition);
            say("committed " + (committed == null ? -1 : committed.offset()));
        }
    }
}
