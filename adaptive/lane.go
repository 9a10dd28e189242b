package adaptive

import "fmt"

// Lane is the adaptive controller for one flow of buffers: the receive
// buffers a receiving endpoint keeps for one source, or the send buffers
// of a sending endpoint. Its buffers move through three states (Liu19
// §6): a receiver's Wait (posted, empty) -> Transmit (filled, ready to be
// taken) -> Consume (lent to the operator) -> Wait; a sender's Wait
// (free) -> Populate (lent to the operator) -> Transmit (being sent) ->
// Wait. The rule: a receiver that finds nothing ready grows by one buffer
// (Hungry), and one that finds more than one ready has too many and marks
// all but one for retirement, each retired only once its data has been
// consumed (Take); a sender that finds no free buffer grows by one
// (Starving), and one that finds several free gives all but one back
// (Shed).
//
// The lane only counts and decides; the endpoint moves the buffers and
// reports each move. Circulation stays within [Min, Max]. A Lane is not
// safe for concurrent use: the endpoint's lock guards it.
type Lane struct {
	min, max int
	wait     int  // receiver: posted and empty; sender: free
	ready    int  // receiver: filled, not yet taken; sender: unused (0)
	lent     int  // receiver: being consumed; sender: being populated or sent
	marked   int  // lent buffers that retire when they come back
	grew     bool // grown since the last buffer filled: one growth per wait for data
	stats    LaneStats
}

// LaneStats counts a lane's decisions and its circulation's extremes.
type LaneStats struct {
	Grown, Retired   int64
	MinCirc, MaxCirc int
	// CircTime is the time integral of the circulation (buffers x
	// picoseconds) and Span the time observed, so that CircTime/Span is
	// the mean circulation (see Observe).
	CircTime float64
	Span     int64
	// StateTime is the time integral of the buffers in each state: Wait,
	// Ready (receivers) and Lent; StateTime[i]/Span is the mean.
	StateTime [3]float64
	last      int64
	started   bool
}

// NewLane returns a lane with initial buffers in Wait, which must lie in
// [min, max]; min must be at least 1.
func NewLane(initial, min, max int) (*Lane, error) {
	if min < 1 || max < min || initial < min || initial > max {
		return nil, fmt.Errorf("adaptive: lane with %d buffers, min %d, max %d: need 1 <= min <= initial <= max", initial, min, max)
	}
	l := &Lane{min: min, max: max, wait: initial}
	l.stats.MinCirc, l.stats.MaxCirc = initial, initial
	return l, nil
}

// Circulation is the number of buffers the lane holds (in any state, the
// marked ones included until they retire).
func (l *Lane) Circulation() int { return l.wait + l.ready + l.lent }

// Waiting, Ready and Lent are the buffers in each state.
func (l *Lane) Waiting() int { return l.wait }
func (l *Lane) Ready() int   { return l.ready }
func (l *Lane) Lent() int    { return l.lent }

// Stats returns the lane's statistics.
func (l *Lane) Stats() LaneStats { return l.stats }

func (l *Lane) note() {
	c := l.Circulation()
	l.stats.MinCirc, l.stats.MaxCirc = min(l.stats.MinCirc, c), max(l.stats.MaxCirc, c)
}

// Observe accumulates the circulation's time integral up to now
// (picoseconds, from the endpoint's thread clock); call it before each
// change to keep the mean exact.
func (l *Lane) Observe(now int64) {
	if l.stats.started && now > l.stats.last {
		dt := float64(now - l.stats.last)
		l.stats.CircTime += float64(l.Circulation()) * dt
		l.stats.StateTime[0] += float64(l.wait) * dt
		l.stats.StateTime[1] += float64(l.ready) * dt
		l.stats.StateTime[2] += float64(l.lent) * dt
		l.stats.Span += now - l.stats.last
	}
	l.stats.last, l.stats.started = now, true
}

// Starving reports, for a sender lane, that no buffer is free while the
// lane may still grow: the caller should add one buffer (Grow) rather than
// wait for a send to complete.
func (l *Lane) Starving() bool {
	return l.wait == 0 && l.ready == 0 && l.Circulation() < l.max
}

// Hungry reports, for a receiver lane, that no buffer is ready while the
// lane may still grow: the receiver is about to wait for data, and one more
// buffer in flight would have kept it busy. The caller adds one (Grow) when
// its receiver finds nothing ready at all. A lane grows once per wait: it
// is not hungry again until a buffer has filled since it grew.
func (l *Lane) Hungry() bool {
	return l.ready == 0 && !l.grew && l.Circulation() < l.max
}

// Grow records one new buffer in Wait (receiver: posted; sender: free).
func (l *Lane) Grow() error {
	if l.Circulation() >= l.max {
		return fmt.Errorf("adaptive: lane already holds its maximum of %d buffers", l.max)
	}
	l.wait++
	l.grew = true
	l.stats.Grown++
	l.note()
	return nil
}

// Filled records that a waiting receive buffer got data (receiver only).
func (l *Lane) Filled() error {
	if l.wait == 0 {
		return fmt.Errorf("adaptive: a buffer filled with none waiting")
	}
	l.wait--
	l.ready++
	l.grew = false
	return nil
}

// Take records that a ready receive buffer is lent to the operator and
// decides whether it retires when it comes back: it does when other
// buffers are ready besides it (the receiver is behind: the circulation is
// larger than it needs) and the circulation may shrink.
func (l *Lane) Take() (retire bool, err error) {
	if l.ready == 0 {
		return false, fmt.Errorf("adaptive: receiver took a buffer with none ready")
	}
	l.ready--
	l.lent++
	if l.ready >= 1 && l.Circulation()-l.marked > l.min {
		l.marked++
		return true, nil
	}
	return false, nil
}

// TakeFree records that a free send buffer is lent to the operator
// (sender lanes: Wait -> Populate).
func (l *Lane) TakeFree() error {
	if l.wait == 0 {
		return fmt.Errorf("adaptive: sender took a buffer with none free")
	}
	l.wait--
	l.lent++
	return nil
}

// Shed returns how many free buffers a sender lane should give back to the
// pool now: all but one when more than one is free, as long as the
// circulation stays at least min. The caller retires them with RetireFree.
func (l *Lane) Shed() int {
	if l.wait <= 1 {
		return 0
	}
	return max(0, min(l.wait-1, l.Circulation()-l.marked-l.min))
}

// RetireFree records that k free buffers left the lane for the pool.
func (l *Lane) RetireFree(k int) error {
	if k < 0 || k > l.wait || l.Circulation()-l.marked-k < l.min {
		return fmt.Errorf("adaptive: cannot retire %d of %d free buffers (circulation %d, min %d)", k, l.wait, l.Circulation(), l.min)
	}
	l.wait -= k
	l.stats.Retired += int64(k)
	l.note()
	return nil
}

// Return records that a lent buffer came back: into Wait (receiver:
// reposted; sender: send completed) unless it was marked, in which case it
// leaves the lane and goes back to the pool.
func (l *Lane) Return(retire bool) error {
	if l.lent == 0 {
		return fmt.Errorf("adaptive: a buffer returned with none lent")
	}
	if retire && l.marked == 0 {
		return fmt.Errorf("adaptive: a retiring buffer returned with none marked")
	}
	l.lent--
	if retire {
		l.marked--
		l.stats.Retired++
	} else {
		l.wait++
	}
	l.note()
	return nil
}
