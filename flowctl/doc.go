// Package flowctl holds the flow-control protocols of the shuffle designs
// as small state machines with no I/O and no clock: the endpoints in algos
// feed them events (a receive was posted, a credit value arrived, a message
// came in) and act on what they return. Because they see neither a backend
// nor time, tests drive them event by event.
//
//   - Credit: the stateless credit protocol of Liu17 §4.4.1 / Liu19
//     §5.2: the receiver counts the receives it has posted for a
//     connection and writes that absolute count back to the sender every f
//     receives; the sender may send while its sent count is below the last
//     count it received. Absolute counts make a lost or reordered credit
//     message harmless: a later one supersedes it.
//   - Count: end of stream over UD (Liu19 §5.3): a source is finished
//     when the number of messages received from it equals the total it
//     announced in its last message, however the messages were reordered.
//
// Like algos, this package sees only the fabric contract; its types are not
// safe for concurrent use (an endpoint guards them with its own lock).
package flowctl
