package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// A driven scenario is one the test changes the cluster under while it runs. The program says each step on stdout
// as it happens (Say: "ack OFFSET VALUE", "read OFFSET VALUE", ...), the test reads those lines as they come, and at
// each gate the program holds on until the test, having made its change, writes a line on stdin (Gates). So the
// test acts at a known point of the run, with the client still busy, and no timing decides the order. The last
// line is still the JSON result (Emit).

var stdout sync.Mutex // Say and Emit write whole lines, from any goroutine

// Say prints one line on stdout.
func Say(format string, args ...any) {
	stdout.Lock()
	defer stdout.Unlock()
	fmt.Printf(format+"\n", args...)
}

// Moves is how a run of the moves scenario goes, as the test gives it (MODE, as JSON): Records records, each
// acknowledged one said ("ack OFFSET VALUE"); at each count of ProducerGates acknowledged the test changes the
// cluster, and the producer sends at most Window records more before it waits for the test's word; then a
// consumer group reads the records back ("read OFFSET VALUE") with the same rule at ConsumerGate records read.
type Moves struct {
	Records       int   `json:"records"`
	Window        int   `json:"window"`
	ProducerGates []int `json:"producer_gates"`
	ConsumerGate  int   `json:"consumer_gate"`
}

// ParseMoves reads the moves scenario's MODE.
func ParseMoves(mode string) Moves {
	var m Moves
	decoder := json.NewDecoder(strings.NewReader(mode))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&m); err != nil {
		Fail("the moves scenario's MODE %q is not its JSON settings: %v", mode, err)
	}
	if m.Records <= 0 || m.Window <= 0 || m.ConsumerGate <= 0 || m.ConsumerGate >= m.Records {
		Fail("the moves scenario's MODE %q: records, window and consumer_gate must be positive, the gate below "+
			"records", mode)
	}
	for i, gate := range m.ProducerGates {
		if gate <= 0 || gate >= m.Records || (i > 0 && gate <= m.ProducerGates[i-1]) {
			Fail("the moves scenario's MODE %q: producer_gates must rise, each between 0 and records", mode)
		}
	}
	return m
}

// Needed is how many of gates the test must have opened before the i-th record (from 0) is sent or read: those
// it is a window or more past.
func (m Moves) Needed(gates []int, i int) int {
	n := 0
	for _, gate := range gates {
		if i >= gate+m.Window {
			n++
		}
	}
	return n
}

// Gates counts the lines the test wrote on stdin: each opens the next gate.
type Gates struct {
	mu     sync.Mutex
	opened int
	ended  bool
}

// ListenForGates starts reading stdin.
func ListenForGates() *Gates {
	g := &Gates{}
	go func() {
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			g.mu.Lock()
			g.opened++
			g.mu.Unlock()
		}
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
	}()
	return g
}

// Opened is how many gates the test has opened so far.
func (g *Gates) Opened() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.opened
}

// Await waits until the test opened n gates, failing after Step (or when stdin closed first) with what was
// awaited.
func (g *Gates) Await(n int, what string) {
	deadline := time.Now().Add(Step)
	for {
		g.mu.Lock()
		opened, ended := g.opened, g.ended
		g.mu.Unlock()
		switch {
		case opened >= n:
			return
		case ended:
			Fail("stdin closed while waiting for %s", what)
		case time.Now().After(deadline):
			Fail("waited %s for %s", Step, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
