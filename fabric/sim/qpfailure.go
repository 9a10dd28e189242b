package sim

// The causes are kept in Cluster.qpFailures, by queue pair, not in the
// queue pair: few fail, and every byte of a queue pair counts at scale.

// QPFailure says why queue pair qpn of node entered the error state, the
// first time it did since its last reset: the cause its flushed requests
// are consequences of ("its RDMA_WRITE to node 1 ended in transport retry
// exceeded"). False when there is no such queue pair, or it has not
// failed.
func (c *Cluster) QPFailure(node int, qpn uint32) (string, bool) {
	if node < 0 || node >= len(c.nodes) {
		return "", false
	}
	n := c.nodes[node].nic
	i := int64(qpn) - int64(n.firstQPN)
	if i < 0 || i >= int64(len(n.qps)) || n.qps[i] == nil {
		return "", false
	}
	cause, ok := c.qpFailures[n.qps[i]]
	return cause, ok
}
