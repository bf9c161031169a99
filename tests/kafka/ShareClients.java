import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Kafka 4's share consumer (KIP-932) against a broker, for tests/test_broker_share_groups.py.
 *
 *   ShareClients <bootstrap> config <group> key=value...   set the group's configs (share.auto.offset.reset, ...)
 *   ShareClients <bootstrap> consume <group> <topic>       a member with explicit acknowledgement
 *
 * A member prints one line per record it acknowledges: "accept|release|reject partition offset deliveries value".
 * It rejects the values listed in -Dshare.reject, releases those in -Dshare.release the first time it sees them,
 * and stops once it has seen nothing for -Dshare.quiet.ms. -Dshare.max.poll.records and -Dshare.pause.ms (after each
 * poll's records are acknowledged) make a slow consumer, so that others get their share; -Dshare.stall.ms holds the
 * first records that long before acknowledging them. An acknowledgement the broker refused prints a line
 * "failed partition -1 -1 exception". With -Dshare.halt.after=N it halts the JVM (no
 * acknowledgement, no leaving the group) once it holds N records, as a crashed consumer would.
 */
public class ShareClients {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mode = args[1], group = args[2];
        if (mode.equals("config")) {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            try (Admin admin = Admin.create(props)) {
                List<AlterConfigOp> ops = new java.util.ArrayList<>();
                for (String pair : Arrays.copyOfRange(args, 3, args.length)) {
                    String[] kv = pair.split("=", 2);
                    ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
                }
                ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
                admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
            }
            return;
        }
        consume(bootstrap, group, args[3]);
    }

    private static Set<String> listed(String property) {
        String value = System.getProperty(property, "");
        return value.isEmpty() ? new HashSet<>() : new HashSet<>(Arrays.asList(value.split(",")));
    }

    private static void consume(String bootstrap, String group, String topic) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("max.poll.records", System.getProperty("share.max.poll.records", "500"));
        long pauseMs = Long.getLong("share.pause.ms", 0L);
        long stallMs = Long.getLong("share.stall.ms", 0L);
        Set<String> reject = listed("share.reject");
        Set<String> release = listed("share.release");
        long quietMs = Long.getLong("share.quiet.ms", 8000L);
        int haltAfter = Integer.getInteger("share.halt.after", -1);
        int held = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(Collections.singletonList(topic));
            long lastSeen = System.currentTimeMillis();
            while (System.currentTimeMillis() - lastSeen < quietMs) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty() && stallMs > 0) {
                    try {  // longer than the lock: the records go to another consumer meanwhile
                        Thread.sleep(stallMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                    stallMs = 0;
                }
                for (ConsumerRecord<String, String> record : records) {
                    lastSeen = System.currentTimeMillis();
                    if (haltAfter >= 0 && ++held >= haltAfter) {
                        System.out.flush();
                        Runtime.getRuntime().halt(3);
                    }
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (reject.contains(record.value())) {
                        type = AcknowledgeType.REJECT;
                    } else if (release.remove(record.value())) {
                        type = AcknowledgeType.RELEASE;
                    }
                    consumer.acknowledge(record, type);
                    System.out.println(type + " " + record.partition() + " " + record.offset() + " "
                                       + record.deliveryCount().orElse((short) -1) + " " + record.value());
                }
                if (!records.isEmpty()) {
                    consumer.commitSync().forEach((partition, failure) -> failure.ifPresent(
                        e -> System.out.println("failed " + partition.partition() + " -1 -1 " + e.getClass().getSimpleName())));
                    if (pauseMs > 0) {
                        try {
                            Thread.sleep(pauseMs);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
                System.out.flush();
            }
        }
    }
}
