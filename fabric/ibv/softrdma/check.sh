#!/bin/sh
# check.sh: runs the libibverbs backend on the software RDMA device, as
# `make ibverbs-check` (and so `make test`) does:
#
#  1. builds the provider (libsoftrdma-rdmav34.so) and its sysfs tree into
#     $SOFTRDMA_DIR (bin/softrdma);
#  2. makes its command files /dev/infiniband/softrdma0 and softrdma1
#     (symlinks to /dev/null; needs root, else the check is skipped with one
#     line);
#  3. runs the conformance suite of fabric/ibv five times in a row on each
#     device (InfiniBand-like and RoCE-like), under the race detector and
#     cgo's strict pointer checks (GOEXPERIMENT=cgocheck2);
#  4. runs every design of the hardware path (the eight, MEMQ/SR+srq on a
#     shared receive queue, MEMQ/SR+xrc over XRC, MPI, IPoIB, HyPer scheduled and not, the RDMA
#     middleware) on 3 nodes in one process over each device, with the race
#     detector, and fails unless each delivers every tuple intact (explore
#     exits 1 on an integrity failure).
#
# Environment: GO (default go), CC (default cc), SOFTRDMA_DIR.
set -eu
GO=${GO:-go}
CC=${CC:-cc}
dir=${SOFTRDMA_DIR:-bin/softrdma}
here=$(dirname "$0")

if [ ! -e /usr/include/infiniband/verbs.h ]; then
	echo "skipping the software RDMA device checks: libibverbs-dev is not installed (sudo apt-get install libibverbs-dev)"
	exit 0
fi
for n in 0 1; do
	f=/dev/infiniband/softrdma$n
	if [ ! -c "$f" ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "skipping the software RDMA device checks: $f is missing and making it needs root (sudo make ibverbs-check)"
			exit 0
		fi
		mkdir -p /dev/infiniband
		ln -sf /dev/null "$f"
	fi
done

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
$CC -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -pthread \
	-o "$dir/libsoftrdma-rdmav34.so" "$here/softrdma.c" -libverbs
sh "$here/mksysfs.sh" "$dir/sysfs"
SYSFS_PATH=$dir/sysfs
RDMAV_DRIVERS=$dir/libsoftrdma
RDMASHUFFLE_REQUIRE_DEVICE=1
export SYSFS_PATH RDMAV_DRIVERS RDMASHUFFLE_REQUIRE_DEVICE

devices="srdma_ib0 srdma_roce0"
for dev in $devices; do
	echo "conformance suite on $dev, 5 times, -race, cgocheck2"
	RDMASHUFFLE_TEST_DEVICE=$dev GOEXPERIMENT=cgocheck2 $GO test -count=5 -race -tags ibverbs ./fabric/ibv/
done

$GO build -race -tags ibverbs -o "$dir/explore" ./cmd/explore
designs="SESQ/SR MESQ/SR SEMQ/SR MEMQ/SR MEMQ/SR+srq MEMQ/SR+xrc SEMQ/RD MEMQ/RD SEMQ/WR MEMQ/WR SEMQ/WR+cw MEMQ/WR+cw MPI IPoIB HyPer HyPer/unsched RDMA-MW"
failed=0
for dev in $devices; do
	line="designs on $dev, 3 nodes:"
	for d in $designs; do
		if out=$("$dir/explore" run --backend ibv --local --device "$dev" --nodes 3 --cores 4 --threads 2 \
			--design "$d" --bytes-per-node 1MiB --time-limit 2m --json 2>&1) &&
			echo "$out" | grep -q '"integrity": *"ok"'; then
			line="$line $d ok"
		else
			echo "$line"
			echo "FAIL: $d on $dev:"
			echo "$out" | tail -20
			line="designs on $dev, 3 nodes (continued):"
			failed=1
		fi
	done
	echo "$line"
done
exit $failed
