// Command sarama runs one scenario of IBM's Sarama client against a broker and prints what it saw as one JSON line:
//
//	sarama BOOTSTRAP produce NAME   idempotent produce of 300 records to 3 partitions, read back
//	sarama BOOTSTRAP group NAME     a consumer group of two: join, rebalance, commit, one leaves
//	sarama BOOTSTRAP admin NAME     create, describe, grow and delete topics; describe the cluster
//	sarama BOOTSTRAP session NAME   a small everyday session (tests/data/captures/sarama.pcap)
//	sarama BOOTSTRAP moves NAME SETTINGS
//	                                an idempotent producer, then a consumer group, on topic NAME, each held at the
//	                                gates of SETTINGS (JSON, scenario.Moves) while the test changes the cluster
//	sarama BOOTSTRAP fault NAME     one record produced to topic NAME, which the test faulted: how it ended
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"kafkaproto.test/goclients/internal/scenario"
)

const step = scenario.Step

var (
	args scenario.Args
	ctx  context.Context
)

func main() {
	args = scenario.Parse("sarama", "produce | group | admin | session | moves SETTINGS | fault")
	var cancel context.CancelFunc
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	switch args.Scenario {
	case "produce":
		produce()
	case "group":
		group()
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

// config is Sarama's, set to the newest Kafka it knows: it asks the broker (ApiVersions) and uses, per API, the
// newest version both have.
func config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.MaxVersion
	cfg.ClientID = "kafkaproto-sarama-" + args.Scenario
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	return cfg
}

func newAdmin() sarama.ClusterAdmin {
	adm, err := sarama.NewClusterAdmin(args.Brokers(), config())
	scenario.Check(err, "creating a cluster admin")
	return adm
}

func createTopic(adm sarama.ClusterAdmin, topic string, partitions int32) {
	scenario.Check(adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false),
		"creating topic "+topic)
}

// errorCode is the Kafka error code inside err: 0 for none, -1 (with the text kept by the caller) for an error
// that is no Kafka error.
func errorCode(err error) int {
	if err == nil {
		return 0
	}
	var ke sarama.KError
	if errors.As(err, &ke) {
		return int(ke)
	}
	return -1
}

// ---- produce -----------------------------------------------------------------------------------------------

// idempotentProducer is a synchronous idempotent producer (acks=all, one request in flight) that sends to the
// partition each message names, in the codec given.
func idempotentProducer(codec sarama.CompressionCodec) sarama.SyncProducer {
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = codec
	producer, err := sarama.NewSyncProducer(args.Brokers(), cfg)
	scenario.Check(err, "creating an idempotent producer")
	return producer
}

func index(value []byte) int {
	n, err := strconv.Atoi(strings.SplitN(string(value), "|", 2)[0])
	if err != nil {
		scenario.Fail("a record read back has a value not produced here: %q", value)
	}
	return n
}

// produce: 300 records to 3 partitions in three rounds from an idempotent producer (acks=all, one request in
// flight), then each partition read from its start. Per record produced: [partition, offset, index]; per record
// read: [partition, offset, index, 1 if key and header match the index else 0].
func produce() {
	topic := args.Name
	adm := newAdmin()
	defer adm.Close()
	createTopic(adm, topic, 3)

	producer := idempotentProducer(sarama.CompressionSnappy)
	var produced [][3]int64
	for round := 0; round < 3; round++ {
		var batch []*sarama.ProducerMessage
		for i := round * 100; i < (round+1)*100; i++ {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3),
				Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("%d|sarama", i)),
				Headers: []sarama.RecordHeader{{Key: []byte("n"), Value: []byte(strconv.Itoa(i))}}})
		}
		scenario.Check(producer.SendMessages(batch), "producing")
		for _, m := range batch {
			value, _ := m.Value.Encode()
			produced = append(produced, [3]int64{int64(m.Partition), m.Offset, int64(index(value))})
		}
	}
	scenario.Check(producer.Close(), "closing the producer")

	consumer, err := sarama.NewConsumer(args.Brokers(), config())
	scenario.Check(err, "creating a consumer")
	defer consumer.Close()
	var consumed [][4]int64
	for p := int32(0); p < 3; p++ {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		scenario.Check(err, "consuming a partition")
		timeout := time.After(step)
	reading:
		for n := 0; n < 100; n++ {
			select {
			case m := <-pc.Messages():
				i := index(m.Value)
				intact := int64(0)
				if string(m.Key) == fmt.Sprintf("key-%d", i) && len(m.Headers) == 1 &&
					string(m.Headers[0].Key) == "n" && string(m.Headers[0].Value) == strconv.Itoa(i) {
					intact = 1
				}
				consumed = append(consumed, [4]int64{int64(m.Partition), m.Offset, int64(i), intact})
			case err := <-pc.Errors():
				scenario.Fail("consuming partition %d: %v", p, err)
			case <-timeout:
				break reading
			}
		}
		scenario.Check(pc.Close(), "closing a partition consumer")
	}
	scenario.Emit(map[string]any{"produced": produced, "consumed": consumed})
}

// ---- a consumer group of two ---------------------------------------------------------------------------------

// member is one consumer of the group (Sarama's client-side range assignor, eager), marking and committing each
// record synchronously as it processes it.
type member struct {
	name     string
	group    sarama.ConsumerGroup
	stop     context.CancelFunc
	finished chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
	read     map[string][]string // phase -> "partition:offset" of each record read in that phase
	pending  int                 // records processed, not yet committed (the claims run concurrently)
	errors   []string
}

func (m *member) Setup(session sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range session.Claims() {
		for _, p := range ps {
			m.assigned[p] = true
		}
	}
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assigned = map[int32]bool{}
	return nil
}

func (m *member) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			phase := strings.SplitN(string(msg.Value), "-", 2)[0]
			m.mu.Lock()
			m.read[phase] = append(m.read[phase], fmt.Sprintf("%d:%d", msg.Partition, msg.Offset))
			m.pending++
			m.mu.Unlock()
			session.MarkMessage(msg, "")
			session.Commit() // synchronous; a failure arrives on the group's error channel
			m.mu.Lock()
			m.pending--
			m.mu.Unlock()
		case <-session.Context().Done():
			return nil
		}
	}
}

func join(name, topic, groupID string) *member {
	m := &member{name: name, finished: make(chan struct{}), assigned: map[int32]bool{}, read: map[string][]string{}}
	cfg := config()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	group, err := sarama.NewConsumerGroup(args.Brokers(), groupID, cfg)
	scenario.Check(err, "creating consumer group member "+name)
	m.group = group
	var loop context.Context
	loop, m.stop = context.WithCancel(ctx)
	go func() {
		for err := range group.Errors() {
			m.mu.Lock()
			m.errors = append(m.errors, err.Error())
			m.mu.Unlock()
		}
	}()
	go func() {
		defer close(m.finished)
		for loop.Err() == nil {
			// Consume returns at each rebalance; calling it again rejoins.
			if err := m.group.Consume(loop, []string{topic}, m); err != nil && loop.Err() == nil {
				m.mu.Lock()
				m.errors = append(m.errors, err.Error())
				m.mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return m
}

// Leave stops consuming and closes the member, which sends LeaveGroup.
func (m *member) Leave() {
	m.stop()
	<-m.finished
	scenario.Check(m.group.Close(), "closing member "+m.name)
}

func (m *member) State() (assigned []int32, read map[string]int, pending bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	read = map[string]int{}
	for phase, records := range m.read {
		read[phase] = len(records)
	}
	return scenario.Sorted(m.assigned), read, m.pending > 0
}

func (m *member) String() string {
	assigned, read, pending := m.State()
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%s: assigned %v, read %v, uncommitted %v, errors %v", m.name, assigned, read, pending,
		m.errors)
}

// group runs scenario.Group with two Sarama members and reports, besides what it returns: what each member read
// per phase (as partition:offset) and the errors it met, the offsets committed as the broker reads them back
// against the partitions' ends, and the group as the broker describes it while A is in it and after A left.
func group() {
	topic, groupID := args.Name, args.Name+"-group"
	adm := newAdmin()
	defer adm.Close()
	createTopic(adm, topic, 4)
	cfg := config()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer(args.Brokers(), cfg)
	scenario.Check(err, "creating a producer")
	defer producer.Close()
	produce := func(value string, partition int32) string {
		p, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition,
			Value: sarama.StringEncoder(value)})
		scenario.Check(err, "producing")
		return fmt.Sprintf("%d:%d", p, offset)
	}
	members := map[string]*member{}
	joinAs := func(name string) scenario.Member {
		members[name] = join(name, topic, groupID)
		return members[name]
	}
	run, a, _ := scenario.Group(joinAs, produce)

	fetched, err := adm.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0, 1, 2, 3}})
	scenario.Check(err, "fetching the group's committed offsets")
	committed := map[int32]int64{}
	for p, block := range fetched.Blocks[topic] {
		if block.Err != sarama.ErrNoError {
			scenario.Fail("a committed offset: %v", block.Err)
		}
		committed[p] = block.Offset
	}
	client, err := sarama.NewClient(args.Brokers(), config())
	scenario.Check(err, "creating a client")
	defer client.Close()
	ends := map[int32]int64{}
	for p := int32(0); p < 4; p++ {
		ends[p], err = client.GetOffset(topic, p, sarama.OffsetNewest)
		scenario.Check(err, "listing an end offset")
	}
	described := describeGroup(adm, groupID)
	a.Leave()
	afterwards := describeGroup(adm, groupID)

	result := map[string]any{"assignments": run.Assignments, "flowed": run.Flowed, "seconds": run.Seconds,
		"committed": committed, "ends": ends, "described": described, "described_after_leaving": afterwards}
	for name, m := range members {
		m.mu.Lock()
		result[name] = map[string]any{"read": m.read, "errors": m.errors}
		m.mu.Unlock()
	}
	scenario.Emit(result)
}

func describeGroup(adm sarama.ClusterAdmin, groupID string) map[string]any {
	groups, err := adm.DescribeConsumerGroups([]string{groupID})
	scenario.Check(err, "describing the group")
	if len(groups) != 1 {
		scenario.Fail("describing one group answered %d", len(groups))
	}
	g := groups[0]
	if g.Err != sarama.ErrNoError {
		scenario.Fail("describing the group: %v", g.Err)
	}
	var members [][]int32
	for _, m := range g.Members {
		assignment, err := m.GetMemberAssignment()
		scenario.Check(err, "decoding a member's assignment")
		ps := append([]int32(nil), assignment.Topics[args.Name]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		members = append(members, ps)
	}
	return map[string]any{"state": g.State, "protocol_type": g.ProtocolType, "protocol": g.Protocol,
		"members": members}
}

// ---- administration ------------------------------------------------------------------------------------------

// admin: a topic created with configs, created again (refused), one only validated (not made); the cluster, the
// topics and the configs described; the topic grown to 5 partitions; deleted, then deleted again (refused).
// Errors are reported as Kafka error codes.
func admin() {
	adm := newAdmin()
	defer adm.Close()
	topic, validated := args.Name+"-topic", args.Name+"-validated"
	retention := "3600000"
	compact := "compact"
	detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention, "cleanup.policy": &compact}}
	scenario.Check(adm.CreateTopic(topic, detail, false), "creating a topic")
	again := adm.CreateTopic(topic, detail, false)
	dry := adm.CreateTopic(validated, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, true)

	brokers, controller, err := adm.DescribeCluster()
	scenario.Check(err, "describing the cluster")
	var addresses []string
	for _, b := range brokers {
		addresses = append(addresses, b.Addr())
	}
	metadata, err := adm.DescribeTopics([]string{topic, validated})
	scenario.Check(err, "describing topics")
	described := map[string]any{}
	for _, t := range metadata {
		var leaders []int32
		for _, p := range t.Partitions {
			leaders = append(leaders, p.Leader)
		}
		sort.Slice(leaders, func(i, j int) bool { return leaders[i] < leaders[j] })
		described[t.Name] = map[string]any{"error": int(t.Err), "partitions": len(t.Partitions), "leaders": leaders}
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	scenario.Check(err, "describing configs")
	configs := map[string]any{}
	for _, e := range entries {
		if e.Name == "retention.ms" || e.Name == "cleanup.policy" {
			configs[e.Name] = map[string]any{"value": e.Value, "source": e.Source.String()}
		}
	}
	scenario.Check(adm.CreatePartitions(topic, 5, nil, false), "growing the topic to 5 partitions")
	var listed map[string]sarama.TopicDetail
	grown := func() bool {
		listed, err = adm.ListTopics()
		scenario.Check(err, "listing topics")
		return listed[topic].NumPartitions == 5
	}
	scenario.WaitFor(step, "the topic's new partitions to show in the metadata", grown,
		func() string { return fmt.Sprintf("%d partitions listed", listed[topic].NumPartitions) })
	_, validatedListed := listed[validated]

	scenario.Check(adm.DeleteTopic(topic), "deleting the topic")
	var stillListed bool
	gone := func() bool {
		left, err := adm.ListTopics()
		scenario.Check(err, "listing topics after deleting")
		_, stillListed = left[topic]
		return !stillListed
	}
	scenario.WaitFor(step, "the deleted topic to leave the metadata", gone, func() string { return "still listed" })
	deletedAgain := adm.DeleteTopic(topic)
	scenario.Emit(map[string]any{
		"created_again":    errorCode(again),
		"validated":        errorCode(dry),
		"validated_listed": validatedListed,
		"brokers":          addresses,
		"controller":       controller,
		"described":        described,
		"configs":          configs,
		"deleted_again":    errorCode(deletedAgain),
	})
}

// ---- a small everyday session ----------------------------------------------------------------------------------

// sessionReader reads a group's claims until want records are in, marking each, and commits them then.
type sessionReader struct {
	want int
	mu   sync.Mutex
	read int
	done chan struct{}
}

func (r *sessionReader) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (r *sessionReader) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (r *sessionReader) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		session.MarkMessage(msg, "")
		r.mu.Lock()
		r.read++
		all := r.read == r.want
		r.mu.Unlock()
		if all {
			session.Commit()
			close(r.done)
		}
	}
	return nil
}

// session does what an application usually does, small enough to keep as a capture: create a topic of two
// partitions, produce 20 idempotent zstd records with a header each, read them in a consumer group, commit,
// leave, and delete the topic.
func session() {
	topic, groupID := args.Name, args.Name+"-group"
	adm := newAdmin()
	defer adm.Close()
	createTopic(adm, topic, 2)

	producer := idempotentProducer(sarama.CompressionZSTD)
	var batch []*sarama.ProducerMessage
	for i := 0; i < 20; i++ {
		batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2),
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("value %d from sarama", i)),
			Headers: []sarama.RecordHeader{{Key: []byte("trace"), Value: []byte(fmt.Sprintf("t%d", i))}}})
	}
	scenario.Check(producer.SendMessages(batch), "producing")
	scenario.Check(producer.Close(), "closing the producer")

	groupCfg := config()
	groupCfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	groupCfg.Consumer.Offsets.AutoCommit.Enable = false
	group, err := sarama.NewConsumerGroup(args.Brokers(), groupID, groupCfg)
	scenario.Check(err, "creating a consumer group")
	reader := &sessionReader{want: 20, done: make(chan struct{})}
	loop, stop := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for loop.Err() == nil {
			if err := group.Consume(loop, []string{topic}, reader); err != nil && loop.Err() == nil {
				scenario.Fail("consuming in a group: %v", err)
			}
		}
	}()
	select {
	case <-reader.done:
	case <-time.After(step):
		scenario.Fail("the group read %d records, not 20", reader.read)
	}
	stop()
	<-finished
	scenario.Check(group.Close(), "leaving the group")
	scenario.Check(adm.DeleteTopic(topic), "deleting the topic")
	scenario.Emit(map[string]any{"read": reader.read})
}

// ---- a cluster changing under a producer and a consumer group -------------------------------------------------

// moves writes the records "0", "1", ... one every 10 ms to the topic NAME (one partition, made by the test) from
// an idempotent AsyncProducer with acks=all, saying "ack OFFSET VALUE" for each acknowledged and "fail VALUE ERROR"
// for each that failed; then a member of the group NAME-group reads them from the start, saying "read OFFSET VALUE"
// for each and marking it read, the marks committed as it goes. At the gates it waits for the test (scenario.Moves).
// Reported: the errors the group met and the offset committed at the end as the broker reads it back.
func moves(mode string) {
	settings := scenario.ParseMoves(mode)
	gates := scenario.ListenForGates()
	topic, groupID := args.Name, args.Name+"-group"

	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1 // what Sarama's idempotent producer requires
	cfg.Producer.Return.Successes = true
	// A broker that stops is an outage the application means to ride out: more tries than the default 3.
	cfg.Producer.Retry.Max = 10
	producer, err := sarama.NewAsyncProducer(args.Brokers(), cfg)
	scenario.Check(err, "creating an idempotent producer")
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		successes, failures := producer.Successes(), producer.Errors()
		for successes != nil || failures != nil {
			select {
			case m, ok := <-successes:
				if !ok {
					successes = nil
					continue
				}
				value, _ := m.Value.Encode()
				scenario.Say("ack %d %s", m.Offset, value)
			case e, ok := <-failures:
				if !ok {
					failures = nil
					continue
				}
				value, _ := e.Msg.Value.Encode()
				scenario.Say("fail %s %v", value, e.Err)
			}
		}
	}()
	for i := 0; i < settings.Records; i++ {
		gates.Await(settings.Needed(settings.ProducerGates, i), fmt.Sprintf("the test's gate before record %d", i))
		producer.Input() <- &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(strconv.Itoa(i))}
		time.Sleep(10 * time.Millisecond)
	}
	producer.AsyncClose()
	<-answered

	reader := &mover{settings: settings, gates: gates, done: make(chan struct{})}
	groupCfg := config()
	groupCfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Sarama sends a group's commits on the connection its fetches use, where each waits for the fetch before it,
	// which the broker may hold for MaxWaitTime (one request at a time per connection, as on Kafka): committing
	// every record synchronously would take a quarter of a second each while the coordinator is the partition's
	// leader. So records are marked as read, and the marks committed every 100 ms (Sarama's auto-commit), and
	// synchronously at the consumer's gate and after the last record.
	groupCfg.Consumer.Offsets.AutoCommit.Enable = true
	groupCfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	groupCfg.Consumer.Return.Errors = true
	groupCfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	groupCfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	group, err := sarama.NewConsumerGroup(args.Brokers(), groupID, groupCfg)
	scenario.Check(err, "creating a consumer group")
	var mu sync.Mutex
	var met []string
	go func() {
		for err := range group.Errors() {
			mu.Lock()
			met = append(met, err.Error())
			mu.Unlock()
		}
	}()
	loop, stop := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for loop.Err() == nil {
			// Consume returns at each rebalance; calling it again rejoins.
			if err := group.Consume(loop, []string{topic}, reader); err != nil && loop.Err() == nil {
				mu.Lock()
				met = append(met, err.Error())
				mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	select {
	case <-reader.done:
	case <-ctx.Done():
		scenario.Fail("the group read %d of %d records", reader.count(), settings.Records)
	}
	// A commit the old coordinator refused is not lost: its offsets stay marked for the next (every 100 ms).
	adm := newAdmin()
	defer adm.Close()
	committed := int64(-1)
	allCommitted := func() bool {
		fetched, err := adm.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0}})
		scenario.Check(err, "fetching the group's committed offset")
		block := fetched.GetBlock(topic, 0)
		if block == nil || block.Err != sarama.ErrNoError {
			scenario.Fail("fetching the group's committed offset: %v", block)
		}
		committed = block.Offset
		return committed >= int64(settings.Records)
	}
	scenario.WaitFor(step, "the group to commit every record read", allCommitted,
		func() string { return fmt.Sprintf("committed up to %d", committed) })
	stop()
	<-finished
	scenario.Check(group.Close(), "leaving the group")
	mu.Lock()
	defer mu.Unlock()
	scenario.Emit(map[string]any{"errors": met, "committed": committed})
}

// mover is the moves scenario's group member: it reads its one partition's claim, holding at the consumer's gate.
type mover struct {
	settings scenario.Moves
	gates    *scenario.Gates
	mu       sync.Mutex
	read     int
	done     chan struct{}
}

func (m *mover) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (m *mover) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *mover) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.read
}

func (m *mover) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			read := m.count()
			// the consumer's gate is the one after the producer's
			gate := len(m.settings.ProducerGates) + m.settings.Needed([]int{m.settings.ConsumerGate}, read)
			m.gates.Await(gate, fmt.Sprintf("the test's gate after %d records read", read))
			session.MarkMessage(msg, "")
			m.mu.Lock()
			m.read++
			read = m.read
			m.mu.Unlock()
			// At the gate, what was read is committed before the test hears of it (and moves the coordinator).
			if read == m.settings.ConsumerGate || read == m.settings.Records {
				session.Commit()
			}
			scenario.Say("read %d %s", msg.Offset, msg.Value)
			if read == m.settings.Records {
				close(m.done)
			}
		case <-session.Context().Done():
			return nil
		}
	}
}

// ---- a fault the broker answers with ---------------------------------------------------------------------------

// fault produces one record ("faulted") to partition 0 of the topic NAME, which the test made and installed a fault
// for, from an idempotent SyncProducer with acks=all, and reports how that ended: the offset it was written at (-1
// if not), and the error SendMessage gave: its text, and the sarama.KError inside it (0 if none, -1 if it holds
// none).
func fault() {
	producer := idempotentProducer(sarama.CompressionNone)
	_, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: args.Name, Partition: 0,
		Value: sarama.StringEncoder("faulted")})
	scenario.Check(producer.Close(), "closing the producer")
	text := ""
	if err != nil {
		text = err.Error()
	}
	scenario.Emit(map[string]any{"offset": offset, "error": text, "kafka_error": errorCode(err)})
}
