// Package adaptive will hold the registered-buffer pool and the adaptive
// buffer controller, and bandwidth-delay-product sizing. Like algos it sees
// only the fabric contract.
package adaptive
