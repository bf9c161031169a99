// Apache Kafka's own quota arithmetic, driven by a script on stdin, so that tests/test_broker_quotas.py can hold
// kafkaproto's broker (kafkaproto/broker/state/quotas.py) to it. One answer line per command line:
//   rate LIMIT MOST         a new sensor with a Rate and an upper-bound quota of LIMIT (11 windows of 1 s, the
//                           quota defaults); MOST >= 0 caps the wait as request_percentage and connections do
//   record TIME AMOUNT      record and check the quota as ClientQuotaManager does: the wait in ms, 0 within it
//   unrecord TIME AMOUNT    record without checking (a throttled fetch's bytes, a held connection): "-"
//   strict RATE             a new TokenBucket sensor (controller_mutation_rate RATE) behind a
//   permissive RATE         StrictControllerMutationQuota or a PermissiveControllerMutationQuota
//   mutate TIME PERMITS     the quota records PERMITS at TIME: "taken" or "refused"
//   wait TIME               the quota's throttle time at TIME
// Times are the script's own milliseconds.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.metrics.QuotaViolationException;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.metrics.stats.TokenBucket;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.quota.ControllerMutationQuota;
import org.apache.kafka.server.quota.PermissiveControllerMutationQuota;
import org.apache.kafka.server.quota.QuotaUtils;
import org.apache.kafka.server.quota.StrictControllerMutationQuota;

public final class QuotaMath {
    static long now;

    static final Time CLOCK = new Time() {
        public long milliseconds() { return now; }
        public long nanoseconds() { return TimeUnit.MILLISECONDS.toNanos(now); }
        public void sleep(long ms) { now += ms; }
        public void waitObject(Object lock, Supplier<Boolean> done, long deadline) { throw new UnsupportedOperationException(); }
    };

    static MetricConfig config(double limit) {
        return new MetricConfig().timeWindow(1, TimeUnit.SECONDS).samples(11).quota(Quota.upperBound(limit));
    }

    public static void main(String[] args) throws Exception {
        Metrics metrics = new Metrics(new MetricConfig(), List.of(), CLOCK);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        Sensor sensor = null;
        long most = -1;
        ControllerMutationQuota quota = null;
        int made = 0;
        String line;
        while ((line = in.readLine()) != null) {
            String[] word = line.trim().split(" ");
            String answer;
            switch (word[0]) {
                case "rate":
                case "strict":
                case "permissive": {
                    double limit = Double.parseDouble(word[1]);
                    sensor = metrics.sensor("s" + made);
                    boolean bucket = !word[0].equals("rate");
                    sensor.add(metrics.metricName("m" + made++, "quota-math"), bucket ? new TokenBucket() : new Rate(),
                               config(limit));
                    most = bucket ? -1 : Long.parseLong(word[2]);
                    quota = word[0].equals("strict") ? new StrictControllerMutationQuota(CLOCK, sensor)
                        : word[0].equals("permissive") ? new PermissiveControllerMutationQuota(CLOCK, sensor) : null;
                    answer = "ok";
                    break;
                }
                case "record": {
                    now = Long.parseLong(word[1]);
                    long wait;
                    try {
                        sensor.record(Double.parseDouble(word[2]), now, true);
                        wait = 0;
                    } catch (QuotaViolationException e) {
                        wait = most >= 0 ? QuotaUtils.boundedThrottleTime(e, most, now) : QuotaUtils.throttleTime(e, now);
                    }
                    answer = Long.toString(wait);
                    break;
                }
                case "unrecord":
                    now = Long.parseLong(word[1]);
                    sensor.record(Double.parseDouble(word[2]), now, false);
                    answer = "-";
                    break;
                case "mutate":
                    now = Long.parseLong(word[1]);
                    try {
                        quota.record(Double.parseDouble(word[2]));
                        answer = "taken";
                    } catch (ThrottlingQuotaExceededException e) {
                        answer = "refused";
                    }
                    break;
                case "wait":
                    now = Long.parseLong(word[1]);
                    answer = Integer.toString(quota.throttleTime());
                    break;
                default:
                    answer = "unknown command " + word[0];
            }
            System.out.println(answer);
            System.out.flush();
        }
    }
}
