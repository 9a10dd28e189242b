package fabric

// SharesAdapter reports whether several of f's nodes run in this process
// on one RDMA adapter: the libibverbs backend opened for one machine
// (ibv.OpenLocal), each node a context of the same device. Traffic between
// those nodes is looped back inside the adapter, crossing no link or
// switch, and the adapter does the work of every one of them, sending and
// receiving, so what they measure is that adapter's loopback, not a
// cluster of as many machines. The simulator models a NIC and a link per
// node, and the loopback backend models no hardware, so neither shares.
func SharesAdapter(f Fabric) bool { return f.Backend() == "ibv" && len(f.Local()) > 1 }
