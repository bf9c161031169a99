// Apache Kafka's own check of a listener's new key store and trust store (SslFactory.validateReconfiguration, which
// a broker runs before it takes a change of listener.name.<listener>.ssl.* while running), driven by a script on
// stdin, so that tests/test_broker_live_listeners.py can hold kafkaproto's broker (kafkaproto/broker/security.py)
// to it. One answer line per command line:
//   start KEY=VALUE ...     a server-side SslFactory set up with these ssl.* settings (Kafka's defaults for the
//                           rest): "ok", or "failed: <why>"
//   change KEY=VALUE ...    the settings the listener would have after a change (the start's, with these over
//                           them; KEY= with nothing removes one) checked as the broker checks them: "ok", or
//                           "refused: <why>"; the factory is not changed
// A VALUE of @PATH is the text of the file at PATH (a PEM certificate chain or key given inline).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.config.internals.BrokerSecurityConfigs;
import org.apache.kafka.common.network.ConnectionMode;
import org.apache.kafka.common.security.ssl.SslFactory;

public final class SslReconfigure {
    static final ConfigDef DEFINITION = new ConfigDef();

    static {
        SslConfigs.addClientSslSupport(DEFINITION);
        DEFINITION.define(BrokerSecurityConfigs.SSL_CLIENT_AUTH_CONFIG, ConfigDef.Type.STRING, "none",
                          ConfigDef.Importance.LOW, "");
        DEFINITION.define(BrokerSecurityConfigs.SSL_ALLOW_DN_CHANGES_CONFIG, ConfigDef.Type.BOOLEAN, false,
                          ConfigDef.Importance.LOW, "");
        DEFINITION.define(BrokerSecurityConfigs.SSL_ALLOW_SAN_CHANGES_CONFIG, ConfigDef.Type.BOOLEAN, false,
                          ConfigDef.Importance.LOW, "");
    }

    static void read(String[] words, Map<String, String> into) throws Exception {
        for (int i = 1; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            String key = words[i].substring(0, eq), value = words[i].substring(eq + 1);
            if (value.isEmpty()) {
                into.remove(key);
            } else {
                into.put(key, value.startsWith("@") ? Files.readString(Path.of(value.substring(1))) : value);
            }
        }
    }

    static Map<String, Object> parsed(Map<String, String> settings) {
        return new HashMap<>(DEFINITION.parse(settings));
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Map<String, String> started = new HashMap<>();
        SslFactory factory = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            String answer;
            try {
                if (words[0].equals("start")) {
                    started = new HashMap<>();
                    read(words, started);
                    factory = new SslFactory(ConnectionMode.SERVER, null, false);
                    try {
                        factory.configure(parsed(started));
                        answer = "ok";
                    } catch (Exception e) {
                        factory = null;
                        answer = "failed: " + e;
                    }
                } else if (words[0].equals("change")) {
                    Map<String, String> after = new HashMap<>(started);
                    read(words, after);
                    try {
                        factory.validateReconfiguration(parsed(after));
                        answer = "ok";
                    } catch (Exception e) {
                        answer = "refused: " + e;
                    }
                } else {
                    answer = "unknown command " + words[0];
                }
            } catch (Exception e) {
                answer = "error: " + e;
            }
            System.out.println(answer.replace('\n', ' '));
            System.out.flush();
        }
    }
}
