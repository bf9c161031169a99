// Apache Kafka's own codec, driven from the Python tests as an oracle.
//
// One JSON request per stdin line, one JSON answer per stdout line:
//   {"op": "records", ...}   build records with Kafka's MemoryRecordsBuilder -> {"bytes": base64}
//   {"op": "encode", "message": "ProduceRequest", "version": 9, "json": {...}}
//                            read the message with its JsonConverter, write it -> {"bytes": base64}
//   {"op": "decode", "message": ..., "version": ..., "bytes": base64}
//                            read the bytes with the *Data class -> {"json": ..., "bytes": re-encoded}
//   {"op": "check", "message": ..., "version": ..., "json": {...}, "bytes": base64}
//                            both at once: "encoded" is the json written by Kafka ("encodeError" if it
//                            cannot), "decoded" and "reencoded" the bytes read and written back by it
//                            ("decodeError" if it cannot read them)
//   {"op": "versions", "message": ...} -> {"lowest": n, "highest": n, "latestUnstable": bool},
//                            or {"missing": true}
// A request that fails answers {"error": "..."} and the loop goes on.
//
// Kafka 4 moved the record classes to org.apache.kafka.common.record.internal, so they are
// looked up by name; one source then compiles against every pinned version.

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.record.TimestampType;

public final class Oracle {
    // Non-numeric numbers: float64 fields may hold infinities, which JSON itself cannot.
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();
    private static final Base64.Decoder B64_IN = Base64.getDecoder();
    private static final Base64.Encoder B64_OUT = Base64.getEncoder();

    public static void main(String[] args) throws Exception {
        // Kafka's classes may log; only answers go to stdout.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
            } catch (Throwable e) {
                answer = JSON.createObjectNode().put("error", describe(e));
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    private static ObjectNode handle(JsonNode req) throws Exception {
        String op = req.get("op").asText();
        switch (op) {
            case "records": return records(req);
            case "encode": return encode(req);
            case "decode": return decode(req);
            case "check": return check(req);
            case "versions": return versions(req);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---- records -------------------------------------------------------------------------------

    private static final String RECORD_PKG = recordPackage();

    private static String recordPackage() {
        try {
            Class.forName("org.apache.kafka.common.record.internal.MemoryRecordsBuilder");
            return "org.apache.kafka.common.record.internal.";
        } catch (ClassNotFoundException e) {
            return "org.apache.kafka.common.record.";
        }
    }

    // The records builder's output stream, which Kafka 4.4 moved to an internals package.
    private static final Class<?> BUFFER_STREAM = bufferStreamClass();

    private static Class<?> bufferStreamClass() {
        for (String name : new String[] {"org.apache.kafka.common.utils.internals.ByteBufferOutputStream",
                                         "org.apache.kafka.common.utils.ByteBufferOutputStream"}) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // the other package, then
            }
        }
        throw new IllegalStateException("no ByteBufferOutputStream in these Kafka jars");
    }

    private static Class<?> recordClass(String name) throws ClassNotFoundException {
        return Class.forName(RECORD_PKG + name);
    }

    private static ObjectNode records(JsonNode req) throws Exception {
        Compression compression = compression(req.get("codec").asText(), req.path("level"));
        Class<?> builderClass = recordClass("MemoryRecordsBuilder");
        Constructor<?> ctor = builderClass.getConstructor(BUFFER_STREAM, byte.class, Compression.class,
                TimestampType.class, long.class, long.class, long.class, short.class, int.class, boolean.class,
                boolean.class, int.class, int.class, long.class);
        Object stream = BUFFER_STREAM.getConstructor(int.class).newInstance(1024);
        Object builder = ctor.newInstance(stream, (byte) req.get("magic").asInt(), compression,
                timestampType(req.get("timestampType").asInt()), req.get("baseOffset").asLong(),
                req.get("logAppendTime").asLong(), req.get("producerId").asLong(),
                (short) req.get("producerEpoch").asInt(), req.get("baseSequence").asInt(),
                req.get("transactional").asBoolean(), req.get("control").asBoolean(),
                req.get("partitionLeaderEpoch").asInt(), Integer.MAX_VALUE, req.get("deleteHorizonMs").asLong());

        Method append = builderClass.getMethod("appendWithOffset", long.class, long.class, byte[].class, byte[].class,
                Header[].class);
        for (JsonNode r : req.path("records")) {
            JsonNode hs = r.path("headers");
            Header[] headers = new Header[hs.size()];
            for (int i = 0; i < headers.length; i++) {
                headers[i] = new RecordHeader(hs.get(i).get(0).asText(), bytes(hs.get(i).get(1)));
            }
            append.invoke(builder, r.get("offset").asLong(), r.get("timestamp").asLong(), bytes(r.get("key")),
                    bytes(r.get("value")), headers);
        }
        JsonNode markers = req.path("markers");
        if (markers.size() > 0) {
            Class<?> markerClass = recordClass("EndTransactionMarker");
            Class<?> typeClass = recordClass("ControlRecordType");
            Method appendMarker = builderClass.getMethod("appendEndTxnMarker", long.class, markerClass);
            Constructor<?> markerCtor = markerClass.getConstructor(typeClass, int.class);
            for (JsonNode m : markers) {
                Object type = typeClass.getField(m.get("commit").asBoolean() ? "COMMIT" : "ABORT").get(null);
                appendMarker.invoke(builder, m.get("timestamp").asLong(),
                        markerCtor.newInstance(type, m.get("coordinatorEpoch").asInt()));
            }
        }
        Object built = builderClass.getMethod("build").invoke(builder);
        ByteBuffer buffer = (ByteBuffer) built.getClass().getMethod("buffer").invoke(built);
        return JSON.createObjectNode().put("bytes", B64_OUT.encodeToString(remaining(buffer)));
    }

    private static TimestampType timestampType(int id) {
        return id < 0 ? TimestampType.NO_TIMESTAMP_TYPE : id == 0 ? TimestampType.CREATE_TIME : TimestampType.LOG_APPEND_TIME;
    }

    private static Compression compression(String codec, JsonNode level) {
        switch (codec) {
            case "none": return Compression.NONE;
            case "gzip": return level.isInt() ? Compression.gzip().level(level.asInt()).build() : Compression.gzip().build();
            case "snappy": return Compression.snappy().build();
            case "lz4": return level.isInt() ? Compression.lz4().level(level.asInt()).build() : Compression.lz4().build();
            case "zstd": return level.isInt() ? Compression.zstd().level(level.asInt()).build() : Compression.zstd().build();
            default: throw new IllegalArgumentException("unknown codec " + codec);
        }
    }

    // ---- messages ------------------------------------------------------------------------------

    // Requests, responses and headers are org.apache.kafka.common.message.<Name>Data; KRaft
    // metadata records are org.apache.kafka.common.metadata.<Name>; the group coordinator's
    // records (__consumer_offsets) org.apache.kafka.coordinator.group.generated.<Name>; the
    // transaction coordinator's (__transaction_state) org.apache.kafka.coordinator.transaction.generated.<Name>;
    // the share coordinator's (__share_group_state) org.apache.kafka.coordinator.share.generated.<Name>.
    // Each has a <class>JsonConverter.
    private static Class<?> dataClass(String message) throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.message." + message + "Data");
        } catch (ClassNotFoundException e) {
            try {
                return Class.forName("org.apache.kafka.common.metadata." + message);
            } catch (ClassNotFoundException again) {
                try {
                    return Class.forName("org.apache.kafka.coordinator.group.generated." + message);
                } catch (ClassNotFoundException transaction) {
                    try {
                        return Class.forName("org.apache.kafka.coordinator.transaction.generated." + message);
                    } catch (ClassNotFoundException share) {
                        return Class.forName("org.apache.kafka.coordinator.share.generated." + message);
                    }
                }
            }
        }
    }

    private static Class<?> converter(String message) throws ClassNotFoundException {
        return Class.forName(dataClass(message).getName() + "JsonConverter");
    }

    private static ObjectNode versions(JsonNode req) throws Exception {
        Class<?> cls;
        try {
            cls = dataClass(req.get("message").asText());
        } catch (ClassNotFoundException e) {
            return JSON.createObjectNode().put("missing", true);
        }
        Object msg = cls.getConstructor().newInstance();
        ObjectNode answer = JSON.createObjectNode()
                .put("lowest", (Short) cls.getMethod("lowestSupportedVersion").invoke(msg))
                .put("highest", (Short) cls.getMethod("highestSupportedVersion").invoke(msg));
        // Headers have API key -1; records' keys are record types, not API keys.
        if (cls.getPackageName().equals("org.apache.kafka.common.message") && msg instanceof ApiMessage
                && ((ApiMessage) msg).apiKey() >= 0) {
            // A release may ship an API's newest version unfinished; it can still change on the wire.
            answer.put("latestUnstable", ApiMessageType.fromApiKey(((ApiMessage) msg).apiKey()).latestVersionUnstable());
        }
        return answer;
    }

    private static ObjectNode encode(JsonNode req) throws Exception {
        String message = req.get("message").asText();
        short version = (short) req.get("version").asInt();
        Message msg = (Message) converter(message).getMethod("read", JsonNode.class, short.class)
                .invoke(null, req.get("json"), version);
        return JSON.createObjectNode().put("bytes", B64_OUT.encodeToString(write(msg, version)));
    }

    private static ObjectNode decode(JsonNode req) throws Exception {
        String message = req.get("message").asText();
        short version = (short) req.get("version").asInt();
        ByteBuffer input = ByteBuffer.wrap(B64_IN.decode(req.get("bytes").asText()));
        Message msg = (Message) dataClass(message).getConstructor(Readable.class, short.class)
                .newInstance(new ByteBufferAccessor(input), version);
        ObjectNode answer = JSON.createObjectNode();
        if (input.hasRemaining()) {
            answer.put("unread", input.remaining());
        }
        answer.set("json", (JsonNode) converter(message).getMethod("write", dataClass(message), short.class)
                .invoke(null, msg, version));
        answer.put("bytes", B64_OUT.encodeToString(write(msg, version)));
        return answer;
    }

    private static ObjectNode check(JsonNode req) {
        ObjectNode answer = JSON.createObjectNode();
        try {
            answer.put("encoded", encode(req).get("bytes").asText());
        } catch (Exception e) {
            answer.put("encodeError", describe(e));
        }
        try {
            ObjectNode decoded = decode(req);
            answer.set("decoded", decoded.get("json"));
            answer.put("reencoded", decoded.get("bytes").asText());
            if (decoded.has("unread")) {
                answer.put("unread", decoded.get("unread").asInt());
            }
        } catch (Exception e) {
            answer.put("decodeError", describe(e));
        }
        return answer;
    }

    private static String describe(Throwable e) {
        Throwable cause = e instanceof InvocationTargetException ? e.getCause() : e;
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }

    private static byte[] write(Message msg, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(msg.size(cache, version));
        msg.write(new ByteBufferAccessor(buffer), cache, version);
        buffer.flip();
        return remaining(buffer);
    }

    // ---- helpers -------------------------------------------------------------------------------

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : B64_IN.decode(node.asText());
    }

    private static byte[] remaining(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }
}
