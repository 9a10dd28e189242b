package main

import (
	"fmt"
	"io"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// simProgress returns a sim.Config.Progress callback that prints one plain
// line to w once a simulation has run for 2 s of wall time and every 2 s
// after: simulated time reached, events so far and the event rate. Short
// runs print nothing.
func simProgress(w io.Writer, what string) func(now fabric.Time, events uint64) {
	start := time.Now()
	next := start.Add(2 * time.Second)
	return func(now fabric.Time, events uint64) {
		t := time.Now()
		if t.Before(next) {
			return
		}
		next = t.Add(2 * time.Second)
		wall := t.Sub(start).Seconds()
		fmt.Fprintf(w, "%s: %.1f s wall, %.3f ms simulated, %.1f M events (%.2f M/s)\n",
			what, wall, fabric.Duration(now).Seconds()*1e3, float64(events)/1e6, float64(events)/1e6/wall)
	}
}

// seedProgress returns a progress callback for a long loop over seeds: a
// plain line once it has run for 2 s of wall time and every 10 s after,
// with the rate and an estimate of the time left.
func seedProgress(w io.Writer) func(done, seeds, runs int) {
	start := time.Now()
	next := start.Add(2 * time.Second)
	return func(done, seeds, runs int) {
		t := time.Now()
		if t.Before(next) {
			return
		}
		next = t.Add(10 * time.Second)
		el := t.Sub(start)
		left := time.Duration(float64(el) / float64(done) * float64(seeds-done))
		fmt.Fprintf(w, "soak: %d of %d seeds, %d runs, %.1f s, about %s left\n", done, seeds, runs, el.Seconds(), left.Round(time.Second))
	}
}
