package scenario

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Step is the most any one wait of a scenario may take.
const Step = 30 * time.Second

// Member is one consumer of the group scenario, as each client program makes it.
type Member interface {
	// State tells the partitions assigned now, how many records were read so far per phase, and whether any
	// record read is not committed yet.
	State() (assigned []int32, read map[string]int, pending bool)
	// Leave stops consuming (with every record read committed) and leaves the group.
	Leave()
	String() string
}

// GroupRun is what the group scenario saw besides what its members report.
type GroupRun struct {
	Assignments map[string]map[string][]int32 // "alone", "joined", "left": member -> partitions
	Flowed      []string                      // "partition:offset" of each record of the flow phase
	Seconds     map[string]float64            // when each step was done, from the start
}

// Group runs a consumer group of two on a topic of 4 partitions. A joins and reads phase one (40 records). Then
// records flow, one every 20 ms, while B joins (a rebalance), while A and B share the partitions, while B leaves
// (another rebalance) and while A is alone again; the flow stops once A has read some of it alone, and the scenario
// ends when every record of the flow was read and committed. So commits go on during both rebalances, as in any
// busy group; a commit that is lost shows as a record read twice.
//
// join makes and starts a member; produce writes one record with that value to that partition and returns where
// it landed as "partition:offset".
func Group(join func(name string) Member, produce func(value string, partition int32) string) (GroupRun, Member, Member) {
	run := GroupRun{Assignments: map[string]map[string][]int32{}, Seconds: map[string]float64{}}
	began := time.Now()
	lap := func(what string) { run.Seconds[what] = time.Since(began).Seconds() }
	describe := func(ms ...Member) func() string {
		return func() string {
			var parts []string
			for _, m := range ms {
				parts = append(parts, m.String())
			}
			return strings.Join(parts, "; ")
		}
	}
	read := func(m Member, phase string) int { _, r, _ := m.State(); return r[phase] }
	assigned := func(m Member) []int32 { a, _, _ := m.State(); return a }
	settled := func(phase string, want func() int, ms ...Member) func() bool {
		return func() bool {
			total := 0
			for _, m := range ms {
				_, r, pending := m.State()
				if pending {
					return false
				}
				total += r[phase]
			}
			return total >= want()
		}
	}

	a := join("a")
	aAlone := func() bool { return len(assigned(a)) == 4 }
	WaitFor(Step, "A to be assigned all 4 partitions", aAlone, describe(a))
	run.Assignments["alone"] = map[string][]int32{"a": assigned(a)}
	for i := 0; i < 40; i++ {
		produce(fmt.Sprintf("one-%d", i), int32(i%4))
	}
	WaitFor(Step, "A to read and commit phase one", settled("one", func() int { return 40 }, a), describe(a))
	lap("one")

	var mu sync.Mutex
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			at := produce(fmt.Sprintf("flow-%d", i), int32(i%4))
			mu.Lock()
			run.Flowed = append(run.Flowed, at)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	b := join("b")
	split := func() bool {
		fromA, fromB := assigned(a), assigned(b)
		seen := map[int32]bool{}
		for _, p := range append(fromA, fromB...) {
			seen[p] = true
		}
		return len(fromA) > 0 && len(fromB) > 0 && len(fromA)+len(fromB) == 4 && len(seen) == 4
	}
	WaitFor(Step, "A and B to split the 4 partitions", split, describe(a, b))
	run.Assignments["joined"] = map[string][]int32{"a": assigned(a), "b": assigned(b)}
	lap("joined")
	fromA := read(a, "flow")
	sharing := func() bool { return read(b, "flow") >= 8 && read(a, "flow") >= fromA+8 }
	WaitFor(Step, "A and B each to read some of the flow", sharing, describe(a, b))
	lap("shared")

	b.Leave()
	WaitFor(Step, "A to be assigned all 4 partitions after B left", aAlone, describe(a, b))
	run.Assignments["left"] = map[string][]int32{"a": assigned(a)}
	lap("left")
	fromA = read(a, "flow")
	WaitFor(Step, "A to read some of the flow alone", func() bool { return read(a, "flow") >= fromA+8 }, describe(a))
	close(stop)
	<-stopped
	flowed := func() int { mu.Lock(); defer mu.Unlock(); return len(run.Flowed) }
	WaitFor(Step, "every record of the flow to be read and committed", settled("flow", flowed, a, b), describe(a, b))
	lap("flow")
	return run, a, b
}
