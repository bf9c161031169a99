// Command load produces or consumes records with franz-go as fast as it can, for benchmarks/broker.py's loaded
// cases: a client light enough that several at once on a small machine leave the broker, not themselves, as the
// limit (the perf tools' JVMs take most of two cores).
//
//	load produce -brokers HOST:PORT -topic T -records N -size S [-acks 1|all] [-compression none|lz4]
//	load consume -brokers HOST:PORT -topic T -records N -size S
//
// The producer's values are random capital letters, as ProducerPerformance's are, each record a different
// stretch of them, so that compression meets what it would meet in Kafka's own tool. The consumer fetches every
// partition of the topic from its start as a follower does, with Fetch requests of its own, and counts the
// records in each batch's header without decompressing or decoding them: the broker's work is that of any
// consumer, the client's a small part of it.
//
// It prints one line of JSON: records, bytes, seconds and MB/s (MB of record values, 2^20 bytes, as the perf
// tools count them), and for produce the average and 99th percentile of the time from handing a record to the
// client to its acknowledgement, in milliseconds (0 for consume).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const mebibyte = 1 << 20

type result struct {
	Records int64   `json:"records"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	MBs     float64 `json:"mb_s"`
	AvgMs   float64 `json:"avg_ms"`
	P99Ms   float64 `json:"p99_ms"`
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "produce" && os.Args[1] != "consume") {
		fmt.Fprintln(os.Stderr, "usage: load produce|consume -brokers HOST:PORT -topic T -records N -size S [-acks 1|all] [-compression none|lz4]")
		os.Exit(2)
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flags.String("topic", "", "topic")
	records := flags.Int64("records", 0, "records to produce, or to read")
	size := flags.Int("size", 100, "value size in bytes")
	acks := flags.String("acks", "1", "1 or all")
	compression := flags.String("compression", "none", "none or lz4")
	flags.Parse(os.Args[2:])
	if *topic == "" || *records <= 0 {
		fmt.Fprintln(os.Stderr, "-topic and -records are required")
		os.Exit(2)
	}
	var out result
	var err error
	if os.Args[1] == "produce" {
		out, err = produce(*brokers, *topic, *records, *size, *acks, *compression)
	} else {
		out, err = consume(*brokers, *topic, *records, *size)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

func produce(brokers, topic string, records int64, size int, acks, compression string) (result, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic)}
	if acks == "all" {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	if compression == "lz4" {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	} else {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	defer client.Close()
	letters := make([]byte, 1<<20+size)
	random := rand.New(rand.NewSource(1))
	for i := range letters {
		letters[i] = byte('A' + random.Intn(26))
	}
	latencies := make([]int64, records) // microseconds, by record
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	for i := int64(0); i < records; i++ {
		i, sent := i, time.Now()
		wg.Add(1)
		at := int(i*7919) % (len(letters) - size)
		client.Produce(ctx, &kgo.Record{Value: letters[at : at+size]}, func(_ *kgo.Record, err error) {
			latencies[i] = time.Since(sent).Microseconds()
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	if failed != nil {
		return result{}, fmt.Errorf("produce: %w", failed)
	}
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	var sum int64
	for _, l := range latencies {
		sum += l
	}
	bytes := records * int64(size)
	return result{Records: records, Bytes: bytes, Seconds: seconds, MBs: float64(bytes) / mebibyte / seconds,
		AvgMs: float64(sum) / float64(records) / 1000, P99Ms: float64(latencies[records*99/100]) / 1000}, nil
}

func consume(brokers, topic string, records int64, size int) (result, error) {
	client, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return result{}, err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	metadata := kmsg.NewPtrMetadataRequest()
	wanted := kmsg.NewMetadataRequestTopic()
	wanted.Topic = kmsg.StringPtr(topic)
	metadata.Topics = append(metadata.Topics, wanted)
	described, err := metadata.RequestWith(ctx, client)
	if err != nil {
		return result{}, err
	}
	if len(described.Topics) != 1 || described.Topics[0].ErrorCode != 0 {
		return result{}, fmt.Errorf("topic %s is not there to read", topic)
	}
	offsets := map[int32]int64{}
	for _, partition := range described.Topics[0].Partitions {
		offsets[partition.Partition] = 0
	}
	var read int64
	for read < records {
		fetch := kmsg.NewPtrFetchRequest()
		fetch.ReplicaID = -1
		fetch.MaxWaitMillis = 500
		fetch.MinBytes = 1
		fetch.MaxBytes = 50 << 20
		fetch.SessionEpoch = -1
		asked := kmsg.NewFetchRequestTopic()
		asked.Topic = topic
		asked.TopicID = described.Topics[0].TopicID
		for partition, offset := range offsets {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition = partition
			p.FetchOffset = offset
			p.PartitionMaxBytes = 1 << 20
			p.CurrentLeaderEpoch = -1
			p.LogStartOffset = -1
			asked.Partitions = append(asked.Partitions, p)
		}
		fetch.Topics = append(fetch.Topics, asked)
		answer, err := fetch.RequestWith(ctx, client)
		if err != nil {
			return result{}, fmt.Errorf("fetch after %d records: %w", read, err)
		}
		for _, t := range answer.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return result{}, fmt.Errorf("fetch of partition %d: error code %d", p.Partition, p.ErrorCode)
				}
				// Whole batches: base offset (8), length (4), ..., last offset delta at 23, record count at 57.
				data := p.RecordBatches
				for len(data) >= 61 {
					length := int(int32(binary.BigEndian.Uint32(data[8:12])))
					if length < 49 || 12+length > len(data) {
						break
					}
					base := int64(binary.BigEndian.Uint64(data[0:8]))
					last := base + int64(int32(binary.BigEndian.Uint32(data[23:27])))
					if last >= offsets[p.Partition] {
						read += int64(int32(binary.BigEndian.Uint32(data[57:61])))
						offsets[p.Partition] = last + 1
					}
					data = data[12+length:]
				}
			}
		}
	}
	seconds := time.Since(start).Seconds()
	bytes := read * int64(size)
	return result{Records: read, Bytes: bytes, Seconds: seconds, MBs: float64(bytes) / mebibyte / seconds}, nil
}
