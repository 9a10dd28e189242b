// Package ibv is the real-hardware backend of the fabric contract: the
// libibverbs mapping compiled with the build tag ibverbs. Without the tag
// (the default build, which needs no RDMA library) Open reports that the
// backend was not built in.
package ibv
