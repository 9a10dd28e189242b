// Package flowctl will hold the flow-control protocols of the shuffle
// designs: the credit protocol, UD message counting and timeouts, sequence
// tracking and network scheduling. Like algos it sees only the fabric
// contract.
package flowctl
