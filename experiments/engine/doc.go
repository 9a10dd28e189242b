// Package engine runs one synthetic shuffle on a backend and builds its
// record: the point's configuration (Config) and its checks, the backends
// (Simulator, which carries the simulator-only options and builds the
// simulated cluster; On, a fabric opened elsewhere), each node's driver
// (open the endpoints, SHUFFLE and RECEIVE, close, report over the
// out-of-band channel), the thread meters, and the record built from the
// nodes' reports. The run layer's root (package experiments) calls Run
// once per shuffle point; the TPC-H and I-Store runners open the
// simulator through Simulator.Open.
package engine
