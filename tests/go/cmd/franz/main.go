// Command franz runs one scenario of franz-go (kgo, with kadm for administration) against a broker and prints
// what it saw as one JSON line:
//
//	franz BOOTSTRAP produce NAME CODEC   idempotent produce with CODEC (none, gzip, snappy, lz4, zstd), read back
//	franz BOOTSTRAP group NAME MODE      a consumer group of two (MODE: eager, cooperative-sticky, kip848;
//	                                     with -regex, subscribed by a regular expression)
//	franz BOOTSTRAP txn NAME             transactions committed, aborted and open, read back read_committed
//	franz BOOTSTRAP admin NAME           create, describe, grow and delete topics
//	franz BOOTSTRAP session NAME         a small everyday session (tests/data/captures/franz-go.pcap)
//	franz BOOTSTRAP moves NAME SETTINGS  an idempotent producer, then a consumer group, on topic NAME, each held
//	                                     at the gates of SETTINGS (JSON, scenario.Moves) while the test changes
//	                                     the cluster
//	franz BOOTSTRAP fault NAME           one record produced to topic NAME, which the test faulted: how it ended
package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kafkaproto.test/goclients/internal/scenario"
)

const step = scenario.Step

var (
	args scenario.Args
	ctx  context.Context
)

func main() {
	args = scenario.Parse("franz", "produce CODEC | group eager|cooperative-sticky|kip848 | txn | admin | session | "+
		"moves SETTINGS | fault")
	var cancel context.CancelFunc
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	switch args.Scenario {
	case "produce":
		produce(args.Mode)
	case "group":
		group(args.Mode)
	case "txn":
		transactions()
	case "admin":
		admin()
	case "session":
		session()
	case "moves":
		moves(args.Mode)
	case "fault":
		fault()
	default:
		scenario.Fail("unknown scenario %q", args.Scenario)
	}
}

func client(opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(args.Brokers()...), kgo.ClientID("kafkaproto-franz-" + args.Scenario),
		kgo.RetryTimeout(20 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	scenario.Check(err, "creating a client")
	return cl
}

func createTopic(adm *kadm.Client, topic string, partitions int32) {
	created, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	scenario.Check(err, "creating topic "+topic)
	scenario.Check(created.Err, "creating topic "+topic)
}

// ---- produce -----------------------------------------------------------------------------------------------

var codecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// Values long and repetitive enough that every codec really compresses them.
func payload(i int) []byte {
	return []byte(fmt.Sprintf("%d|%s", i, strings.Repeat("kafkaproto franz-go ", 10)))
}

func index(value []byte) int {
	n, err := strconv.Atoi(strings.SplitN(string(value), "|", 2)[0])
	if err != nil {
		scenario.Fail("a record read back has a value not produced here: %q", value)
	}
	return n
}

// produce writes 300 records to 3 partitions in three idempotent rounds, then reads them back from the start.
// Per record produced: [partition, offset, index, producer ID]; per record read: [partition, offset, index,
// the codec of its batch, producer ID, producer epoch, 1 if key and header match the index else 0].
func produce(codecName string) {
	codec, ok := codecs[codecName]
	if !ok {
		scenario.Fail("unknown codec %q", codecName)
	}
	topic := args.Name
	adm := kadm.NewClient(client())
	defer adm.Close()
	createTopic(adm, topic, 3)

	producer := client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(5*time.Millisecond))
	var produced [][4]int64
	for round := 0; round < 3; round++ {
		var batch []*kgo.Record
		for i := round * 100; i < (round+1)*100; i++ {
			batch = append(batch, &kgo.Record{Partition: int32(i % 3), Key: []byte(fmt.Sprintf("key-%d", i)),
				Value: payload(i), Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}})
		}
		for _, r := range producer.ProduceSync(ctx, batch...) {
			scenario.Check(r.Err, "producing")
			produced = append(produced, [4]int64{int64(r.Record.Partition), r.Record.Offset,
				int64(index(r.Record.Value)), r.Record.ProducerID})
		}
	}
	producer.Close()

	consumer := client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer consumer.Close()
	var consumed [][7]int64
	deadline := time.Now().Add(step)
	for len(consumed) < len(produced) && time.Now().Before(deadline) {
		poll, cancel := context.WithTimeout(ctx, time.Second)
		fetches := consumer.PollFetches(poll)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				scenario.Fail("fetching %s[%d]: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			i := index(r.Value)
			intact := int64(0)
			if string(r.Key) == fmt.Sprintf("key-%d", i) && len(r.Headers) == 1 && r.Headers[0].Key == "n" &&
				string(r.Headers[0].Value) == strconv.Itoa(i) {
				intact = 1
			}
			consumed = append(consumed, [7]int64{int64(r.Partition), r.Offset, int64(i),
				int64(r.Attrs.CompressionType()), r.ProducerID, int64(r.ProducerEpoch), intact})
		})
	}
	scenario.Emit(map[string]any{"codec": codecName, "produced": produced, "consumed": consumed})
}

// ---- a consumer group of two ---------------------------------------------------------------------------------

// member is one consumer of the group, polling, processing and committing synchronously in its own goroutine.
// BlockRebalanceOnPoll keeps a rebalance from taking partitions between a poll and the commit that follows it.
type member struct {
	name     string
	cl       *kgo.Client
	stop     context.CancelFunc
	finished chan struct{}

	mu           sync.Mutex
	assigned     map[int32]bool
	read         map[string][]string // phase -> "partition:offset" of each record read in that phase
	pending      bool                // records processed, not yet committed
	commitErrors []string
	keys         map[int16]int // the requests this member's client sent, by API key
}

// OnBrokerWrite counts the requests sent (kgo.HookBrokerWrite): which group protocol was really spoken.
func (m *member) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		m.mu.Lock()
		m.keys[key]++
		m.mu.Unlock()
	}
}

func (m *member) onAssigned(_ context.Context, _ *kgo.Client, got map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range got {
		for _, p := range ps {
			m.assigned[p] = true
		}
	}
}

func (m *member) onTaken(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range gone {
		for _, p := range ps {
			delete(m.assigned, p)
		}
	}
}

func join(name, topic, group, mode string) *member {
	m := &member{name: name, finished: make(chan struct{}), assigned: map[int32]bool{},
		read: map[string][]string{}, keys: map[int16]int{}}
	// MODE-regex subscribes by a regular expression matching only the topic (franz-go resolves it itself in the
	// classic protocol; with KIP-848 the broker does).
	subscription := []kgo.Opt{kgo.ConsumeTopics(topic)}
	if strings.HasSuffix(mode, "-regex") {
		mode = strings.TrimSuffix(mode, "-regex")
		subscription = []kgo.Opt{kgo.ConsumeRegex(), kgo.ConsumeTopics("^" + regexp.QuoteMeta(topic) + "$")}
	}
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250 * time.Millisecond), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second), kgo.WithHooks(m),
		kgo.OnPartitionsAssigned(m.onAssigned), kgo.OnPartitionsRevoked(m.onTaken), kgo.OnPartitionsLost(m.onTaken)}
	opts = append(opts, subscription...)
	switch mode {
	case "eager":
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	case "cooperative-sticky":
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	case "kip848":
		// The broker assigns (KIP-848, ConsumerGroupHeartbeat). franz-go asks for it with ServerSideBalancer and a
		// sticky or range balancer first, and falls back to the classic protocol on a broker that does not serve
		// ConsumerGroupHeartbeat v1+: the requests counted in keys tell which one was spoken.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	default:
		scenario.Fail("unknown group mode %q", mode)
	}
	m.cl = client(opts...)
	var loop context.Context
	loop, m.stop = context.WithCancel(ctx)
	go m.consume(loop)
	return m
}

func (m *member) consume(loop context.Context) {
	defer close(m.finished)
	for loop.Err() == nil {
		poll, cancel := context.WithTimeout(loop, 250*time.Millisecond)
		fetches := m.cl.PollFetches(poll)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			phase := strings.SplitN(string(r.Value), "-", 2)[0]
			m.mu.Lock()
			m.read[phase] = append(m.read[phase], fmt.Sprintf("%d:%d", r.Partition, r.Offset))
			m.pending = true
			m.mu.Unlock()
		})
		// Not under loop's context: what the last poll returned is committed even when the member is stopping.
		err := m.cl.CommitUncommittedOffsets(ctx)
		m.mu.Lock()
		if err == nil {
			m.pending = false
		} else {
			m.commitErrors = append(m.commitErrors, err.Error())
		}
		m.mu.Unlock()
		m.cl.AllowRebalance()
	}
}

// Leave stops polling (every record polled is committed by then) and closes the client, which leaves the group.
func (m *member) Leave() {
	m.stop()
	<-m.finished
	m.cl.CloseAllowingRebalance()
}

func (m *member) State() (assigned []int32, read map[string]int, pending bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	read = map[string]int{}
	for phase, records := range m.read {
		read[phase] = len(records)
	}
	return scenario.Sorted(m.assigned), read, m.pending
}

func (m *member) String() string {
	assigned, read, pending := m.State()
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%s: assigned %v, read %v, uncommitted %v, commit errors %v", m.name, assigned, read,
		pending, m.commitErrors)
}

// group runs scenario.Group with two franz-go members and reports, besides what it returns: what each member read
// per phase (as partition:offset), its commit errors and the API keys its client sent; the offsets committed as
// the broker reads them back, against the partitions' ends; and the group as the broker describes it while A is
// in it and after A left.
func group(mode string) {
	topic, groupID := args.Name, args.Name+"-group"
	adm := kadm.NewClient(client())
	defer adm.Close()
	createTopic(adm, topic, 4)
	producer := client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer producer.Close()
	produce := func(value string, partition int32) string {
		r, err := producer.ProduceSync(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}).First()
		scenario.Check(err, "producing")
		return fmt.Sprintf("%d:%d", r.Partition, r.Offset)
	}
	members := map[string]*member{}
	joinAs := func(name string) scenario.Member {
		members[name] = join(name, topic, groupID, mode)
		return members[name]
	}
	run, a, _ := scenario.Group(joinAs, produce)

	committed := map[int32]int64{}
	offsets, err := adm.FetchOffsets(ctx, groupID)
	scenario.Check(err, "fetching the group's committed offsets")
	offsets.Each(func(o kadm.OffsetResponse) {
		scenario.Check(o.Err, "a committed offset")
		committed[o.Partition] = o.At
	})
	ends := map[int32]int64{}
	listed, err := adm.ListEndOffsets(ctx, topic)
	scenario.Check(err, "listing end offsets")
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	described := describeGroup(adm, groupID, mode)
	a.Leave()
	afterwards := describeGroup(adm, groupID, mode)

	result := map[string]any{"mode": mode, "assignments": run.Assignments, "flowed": run.Flowed,
		"seconds": run.Seconds, "committed": committed, "ends": ends, "described": described,
		"described_after_leaving": afterwards}
	for name, m := range members {
		m.mu.Lock()
		keys := map[string]int{}
		for k, n := range m.keys {
			keys[strconv.Itoa(int(k))] = n
		}
		result[name] = map[string]any{"read": m.read, "commit_errors": m.commitErrors, "api_keys": keys}
		m.mu.Unlock()
	}
	scenario.Emit(result)
}

// describeGroup asks how the broker sees the group: state, protocol (classic) or assignor (KIP-848), and each
// member's assigned partitions.
func describeGroup(adm *kadm.Client, groupID, mode string) map[string]any {
	var members [][]int32
	if strings.HasPrefix(mode, "kip848") {
		// Not fatal: a broker that let franz-go fall back to the classic protocol does not serve this either, and
		// the API keys reported say so more plainly.
		all, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err == nil {
			err = all[groupID].Err
		}
		if err != nil {
			return map[string]any{"error": err.Error()}
		}
		g := all[groupID]
		for _, m := range g.Members {
			var ps []int32
			for p := range m.Assignment[args.Name] {
				ps = append(ps, p)
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			members = append(members, ps)
		}
		return map[string]any{"state": g.State, "protocol": g.AssignorName, "members": members}
	}
	all, err := adm.DescribeGroups(ctx, groupID)
	scenario.Check(err, "describing the group")
	g := all[groupID]
	scenario.Check(g.Err, "describing the group")
	for _, m := range g.Members {
		var ps []int32
		if assigned, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range assigned.Topics {
				ps = append(ps, t.Partitions...)
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		members = append(members, ps)
	}
	return map[string]any{"state": g.State, "protocol_type": g.ProtocolType, "protocol": g.Protocol,
		"members": members}
}

// ---- transactions --------------------------------------------------------------------------------------------

// transactions: on 2 partitions, a transaction of 10 records committed, one of 5 aborted, and one of 4 left open
// while a read_committed consumer reads (it must stop at the open one), then committed. Reported: what the
// read_committed consumer read before and after the last commit, the last stable and end offsets while the
// transaction was open, and what a read_uncommitted consumer reads of it all.
func transactions() {
	topic := args.Name
	adm := kadm.NewClient(client())
	defer adm.Close()
	createTopic(adm, topic, 2)
	producer := client(kgo.TransactionalID(args.Name+"-tid"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer producer.Close()
	// end is "commit", "abort", or "" to leave the transaction open.
	inTransaction := func(prefix string, n int, end string) {
		scenario.Check(producer.BeginTransaction(), "beginning a transaction")
		var batch []*kgo.Record
		for i := 0; i < n; i++ {
			batch = append(batch, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
		}
		scenario.Check(producer.ProduceSync(ctx, batch...).FirstErr(), "producing in a transaction")
		if end != "" {
			scenario.Check(producer.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")), end)
		}
	}
	inTransaction("committed", 10, "commit")
	inTransaction("aborted", 5, "abort")
	inTransaction("open", 4, "")

	offsetsOf := func(listed kadm.ListedOffsets, err error) map[int32]int64 {
		scenario.Check(err, "listing offsets")
		out := map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) {
			scenario.Check(o.Err, "listing offsets")
			out[o.Partition] = o.Offset
		})
		return out
	}
	stableWhileOpen := offsetsOf(adm.ListCommittedOffsets(ctx, topic))
	endWhileOpen := offsetsOf(adm.ListEndOffsets(ctx, topic))

	reader := func(level kgo.IsolationLevel) *kgo.Client {
		return client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
			0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(250*time.Millisecond))
	}
	// Reads until want records came, then on for a second more to see whether any that must not come do.
	readOn := func(cl *kgo.Client, want int) []string {
		var got []string
		deadline := time.Now().Add(step)
		quiet := time.Time{}
		for time.Now().Before(deadline) && (quiet.IsZero() || time.Now().Before(quiet)) {
			poll, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
			fetches := cl.PollFetches(poll)
			cancel()
			fetches.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					scenario.Fail("fetching %s[%d]: %v", t, p, err)
				}
			})
			fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			if len(got) >= want && quiet.IsZero() {
				quiet = time.Now().Add(time.Second)
			}
		}
		sort.Strings(got)
		return got
	}
	committedReader := reader(kgo.ReadCommitted())
	defer committedReader.Close()
	beforeCommit := readOn(committedReader, 10)
	scenario.Check(producer.EndTransaction(ctx, kgo.TryCommit), "committing the open transaction")
	afterCommit := readOn(committedReader, 4)
	uncommittedReader := reader(kgo.ReadUncommitted())
	defer uncommittedReader.Close()
	everything := readOn(uncommittedReader, 19)
	scenario.Emit(map[string]any{
		"read_committed_before_commit": beforeCommit,
		"read_committed_after_commit":  afterCommit,
		"read_uncommitted":             everything,
		"stable_while_open":            stableWhileOpen,
		"end_while_open":               endWhileOpen,
		"stable_after":                 offsetsOf(adm.ListCommittedOffsets(ctx, topic)),
		"end_after":                    offsetsOf(adm.ListEndOffsets(ctx, topic)),
	})
}

// ---- administration ------------------------------------------------------------------------------------------

func errorName(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

// admin: two topics created in one request (one with configs), one again (refused), one only validated (not
// made); described by metadata and configs; one grown by 2 partitions; both deleted, then deleted again (refused).
func admin() {
	adm := kadm.NewClient(client())
	defer adm.Close()
	plain, compacted, validated := args.Name+"-plain", args.Name+"-compacted", args.Name+"-validated"
	configs := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"),
		"retention.ms": kadm.StringPtr("3600000")}
	created, err := adm.CreateTopics(ctx, 3, 1, configs, plain, compacted)
	scenario.Check(err, "creating topics")
	creation := map[string]any{}
	for _, t := range []string{plain, compacted} {
		creation[t] = map[string]any{"error": errorName(created[t].Err), "partitions": created[t].NumPartitions,
			"has_id": created[t].ID != kadm.TopicID{}}
	}
	again, err := adm.CreateTopic(ctx, 1, 1, nil, plain)
	if err != nil && again.Err == nil {
		scenario.Fail("creating a topic again: %v", err)
	}
	dry, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, validated)
	scenario.Check(err, "validating a topic")

	listed, err := adm.ListTopics(ctx, plain, compacted, validated)
	scenario.Check(err, "listing topics")
	topics := map[string]any{}
	for name, t := range listed {
		var leaders []int32
		for _, p := range t.Partitions.Sorted() {
			leaders = append(leaders, p.Leader)
		}
		topics[name] = map[string]any{"error": errorName(t.Err), "partitions": len(t.Partitions),
			"leaders": leaders, "id_matches": t.ID == created[name].ID}
	}
	described, err := adm.DescribeTopicConfigs(ctx, compacted)
	scenario.Check(err, "describing configs")
	settings := map[string]any{}
	for _, rc := range described {
		scenario.Check(rc.Err, "describing configs")
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" || c.Key == "retention.ms" {
				settings[c.Key] = map[string]any{"value": c.MaybeValue(), "source": c.Source.String()}
			}
		}
	}
	grown, err := adm.CreatePartitions(ctx, 2, plain)
	scenario.Check(err, "adding partitions")
	var relisted kadm.TopicDetails
	if grown[plain].Err == nil {
		// A broker may show new partitions in its metadata a little after answering (Kafka does).
		showsFive := func() bool {
			relisted, err = adm.ListTopics(ctx, plain)
			scenario.Check(err, "listing the grown topic")
			return len(relisted[plain].Partitions) == 5
		}
		scenario.WaitFor(step, "the new partitions to show in the metadata", showsFive,
			func() string { return fmt.Sprintf("%d partitions listed", len(relisted[plain].Partitions)) })
	}

	deleted, err := adm.DeleteTopics(ctx, plain, compacted)
	scenario.Check(err, "deleting topics")
	deletion := map[string]string{}
	for name, d := range deleted {
		deletion[name] = errorName(d.Err)
	}
	var remaining []string
	gone := func() bool {
		left, err := adm.ListTopics(ctx)
		scenario.Check(err, "listing topics after deleting")
		remaining = nil
		for _, name := range []string{plain, compacted} {
			if left.Has(name) {
				remaining = append(remaining, name)
			}
		}
		return len(remaining) == 0
	}
	scenario.WaitFor(step, "the deleted topics to leave the metadata", gone,
		func() string { return fmt.Sprintf("still listed: %v", remaining) })
	deletedAgain, err := adm.DeleteTopic(ctx, plain)
	if err != nil && deletedAgain.Err == nil {
		scenario.Fail("deleting a topic again: %v", err)
	}
	scenario.Emit(map[string]any{
		"created":       creation,
		"created_again": errorName(again.Err),
		"validated":     map[string]any{"error": errorName(dry[validated].Err), "partitions": dry[validated].NumPartitions},
		"listed":        topics,
		"configs":       settings,
		"grown":         errorName(grown[plain].Err),
		"deleted":       deletion,
		"deleted_again": errorName(deletedAgain.Err),
	})
}

// ---- a small everyday session ----------------------------------------------------------------------------------

// session does what an application usually does, small enough to keep as a capture: create a topic of two
// partitions, produce 20 idempotent lz4 records with a header each, commit one transaction and abort another, read
// everything read_committed in a KIP-848 group, commit, leave, and delete the topic. It reports how many records
// the group read (21: the aborted one is not among them).
func session() {
	topic, groupID := args.Name, args.Name+"-group"
	adm := kadm.NewClient(client())
	defer adm.Close()
	createTopic(adm, topic, 2)

	producer := client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(5*time.Millisecond))
	var batch []*kgo.Record
	for i := 0; i < 20; i++ {
		batch = append(batch, &kgo.Record{Partition: int32(i % 2), Key: []byte(fmt.Sprintf("k%d", i)),
			Value:   []byte(fmt.Sprintf("value %d from franz-go", i)),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprintf("t%d", i))}}})
	}
	scenario.Check(producer.ProduceSync(ctx, batch...).FirstErr(), "producing")
	producer.Close()

	txn := client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(topic+"-txn"))
	for _, commit := range []bool{true, false} {
		scenario.Check(txn.BeginTransaction(), "beginning a transaction")
		value := fmt.Sprintf("committed: %v", commit)
		scenario.Check(txn.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(value)}).FirstErr(),
			"producing in a transaction")
		scenario.Check(txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)), "ending a transaction")
	}
	txn.Close()

	consumer := client(kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond))
	read := 0
	deadline := time.Now().Add(step)
	for read < 21 && time.Now().Before(deadline) {
		poll, cancel := context.WithTimeout(ctx, time.Second)
		read += consumer.PollFetches(poll).NumRecords()
		cancel()
	}
	scenario.Check(consumer.CommitUncommittedOffsets(ctx), "committing")
	consumer.Close()
	deleted, err := adm.DeleteTopics(ctx, topic)
	scenario.Check(err, "deleting the topic")
	scenario.Check(deleted.Error(), "deleting the topic")
	if read != 21 {
		scenario.Fail("the group read %d records, not 21", read)
	}
	scenario.Emit(map[string]any{"read": read})
}

// ---- a cluster changing under a producer and a consumer group -------------------------------------------------

// moves writes the records "0", "1", ... one every 10 ms to the topic NAME (one partition, made by the test) from
// an idempotent producer with acks=all, saying "ack OFFSET VALUE" for each acknowledged and "fail VALUE ERROR" for
// each that failed; then a consumer of the group NAME-group reads them from the start, saying "read OFFSET VALUE"
// for each, and commits after each poll (of at most 10 records). At the gates it waits for the test
// (scenario.Moves). Reported: the commits that failed, the offset committed at the end as the broker reads it
// back, and how many records read were written in each leader epoch (a batch's partitionLeaderEpoch).
func moves(mode string) {
	settings := scenario.ParseMoves(mode)
	gates := scenario.ListenForGates()
	topic, group := args.Name, args.Name+"-group"

	// Idempotent writes and acks=all are kgo's defaults (kgo.DisableIdempotentWrite, kgo.RequiredAcks); said
	// here so that the scenario does not rest on a default. After a broker stops, kgo finds the new leader in
	// metadata it asks again at most once per MetadataMinAge (5 s by default).
	producer := client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(100*time.Millisecond))
	for i := 0; i < settings.Records; i++ {
		gates.Await(settings.Needed(settings.ProducerGates, i), fmt.Sprintf("the test's gate before record %d", i))
		value := strconv.Itoa(i)
		producer.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(r *kgo.Record, err error) {
			if err != nil {
				scenario.Say("fail %s %v", value, err)
			} else {
				scenario.Say("ack %d %s", r.Offset, value)
			}
		})
		time.Sleep(10 * time.Millisecond)
	}
	scenario.Check(producer.Flush(ctx), "flushing the producer")
	producer.Close()

	consumer := client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(250*time.Millisecond))
	gate := len(settings.ProducerGates) + 1 // the consumer's gate is the one after the producer's
	read := 0
	epochs := map[int32]int{}
	var commitErrors []string
	stalled := time.Now().Add(step)
	for read < settings.Records {
		limit := settings.Records
		if gates.Opened() < gate {
			limit = min(settings.ConsumerGate+settings.Window, settings.Records)
		}
		if read >= limit {
			gates.Await(gate, fmt.Sprintf("the test's gate after %d records read", read))
			continue
		}
		if time.Now().After(stalled) {
			scenario.Fail("read nothing for %s after %d records", step, read)
		}
		poll, cancel := context.WithTimeout(ctx, time.Second)
		fetches := consumer.PollRecords(poll, min(10, limit-read))
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				scenario.Fail("fetching %s[%d]: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			epochs[r.LeaderEpoch]++
			scenario.Say("read %d %s", r.Offset, r.Value)
			stalled = time.Now().Add(step)
		})
		if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
			commitErrors = append(commitErrors, err.Error())
		}
	}
	adm := kadm.NewClient(client())
	defer adm.Close()
	offsets, err := adm.FetchOffsets(ctx, group)
	scenario.Check(err, "fetching the group's committed offsets")
	committed, found := offsets.Lookup(topic, 0)
	if !found {
		scenario.Fail("the group has no committed offset for %s[0]", topic)
	}
	scenario.Check(committed.Err, "the group's committed offset")
	consumer.Close()
	scenario.Emit(map[string]any{"commit_errors": commitErrors, "committed": committed.At, "epochs": epochs})
}

// ---- a fault the broker answers with ---------------------------------------------------------------------------

// fault produces one record ("faulted") to the topic NAME, which the test made and installed a fault for, from an
// idempotent producer with acks=all, and reports how that ended: the offset it was written at (-1 if not), and
// the error ProduceSync gave: its text, and the name of the *kerr.Error inside it ("" if none).
func fault() {
	// A batch retried after a retriable error waits for the metadata to be asked again, at most once per
	// MetadataMinAge (5 s by default).
	producer := client(kgo.DefaultProduceTopic(args.Name), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(100*time.Millisecond))
	defer producer.Close()
	r, err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("faulted")}).First()
	offset, text, named := int64(-1), "", ""
	if err == nil {
		offset = r.Offset
	} else {
		text = err.Error()
		var ke *kerr.Error
		if errors.As(err, &ke) {
			named = ke.Message
		}
	}
	scenario.Emit(map[string]any{"offset": offset, "error": text, "kafka_error": named})
}
