// Apache Kafka's Java clients meeting errors a test makes the broker answer (tests/test_broker_cluster_clients.py),
// printing what reached the application.
//
// Usage: ClientFaults <bootstrap> <mode> <topic> [<offset>]
//   send   an idempotent producer (acks=all) sends the record "once" to partition 0 and waits on its future:
//          "acked <offset>", or "error <exception class> <message>" for the exception the future threw
//   poll   a consumer without a group, auto.offset.reset=none, assigned partition 0 at <offset>, polls: on an
//          exception it prints "error <exception class> <partition>=<offset> ..." (the offsets out of range), then
//          goes back to the start and prints "read <offset> <value>" for every record up to the end, then "end"

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClientFaults {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            throw new IllegalArgumentException("usage: ClientFaults <bootstrap> <send|poll> <topic> [<offset>]");
        }
        String bootstrap = args[0];
        String topic = args[2];
        switch (args[1]) {
            case "send": send(bootstrap, topic); break;
            case "poll": poll(bootstrap, topic, Long.parseLong(args[3])); break;
            default: throw new IllegalArgumentException("unknown mode " + args[1]);
        }
    }

    private static void send(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "client-faults-producer");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        props.put("acks", "all");
        props.put("enable.idempotence", "true");
        props.put("retry.backoff.ms", "50");
        props.put("delivery.timeout.ms", "30000");
        props.put("request.timeout.ms", "10000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            try {
                RecordMetadata sent = producer.send(new ProducerRecord<>(topic, 0, null,
                        "once".getBytes(StandardCharsets.UTF_8))).get();
                System.out.println("acked " + sent.offset());
            } catch (ExecutionException e) {
                System.out.println("error " + e.getCause().getClass().getName() + " " + e.getCause().getMessage());
            }
        }
    }

    private static void poll(String bootstrap, String topic, long offset) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "client-faults-consumer");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.put("auto.offset.reset", "none");
        props.put("enable.auto.commit", "false");
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, offset);
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.currentTimeMillis() + 30_000;
            boolean raised = false;
            while (consumer.position(partition) < end) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("at " + consumer.position(partition) + " of " + end + " after 30 s");
                }
                try {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        System.out.println("read " + record.offset() + " "
                                + new String(record.value(), StandardCharsets.UTF_8));
                    }
                } catch (OffsetOutOfRangeException e) {
                    if (raised) {
                        throw e;
                    }
                    raised = true;
                    StringBuilder line = new StringBuilder("error " + e.getClass().getName());
                    for (Map.Entry<TopicPartition, Long> out : e.offsetOutOfRangePartitions().entrySet()) {
                        line.append(' ').append(out.getKey()).append('=').append(out.getValue());
                    }
                    System.out.println(line);
                    consumer.seekToBeginning(List.of(partition));  // the application's own choice of where to go on
                }
            }
            System.out.println("end");
        }
    }
}
