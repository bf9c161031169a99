// Apache Kafka's own SASL/OAUTHBEARER server as a broker runs it when no callback handler is configured
// (OAuthBearerSaslServer over OAuthBearerUnsecuredValidatorCallbackHandler, options from the listener's JAAS config),
// driven by a script on stdin, so that tests/test_broker_oauthbearer.py can hold kafkaproto's broker
// (kafkaproto/broker/security.py) to it. Arguments and client bytes are base64 (standard alphabet). One answer line
// per command line:
//   jaas TEXT        the JAAS config of a listener's oauthbearer mechanism, read as the broker reads it at start:
//                    "options K:V ..." (each K and V base64, sorted by K) or "invalid <why>"; the options are kept
//                    for the next "new"
//   now MS           the validator's clock, in ms since the epoch: "-"
//   new              a new server (a new SaslHandshake): "-", or "invalid <why>" when the handler refuses its options
//   step BYTES       one client message (one SaslAuthenticate): "challenge BYTES", "done PRINCIPAL LIFETIME_MS"
//                    (the credential's lifetime, which SaslServerAuthenticator turns into session_lifetime_ms),
//                    "failed MESSAGE" (SaslAuthenticationException: its message is the answer's error_message),
//                    "refused MESSAGE" (SaslException: the client gets the generic refusal, this is the reason),
//                    or "closed CLASS: MESSAGE" (anything else: the broker closes the connection without an answer)
// MESSAGE and PRINCIPAL are base64 too.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.sasl.SaslException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerSaslServer;
import org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler;
import org.apache.kafka.common.utils.Time;

public final class OAuthBearerProbe {
    static long now;

    static final Time CLOCK = new Time() {
        public long milliseconds() { return now; }
        public long nanoseconds() { return TimeUnit.MILLISECONDS.toNanos(now); }
        public void sleep(long ms) { now += ms; }
        public void waitObject(Object lock, Supplier<Boolean> done, long deadline) { throw new UnsupportedOperationException(); }
    };

    static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    static String text(String b64) {
        return new String(Base64.getDecoder().decode(b64), StandardCharsets.UTF_8);
    }

    static String arg(String[] words) {
        return words.length > 1 ? words[1] : "";
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<AppConfigurationEntry> entries = new ArrayList<>();
        OAuthBearerSaslServer server = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ", 2);
            String answer;
            switch (words[0]) {
                case "jaas": {
                    Map<String, Object> configs = new HashMap<>();
                    configs.put("oauthbearer.sasl.jaas.config", new Password(text(arg(words))));
                    try {
                        JaasContext context = JaasContext.loadServerContext(new ListenerName("PROBE"), "OAUTHBEARER",
                                                                            configs);
                        entries = context.configurationEntries();
                        StringBuilder out = new StringBuilder("options");
                        TreeMap<String, Object> sorted = new TreeMap<>(entries.get(0).getOptions());
                        for (Map.Entry<String, Object> option : sorted.entrySet())
                            out.append(' ').append(b64(option.getKey())).append(':')
                               .append(b64(String.valueOf(option.getValue())));
                        answer = entries.size() == 1 ? out.toString() : "invalid " + b64(entries.size() + " modules");
                    } catch (RuntimeException e) {
                        answer = "invalid " + b64(String.valueOf(e.getMessage()));
                    }
                    break;
                }
                case "now":
                    now = Long.parseLong(arg(words));
                    answer = "-";
                    break;
                case "new": {
                    OAuthBearerUnsecuredValidatorCallbackHandler handler = new OAuthBearerUnsecuredValidatorCallbackHandler();
                    try {
                        handler.configure(Map.of(), "OAUTHBEARER", entries);
                        // The clock the validator checks exp and iat against (package-private in Kafka: its tests set it).
                        java.lang.reflect.Method time = handler.getClass().getDeclaredMethod("time", Time.class);
                        time.setAccessible(true);
                        time.invoke(handler, CLOCK);
                        server = new OAuthBearerSaslServer(handler);
                        answer = "-";
                    } catch (RuntimeException e) {
                        answer = "invalid " + b64(String.valueOf(e.getMessage()));
                    }
                    break;
                }
                case "step":
                    answer = step(server, Base64.getDecoder().decode(arg(words)));
                    break;
                default:
                    answer = "unknown command " + words[0];
            }
            System.out.println(answer);
            System.out.flush();
        }
    }

    static String step(OAuthBearerSaslServer server, byte[] message) {
        try {
            byte[] reply = server.evaluateResponse(message);
            if (!server.isComplete())
                return "challenge " + Base64.getEncoder().encodeToString(reply);
            Object lifetime = server.getNegotiatedProperty("CREDENTIAL.LIFETIME.MS");
            return (reply.length == 0 ? "done " : "done-with-reply ") + b64(server.getAuthorizationID()) + " "
                + lifetime;
        } catch (SaslAuthenticationException e) {
            return "failed " + b64(String.valueOf(e.getMessage()));
        } catch (SaslException e) {
            return "refused " + b64(String.valueOf(e.getMessage()));
        } catch (Throwable e) {  // StackOverflowError too: the broker's network thread would not answer either
            return "closed " + b64(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }
}
