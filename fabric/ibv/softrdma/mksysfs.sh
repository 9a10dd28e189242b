#!/bin/sh
# mksysfs.sh DIR: writes the sysfs tree under which libibverbs (with
# SYSFS_PATH=DIR) finds the two softrdma test devices:
#
#   srdma_ib0    an InfiniBand-like port: LID 1, active MTU 4096, one GID
#   srdma_roce0  a RoCE-like port: no LID, active MTU 1024 (a 1500-byte
#                Ethernet MTU), GID 0 link-local RoCE v1, GID 1 RoCE v2
#                holding the IPv4-mapped address 10.0.0.1
#
# Their command files are /dev/infiniband/softrdma0 and softrdma1, which
# libibverbs opens and checks to be character devices with the numbers in
# the tree's "dev" files: symlinks to /dev/null (1:3) do (creating them
# needs root; `make ibverbs-check` does it).
#
# The files and formats are those the kernel's RDMA core publishes (see
# Documentation/ABI/stable/sysfs-class-infiniband in Linux), read by
# libibverbs 44 when its netlink query finds no RDMA support in the kernel;
# softrdma/active_mtu and softrdma/max_sq_desc_sz are the device's own.
set -eu
dir=${1:?usage: mksysfs.sh DIR}
rm -rf "$dir"
mkdir -p "$dir/class/infiniband_verbs" "$dir/class/infiniband"
echo 6 >"$dir/class/infiniband_verbs/abi_version"

# device UVERBS IBDEV LINK_LAYER LID MTU GUID GIDS...
device() {
	uverbs=$1 ibdev=$2 link=$3 lid=$4 mtu=$5 guid=$6
	shift 6
	v="$dir/class/infiniband_verbs/$uverbs"
	mkdir -p "$v"
	echo "$ibdev" >"$v/ibdev"
	echo 1:3 >"$v/dev"
	echo 1 >"$v/abi_version"
	d="$dir/class/infiniband/$ibdev"
	mkdir -p "$d/device" "$d/ports/1/gids" "$d/softrdma"
	echo "1: CA" >"$d/node_type"
	echo "$guid" >"$d/node_guid"
	echo "softrdma:$link" >"$d/device/modalias"
	echo "$link" >"$d/ports/1/link_layer"
	echo "$lid" >"$d/ports/1/lid"
	echo "4: ACTIVE" >"$d/ports/1/state"
	echo "$mtu" >"$d/softrdma/active_mtu"
	echo 1024 >"$d/softrdma/max_sq_desc_sz"
	i=0
	for g in "$@"; do
		echo "${g%%,*}" >"$d/ports/1/gids/$i"
		if [ "$link" = Ethernet ]; then
			mkdir -p "$d/ports/1/gid_attrs/types"
			echo "${g#*,}" >"$d/ports/1/gid_attrs/types/$i"
		fi
		i=$((i + 1))
	done
}

device softrdma0 srdma_ib0 InfiniBand 0x1 4096 5352:444d:0000:0001 \
	"fe80:0000:0000:0000:5352:444d:0000:0001,"
device softrdma1 srdma_roce0 Ethernet 0x0 1024 5352:444d:0000:0002 \
	"fe80:0000:0000:0000:5352:44ff:fe4d:0002,IB/RoCE v1" \
	"0000:0000:0000:0000:0000:ffff:0a00:0001,RoCE v2"
