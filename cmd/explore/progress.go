package main

// progress.go: the progress every command that can run for more than a
// few seconds prints on standard error (run, bench, overview, figure,
// sweep, reproduce, query, soak, evidence, calibrate). On a terminal one
// line is rewritten in place a few times a second; in a log file (Slurm,
// CI, a pipe) a plain line is written at most every plainEvery. Nothing
// is printed for work that ends within firstAfter, and nothing at all
// when standard error is not a file (tests).

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

const (
	firstAfter = time.Second            // quiet for work shorter than this
	liveEvery  = 250 * time.Millisecond // refresh of the terminal line
	plainEvery = 5 * time.Second        // at most one plain line this often
)

// task is the progress of one command: done of total units (total 0: one
// piece of work of unknown length) and what runs now. Safe for use from
// several goroutines; a ticker goroutine prints it until finish.
type task struct {
	mu       sync.Mutex
	w        io.Writer // nil: track only (interrupt messages), print nothing
	live     bool      // w is a terminal
	what     string    // "bench read_bw", "figure fig19"
	unit     string    // what total counts: "sizes", "points", "seeds"
	total    int
	done     int
	detail   string // what runs now
	start    time.Time
	from     time.Time // when the count of done started (a figure's next sweep); zero: start
	last     time.Time // when done last changed
	shown    int       // width of the live line on screen
	graceful bool
	resume   string        // how to resume after an interrupt ("" : rerun)
	flush    func()        // writes partial output on an interrupt
	stop     chan struct{} // closed by finish
	ended    chan struct{} // closed when the ticker has stopped
}

// active is the task of the running command, for the interrupt handler.
var active atomic.Pointer[task]

// newTask starts reporting on w (standard error) a command doing total
// units (0 if unknown); call finish when it ends.
func newTask(w io.Writer, what, unit string, total int) *task {
	t := &task{what: what, unit: unit, total: total, start: time.Now(), stop: make(chan struct{}), ended: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		t.w, t.live = f, term.IsTerminal(int(f.Fd()))
	}
	active.Store(t)
	go t.tick()
	return t
}

func (t *task) tick() {
	defer close(t.ended)
	if t.w == nil {
		<-t.stop
		return
	}
	every := plainEvery
	if t.live {
		every = liveEvery
	}
	first := time.NewTimer(firstAfter)
	defer first.Stop()
	select {
	case <-t.stop:
		return
	case <-first.C:
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		t.print(time.Now())
		select {
		case <-t.stop:
			return
		case <-tk.C:
		}
	}
}

func (t *task) print(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := t.status(now)
	if !t.live {
		fmt.Fprintln(t.w, line)
		return
	}
	width := 120
	if w, _, err := term.GetSize(int(t.w.(*os.File).Fd())); err == nil && w > 10 {
		width = w - 1
	}
	if r := []rune(line); len(r) > width {
		line = string(r[:width])
	}
	pad := max(0, t.shown-len([]rune(line)))
	fmt.Fprintf(t.w, "\r%s%s", line, strings.Repeat(" ", pad))
	t.shown = len([]rune(line))
}

// status is the progress line: units done with rate and time left when
// total is known, the elapsed time and what runs now. Callers hold mu.
func (t *task) status(now time.Time) string {
	el := now.Sub(t.start)
	var b strings.Builder
	b.WriteString(t.what + ": ")
	if t.total > 0 {
		fmt.Fprintf(&b, "%d/%d %s", t.done, t.total, t.unit)
		if t.done > 0 {
			from := t.start
			if !t.from.IsZero() {
				from = t.from
			}
			end := now
			if t.done == t.total && !t.last.IsZero() { // the rate of the work, not of the wait after it
				end = t.last
			}
			rate := float64(t.done) / end.Sub(from).Seconds()
			avg := end.Sub(from) / time.Duration(t.done)
			fmt.Fprintf(&b, ", %s/min", fmtRate(rate*60))
			// Units can differ a lot (a bench's last queue-pair counts
			// take longest): when the one running has outlived twice the
			// average, the average says nothing about what is left.
			if cur := now.Sub(t.last); t.last.IsZero() || cur <= 2*avg || t.done == t.total {
				fmt.Fprintf(&b, ", about %s left", fmtDur(avg*time.Duration(t.total-t.done)))
			} else {
				fmt.Fprintf(&b, ", the one running for %s (%s on average so far)", fmtDur(cur), fmtDur(avg))
			}
		}
		b.WriteString(", ")
	}
	fmt.Fprintf(&b, "%s elapsed", fmtDur(el))
	if t.detail != "" {
		b.WriteString("; " + t.detail)
	}
	return b.String()
}

// fmtRate prints a rate with two significant digits at most.
func fmtRate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// fmtDur prints a duration rounded for people: 0.4s, 12s, 3m05s, 1h02m.
func fmtDur(d time.Duration) string {
	if d >= 10*time.Second {
		d = d.Round(time.Second)
	}
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// step counts n units done; detail says what runs next ("" keeps it).
func (t *task) step(n int, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done += n
	t.last = time.Now()
	if detail != "" {
		t.detail = detail
	}
}

// doneSoFar is the units done.
func (t *task) doneSoFar() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// setTotal changes the units to do (a command that learns it late).
func (t *task) setTotal(total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total = total
}

// setDetail says what runs now.
func (t *task) setDetail(detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detail = detail
}

// sim returns a sim.Config.Progress callback that shows the simulated
// time reached and the event rate of the run named label.
func (t *task) sim(label string) func(now fabric.Time, events uint64) {
	start := time.Now()
	return func(now fabric.Time, events uint64) {
		wall := time.Since(start).Seconds()
		t.setDetail(fmt.Sprintf("%s at %.3f ms simulated, %.1f M events (%.2f M/s)",
			label, fabric.Duration(now).Seconds()*1e3, float64(events)/1e6, float64(events)/1e6/wall))
	}
}

// finish stops the reports and clears the terminal line.
func (t *task) finish() {
	select {
	case <-t.stop:
		return
	default:
	}
	close(t.stop)
	<-t.ended
	active.CompareAndSwap(t, nil)
	t.clear()
}

// clear removes the terminal line before the command writes to standard
// output; the next tick draws it again.
func (t *task) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live && t.shown > 0 {
		fmt.Fprintf(t.w, "\r%s\r", strings.Repeat(" ", t.shown))
		t.shown = 0
	}
}

// note prints one line (a failed point) on w above the progress line.
func (t *task) note(w io.Writer, line string) {
	t.clear()
	fmt.Fprintln(w, line)
}

// writer returns a writer to w that clears the progress line first (for
// log lines written while the task runs).
func (t *task) writer(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		t.clear()
		return w.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// interrupted returns what an interrupt leaves: what was completed, and
// how to go on. Callers print it and exit.
func (t *task) interrupted() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	if t.live && t.shown > 0 {
		b.WriteString("\n")
		t.shown = 0
	}
	fmt.Fprintf(&b, "interrupted: %s", t.what)
	if t.total > 0 {
		fmt.Fprintf(&b, " after %d of %d %s", t.done, t.total, t.unit)
	}
	fmt.Fprintf(&b, " (%s)", fmtDur(time.Since(t.start)))
	if t.resume != "" {
		b.WriteString("; " + t.resume)
	} else {
		b.WriteString("; nothing is kept: run the command again to start over")
	}
	return b.String()
}

// seedProgress returns soak's Config.Progress callback reporting to t.
func seedProgress(t *task) func(done, seeds, runs int) {
	return func(done, seeds, runs int) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.done, t.total, t.detail, t.last = done, seeds, fmt.Sprintf("%d runs", runs), time.Now()
	}
}
