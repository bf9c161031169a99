// java.util.regex as Kafka's client-metrics subscriptions read their match patterns: for each line
// "pattern<TAB>input" of standard input, "ERR<TAB>description" when Pattern.compile refuses the pattern, else
// whether the whole input matches ("true" or "false"). Compared with kafkaproto/broker/java_regex.py.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public final class JavaRegex {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", 2);
            try {
                Pattern pattern = Pattern.compile(parts[0]);
                out.append(parts.length > 1 && pattern.matcher(parts[1]).matches()).append('\n');
            } catch (PatternSyntaxException e) {
                out.append("ERR\t").append(e.getDescription()).append('\n');
            }
        }
        System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
        System.out.flush();
    }
}
