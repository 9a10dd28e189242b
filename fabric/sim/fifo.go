package sim

// fifo is a first-in, first-out queue on a slice that reuses its storage:
// popped slots are cleared (so pointers do not linger) and the live part is
// moved to the front once the dead part dominates. Not safe for concurrent
// use (nothing in the model is).
type fifo[T any] struct {
	q    []T
	head int
}

func (f *fifo[T]) len() int   { return len(f.q) - f.head }
func (f *fifo[T]) push(v T)   { f.q = append(f.q, v) }
func (f *fifo[T]) peek() T    { return f.q[f.head] }
func (f *fifo[T]) last() *T   { return &f.q[len(f.q)-1] }
func (f *fifo[T]) at(i int) T { return f.q[f.head+i] }

func (f *fifo[T]) pop() T {
	var zero T
	v := f.q[f.head]
	f.q[f.head] = zero
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	} else if f.head >= 256 && 2*f.head >= len(f.q) {
		k := copy(f.q, f.q[f.head:])
		clear(f.q[k:])
		f.q, f.head = f.q[:k], 0
	}
	return v
}
