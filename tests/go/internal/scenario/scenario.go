// Package scenario holds what the client programs share: their command line, the JSON line each prints, and
// waiting for a condition with a deadline (a scenario never waits unbounded).
package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Args is the command line every program takes: BOOTSTRAP SCENARIO NAME [MODE]. NAME is fresh per test: topics,
// groups and transactional IDs are made from it, so runs against one broker never meet. BOOTSTRAP is one
// "host:port" or several, comma-separated.
type Args struct {
	Bootstrap, Scenario, Name, Mode string
}

// Brokers is BOOTSTRAP's addresses.
func (a Args) Brokers() []string {
	return strings.Split(a.Bootstrap, ",")
}

// Parse reads os.Args, exiting with a usage line when it does not fit.
func Parse(program string, scenarios string) Args {
	if len(os.Args) < 4 || len(os.Args) > 5 {
		fmt.Fprintf(os.Stderr, "usage: %s BOOTSTRAP SCENARIO NAME [MODE]\nscenarios: %s\n", program, scenarios)
		os.Exit(2)
	}
	a := Args{Bootstrap: os.Args[1], Scenario: os.Args[2], Name: os.Args[3]}
	if len(os.Args) == 5 {
		a.Mode = os.Args[4]
	}
	return a
}

// Emit prints the scenario's result as one JSON line on stdout: what the Python test asserts on.
func Emit(result any) {
	line, err := json.Marshal(result)
	if err != nil {
		Fail("encoding the result: %v", err)
	}
	Say("%s", line)
}

// Fail ends the program with the reason on stderr: the client itself could not do a step.
func Fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
	os.Exit(1)
}

// Check fails the program when err is not nil, saying which step it was.
func Check(err error, step string) {
	if err != nil {
		Fail("%s: %v", step, err)
	}
}

// WaitFor polls cond every 50 ms until it holds, failing after timeout with what was awaited and, from
// describe, where things stood.
func WaitFor(timeout time.Duration, what string, cond func() bool, describe func() string) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			Fail("waited %s for %s; %s", timeout, what, describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Sorted returns the keys of a set of partitions in order.
func Sorted(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
