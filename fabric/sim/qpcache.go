package sim

// qpCache is the NIC's cache of queue-pair contexts: an LRU of fixed
// capacity kept as an intrusive doubly linked list through the queue pairs
// themselves, so a lookup allocates nothing. A miss means the NIC must
// fetch the context from host memory over PCIe before it can go on.
type qpCache struct {
	cap    int
	n      int
	head   *qp // most recently used
	tail   *qp // least recently used
	hits   int64
	misses int64
}

// cacheLink is the part of a qp that belongs to its NIC's qpCache.
type cacheLink struct {
	prev, next *qp
	cached     bool
}

// touch records a use of q's context and reports whether it missed.
func (c *qpCache) touch(q *qp) (miss bool) {
	if q.cache.cached {
		c.hits++
		if c.head != q {
			c.unlink(q)
			c.pushFront(q)
		}
		return false
	}
	c.misses++
	if c.n == c.cap {
		victim := c.tail
		c.unlink(victim)
		victim.cache.cached = false
		c.n--
	}
	c.pushFront(q)
	q.cache.cached = true
	c.n++
	return true
}

// evict drops q (destroyed or reset).
func (c *qpCache) evict(q *qp) {
	if q.cache.cached {
		c.unlink(q)
		q.cache.cached = false
		c.n--
	}
}

func (c *qpCache) pushFront(q *qp) {
	q.cache.prev, q.cache.next = nil, c.head
	if c.head != nil {
		c.head.cache.prev = q
	}
	c.head = q
	if c.tail == nil {
		c.tail = q
	}
}

func (c *qpCache) unlink(q *qp) {
	if q.cache.prev != nil {
		q.cache.prev.cache.next = q.cache.next
	} else {
		c.head = q.cache.next
	}
	if q.cache.next != nil {
		q.cache.next.cache.prev = q.cache.prev
	} else {
		c.tail = q.cache.prev
	}
	q.cache.prev, q.cache.next = nil, nil
}
