import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application for tests/test_broker_streams_groups.py: it counts words. Each input record's value
 * is split into words; the words are re-keyed (a repartition topic) and counted in a state store (a changelog
 * topic); every new count goes to the output topic as "word count".
 *
 *   StreamsApp <bootstrap> <application id> <input topic> <output topic> [protocol]
 *
 * protocol is "streams" (KIP-1071: the broker assigns the tasks, the default) or "classic". It prints "RUNNING"
 * once the instance runs, then "ACTIVE n" whenever it runs and the number of active tasks it holds has changed to
 * n, so that a test waits for an assignment instead of sleeping. It stops cleanly when a line arrives on its
 * standard input, or when that input ends (the test that started it is gone), and prints "STOPPED state".
 */
public class StreamsApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], application = args[1], input = args[2], output = args[3];
        String protocol = args.length > 4 ? args[4] : "streams";
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("streams.state.dir", "/tmp/kafka-streams"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.getInteger("streams.threads", 1));

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(value -> java.util.Arrays.asList(value.toLowerCase().split("\\s+")))
             .groupBy((key, word) -> word)
             .count()
             .toStream()
             .mapValues((word, count) -> word + " " + count)
             .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        CountDownLatch stop = new CountDownLatch(1);
        Thread told = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                in.readLine();  // a line, or the end of the input
            } catch (IOException e) {
                // the input is gone: stop all the same
            }
            stop.countDown();
        });
        told.setDaemon(true);
        told.start();

        streams.start();
        if (running.await(120, TimeUnit.SECONDS)) {
            System.out.println("RUNNING");
            System.out.flush();
        }
        int reported = -1;
        while (!stop.await(100, TimeUnit.MILLISECONDS)) {
            if (streams.state() != KafkaStreams.State.RUNNING) {
                continue;  // between assignments: the count would be of a moment
            }
            int active = 0;
            try {
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    active += thread.activeTasks().size();
                }
            } catch (IllegalStateException e) {
                continue;  // it left RUNNING meanwhile
            }
            if (active != reported) {
                reported = active;
                System.out.println("ACTIVE " + active);
                System.out.flush();
            }
        }
        streams.close(Duration.ofSeconds(30));
        streams.cleanUp();
        System.out.println("STOPPED " + streams.state());
    }
}
