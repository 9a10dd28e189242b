// Package adaptive is the query-aware management of registered buffers of
// Liu19 §6: a node-wide pool of registered buffers that registers more
// on demand and deregisters under memory pressure (Pool), the controller
// that decides, buffer by buffer, whether an endpoint's circulation should
// grow or shrink (Lane), and the query-oblivious baseline, sizing by the
// bandwidth-delay product (BDPBuffers).
//
// The endpoints of package algos use a Pool and one Lane per flow of
// buffers (a receiving endpoint's source, a sending endpoint's pool) when
// their configuration asks for adaptive buffering. Like algos, this package
// sees only the fabric contract: it never reads the clock, sleeps, starts
// goroutines or draws random numbers, so a Lane can be driven event by
// event in tests without any backend.
package adaptive
