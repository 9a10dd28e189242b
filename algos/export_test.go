package algos

// SetWordLoaded makes loadWord tell f of every polled word it reads (nil:
// nobody), for tests that check which reads go through it.
func SetWordLoaded(f func(mem []byte)) { wordLoaded = f }

// PolledAt is polledAt, for its table test.
var PolledAt = polledAt
