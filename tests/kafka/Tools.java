import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Exit;

/**
 * Kafka's command-line tools run one after another in one JVM, for tests/test_kafka_tools.py: a tool's own JVM
 * takes longer to start than most of its commands take to run.
 *
 * Each line of standard input is a command, {"main": "<class with a main>", "args": [...]}; each answer is one line
 * of standard output, {"code": n, "out": "...", "err": "..."}: what the command printed on its standard output and
 * error, and the code its JVM would have exited with: the one it gave Exit.exit or Exit.halt first, else 1 if its
 * main threw, else 0. As a JVM of its own would, a command stops at its first exit (whatever it would run or print
 * after it is not run or is dropped), and the shutdown hooks it added through Exit run when it ends.
 */
public class Tools {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Where a command's printing goes: its own buffer while it runs; nowhere once it exited. */
    private static final class Switch extends OutputStream {
        volatile OutputStream to = OutputStream.nullOutputStream();

        @Override
        public void write(int b) {
            try {
                to.write(b);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            try {
                to.write(b, off, len);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /** Thrown where the command's JVM would have ended; an Error, so that a tool's catch of Exception lets it by. */
    private static final class Exited extends Error {
        Exited() {
            super(null, null, false, false);
        }
    }

    private static final Switch OUT = new Switch(), ERR = new Switch();
    private static volatile Integer exitCode;
    private static final List<Runnable> HOOKS = new ArrayList<>();

    private static void exited(int code) {
        synchronized (Tools.class) {
            if (exitCode == null) {
                exitCode = code;
                OUT.to = OutputStream.nullOutputStream();
                ERR.to = OutputStream.nullOutputStream();
            }
        }
        throw new Exited();
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // Before any tool's class loads: those that keep System.out (Scala's Console) keep these.
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(ERR, true, StandardCharsets.UTF_8));
        System.setIn(new ByteArrayInputStream(new byte[0]));
        Exit.setExitProcedure((code, message) -> exited(code));
        Exit.setHaltProcedure((code, message) -> exited(code));
        Exit.setShutdownHookAdder((name, hook) -> {
            synchronized (HOOKS) {
                HOOKS.add(hook);
            }
        });
        String line;
        while ((line = commands.readLine()) != null) {
            JsonNode command = JSON.readTree(line);
            List<String> toolArgs = new ArrayList<>();
            command.get("args").forEach(arg -> toolArgs.add(arg.asText()));
            ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
            exitCode = null;
            OUT.to = out;
            ERR.to = err;
            int code = run(command.get("main").asText(), toolArgs.toArray(new String[0]));
            OUT.to = out;  // the hooks print as they would in the ending JVM
            ERR.to = err;
            runHooks();
            System.out.flush();
            System.err.flush();
            OUT.to = OutputStream.nullOutputStream();
            ERR.to = OutputStream.nullOutputStream();
            ObjectNode answer = JSON.createObjectNode();
            answer.put("code", code);
            answer.put("out", out.toString(StandardCharsets.UTF_8));
            answer.put("err", err.toString(StandardCharsets.UTF_8));
            answers.println(JSON.writeValueAsString(answer));
        }
    }

    private static int run(String mainClass, String[] args) {
        Throwable thrown = null;
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            thrown = e.getCause();
        } catch (ReflectiveOperationException e) {
            thrown = e;
        }
        synchronized (Tools.class) {
            if (exitCode != null) {
                return exitCode;
            }
            if (thrown != null) {  // as the JVM reports an exception its main threw
                System.err.print("Exception in thread \"main\" ");
                thrown.printStackTrace();
                return 1;
            }
            return 0;
        }
    }

    /** The shutdown hooks the command added, run as its JVM would at its end (each given ten seconds). */
    private static void runHooks() {
        List<Runnable> hooks;
        synchronized (HOOKS) {
            hooks = new ArrayList<>(HOOKS);
            HOOKS.clear();
        }
        for (Runnable hook : hooks) {
            Thread thread = new Thread(() -> {
                try {
                    hook.run();
                } catch (Throwable e) {
                    // an exit in a hook: the JVM was ending anyway
                }
            });
            thread.setDaemon(true);
            thread.start();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
