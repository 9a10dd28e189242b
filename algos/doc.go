// Package algos holds the shuffle endpoint designs and the operators built
// on them. It is written only against the fabric contract, so every design
// runs unchanged on the simulator and on real hardware. Subpackages:
//
//   - perftest: perftest-style microbenchmarks (send_bw, write_bw, read_bw,
//     send_lat, write_lat, alltoall_bw) used to calibrate and check the
//     model against ib_send_bw and friends.
package algos
