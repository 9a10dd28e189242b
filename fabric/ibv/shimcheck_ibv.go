//go:build ibverbs

package ibv

/*
#include "shim_dc.h"

static uint32_t rs_t_imm(const struct ibv_send_wr *w) { return w->imm_data; }
static uint64_t rs_t_raddr(const struct ibv_send_wr *w) { return w->wr.rdma.remote_addr; }
static uint32_t rs_t_rkey(const struct ibv_send_wr *w) { return w->wr.rdma.rkey; }
static struct ibv_ah *rs_t_ah(const struct ibv_send_wr *w) { return w->wr.ud.ah; }
static uint32_t rs_t_rqpn(const struct ibv_send_wr *w) { return w->wr.ud.remote_qpn; }
static uint32_t rs_t_qkey(const struct ibv_send_wr *w) { return w->wr.ud.remote_qkey; }
static void rs_t_set_wc(struct ibv_wc *wc, uint64_t id, int status, int opcode, uint32_t len, uint32_t imm_be,
			uint32_t qpn, uint32_t src, unsigned flags, uint16_t slid)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = id; wc->status = status; wc->opcode = opcode; wc->byte_len = len;
	wc->imm_data = imm_be; wc->qp_num = qpn; wc->src_qp = src; wc->wc_flags = flags; wc->slid = slid;
}

// A fake DCI post interface: every builder and setter rs_post_send_dc may
// call records itself (with the request's wr_id and wr_flags at that
// moment) in rs_t_log; ibv_wr_complete returns rs_t_complete_rc.
typedef struct {
	int kind;
	uint64_t wr_id;
	unsigned flags;
	uint64_t a, b, c;
} rs_t_ev;
enum { RS_T_START = 1, RS_T_COMPLETE, RS_T_ABORT, RS_T_SEND, RS_T_SEND_IMM, RS_T_WRITE, RS_T_WRITE_IMM,
       RS_T_READ, RS_T_SGE, RS_T_SGE_LIST, RS_T_INLINE, RS_T_DC };
static rs_t_ev rs_t_log[64];
static int rs_t_n;
static int rs_t_complete_rc;
static struct ibv_qp_ex rs_t_qpx;
static struct mlx5dv_qp_ex rs_t_mqpx;

static void rs_t_rec(int kind, uint64_t a, uint64_t b, uint64_t c)
{
	if (rs_t_n < 64)
		rs_t_log[rs_t_n++] = (rs_t_ev){ kind, rs_t_qpx.wr_id, rs_t_qpx.wr_flags, a, b, c };
}
static void rs_t_start(struct ibv_qp_ex *q) { (void)q; rs_t_rec(RS_T_START, 0, 0, 0); }
static int rs_t_complete(struct ibv_qp_ex *q) { (void)q; rs_t_rec(RS_T_COMPLETE, 0, 0, 0); return rs_t_complete_rc; }
static void rs_t_abort(struct ibv_qp_ex *q) { (void)q; rs_t_rec(RS_T_ABORT, 0, 0, 0); }
static void rs_t_send(struct ibv_qp_ex *q) { (void)q; rs_t_rec(RS_T_SEND, 0, 0, 0); }
static void rs_t_send_imm(struct ibv_qp_ex *q, __be32 imm) { (void)q; rs_t_rec(RS_T_SEND_IMM, imm, 0, 0); }
static void rs_t_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr) { (void)q; rs_t_rec(RS_T_WRITE, rkey, raddr, 0); }
static void rs_t_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	(void)q;
	rs_t_rec(RS_T_WRITE_IMM, rkey, raddr, imm);
}
static void rs_t_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr) { (void)q; rs_t_rec(RS_T_READ, rkey, raddr, 0); }
static void rs_t_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t len)
{
	(void)q;
	rs_t_rec(RS_T_SGE, lkey, addr, len);
}
static void rs_t_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *l)
{
	(void)q;
	rs_t_rec(RS_T_SGE_LIST, n, (uintptr_t)l, 0);
}
static void rs_t_inline(struct ibv_qp_ex *q, void *addr, size_t len)
{
	(void)q;
	rs_t_rec(RS_T_INLINE, (uintptr_t)addr, len, 0);
}
static void rs_t_dc(struct mlx5dv_qp_ex *m, struct ibv_ah *ah, uint32_t dctn, uint64_t key)
{
	(void)m;
	rs_t_rec(RS_T_DC, (uintptr_t)ah, dctn, key);
}

// rs_t_post resets the log and runs rs_post_send_dc on the fakes.
static int64_t rs_t_post(const rs_send *in, int n, int complete_rc)
{
	memset(&rs_t_qpx, 0, sizeof(rs_t_qpx));
	memset(&rs_t_mqpx, 0, sizeof(rs_t_mqpx));
	rs_t_qpx.wr_start = rs_t_start;
	rs_t_qpx.wr_complete = rs_t_complete;
	rs_t_qpx.wr_abort = rs_t_abort;
	rs_t_qpx.wr_send = rs_t_send;
	rs_t_qpx.wr_send_imm = rs_t_send_imm;
	rs_t_qpx.wr_rdma_write = rs_t_write;
	rs_t_qpx.wr_rdma_write_imm = rs_t_write_imm;
	rs_t_qpx.wr_rdma_read = rs_t_read;
	rs_t_qpx.wr_set_sge = rs_t_sge;
	rs_t_qpx.wr_set_sge_list = rs_t_sge_list;
	rs_t_qpx.wr_set_inline_data = rs_t_inline;
	rs_t_mqpx.wr_set_dc_addr = rs_t_dc;
	rs_t_n = 0;
	rs_t_complete_rc = complete_rc;
	return rs_post_send_dc(&rs_t_qpx, &rs_t_mqpx, in, n);
}
static int rs_t_count(void) { return rs_t_n; }
static rs_t_ev rs_t_at(int i) { return rs_t_log[i]; }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// This file holds no backend code: it lets the tests of the ibverbs build
// (which cannot use cgo themselves) check the shim and the constants of
// mapping.go against <infiniband/verbs.h>, without a device.

// headerConstants pairs each mirrored constant with the header's value.
func headerConstants() map[string][2]int64 {
	return map[string][2]int64{
		"IBV_QP_STATE":                  {C.IBV_QP_STATE, ibvQPState},
		"IBV_EVENT_CQ_ERR":              {C.IBV_EVENT_CQ_ERR, ibvEventCQErr},
		"IBV_EVENT_QP_FATAL":            {C.IBV_EVENT_QP_FATAL, ibvEventQPFatal},
		"IBV_EVENT_QP_REQ_ERR":          {C.IBV_EVENT_QP_REQ_ERR, ibvEventQPReqErr},
		"IBV_EVENT_QP_ACCESS_ERR":       {C.IBV_EVENT_QP_ACCESS_ERR, ibvEventQPAccessErr},
		"IBV_EVENT_COMM_EST":            {C.IBV_EVENT_COMM_EST, ibvEventCommEst},
		"IBV_EVENT_SQ_DRAINED":          {C.IBV_EVENT_SQ_DRAINED, ibvEventSQDrained},
		"IBV_EVENT_PATH_MIG":            {C.IBV_EVENT_PATH_MIG, ibvEventPathMig},
		"IBV_EVENT_PATH_MIG_ERR":        {C.IBV_EVENT_PATH_MIG_ERR, ibvEventPathMigErr},
		"IBV_EVENT_DEVICE_FATAL":        {C.IBV_EVENT_DEVICE_FATAL, ibvEventDeviceFatal},
		"IBV_EVENT_PORT_ACTIVE":         {C.IBV_EVENT_PORT_ACTIVE, ibvEventPortActive},
		"IBV_EVENT_PORT_ERR":            {C.IBV_EVENT_PORT_ERR, ibvEventPortErr},
		"IBV_EVENT_LID_CHANGE":          {C.IBV_EVENT_LID_CHANGE, ibvEventLIDChange},
		"IBV_EVENT_PKEY_CHANGE":         {C.IBV_EVENT_PKEY_CHANGE, ibvEventPKeyChange},
		"IBV_EVENT_SM_CHANGE":           {C.IBV_EVENT_SM_CHANGE, ibvEventSMChange},
		"IBV_EVENT_SRQ_ERR":             {C.IBV_EVENT_SRQ_ERR, ibvEventSRQErr},
		"IBV_EVENT_SRQ_LIMIT_REACHED":   {C.IBV_EVENT_SRQ_LIMIT_REACHED, ibvEventSRQLimitReached},
		"IBV_EVENT_QP_LAST_WQE_REACHED": {C.IBV_EVENT_QP_LAST_WQE_REACHED, ibvEventQPLastWQEReached},
		"IBV_EVENT_CLIENT_REREGISTER":   {C.IBV_EVENT_CLIENT_REREGISTER, ibvEventClientRereg},
		"IBV_EVENT_GID_CHANGE":          {C.IBV_EVENT_GID_CHANGE, ibvEventGIDChange},
		"IBV_EVENT_WQ_FATAL":            {C.IBV_EVENT_WQ_FATAL, ibvEventWQFatal},
		"IBV_QP_ACCESS_FLAGS":           {C.IBV_QP_ACCESS_FLAGS, ibvQPAccessFlags},
		"IBV_QP_PKEY_INDEX":             {C.IBV_QP_PKEY_INDEX, ibvQPPKeyIndex},
		"IBV_QP_PORT":                   {C.IBV_QP_PORT, ibvQPPort},
		"IBV_QP_QKEY":                   {C.IBV_QP_QKEY, ibvQPQKey},
		"IBV_QP_AV":                     {C.IBV_QP_AV, ibvQPAV},
		"IBV_QP_PATH_MTU":               {C.IBV_QP_PATH_MTU, ibvQPPathMTU},
		"IBV_QP_TIMEOUT":                {C.IBV_QP_TIMEOUT, ibvQPTimeout},
		"IBV_QP_RETRY_CNT":              {C.IBV_QP_RETRY_CNT, ibvQPRetryCnt},
		"IBV_QP_RNR_RETRY":              {C.IBV_QP_RNR_RETRY, ibvQPRNRRetry},
		"IBV_QP_RQ_PSN":                 {C.IBV_QP_RQ_PSN, ibvQPRQPSN},
		"IBV_QP_MAX_QP_RD_ATOMIC":       {C.IBV_QP_MAX_QP_RD_ATOMIC, ibvQPMaxQPRdAtomic},
		"IBV_QP_MIN_RNR_TIMER":          {C.IBV_QP_MIN_RNR_TIMER, ibvQPMinRNRTimer},
		"IBV_QP_SQ_PSN":                 {C.IBV_QP_SQ_PSN, ibvQPSQPSN},
		"IBV_QP_MAX_DEST_RD_ATOMIC":     {C.IBV_QP_MAX_DEST_RD_ATOMIC, ibvQPMaxDestRdAtomc},
		"IBV_QP_DEST_QPN":               {C.IBV_QP_DEST_QPN, ibvQPDestQPN},
		"IBV_QPS_RESET":                 {C.IBV_QPS_RESET, ibvQPSReset},
		"IBV_QPS_INIT":                  {C.IBV_QPS_INIT, ibvQPSInit},
		"IBV_QPS_RTR":                   {C.IBV_QPS_RTR, ibvQPSRTR},
		"IBV_QPS_RTS":                   {C.IBV_QPS_RTS, ibvQPSRTS},
		"IBV_QPS_SQD":                   {C.IBV_QPS_SQD, ibvQPSSQD},
		"IBV_QPS_SQE":                   {C.IBV_QPS_SQE, ibvQPSSQE},
		"IBV_QPS_ERR":                   {C.IBV_QPS_ERR, ibvQPSErr},
		"IBV_QPT_RC":                    {C.IBV_QPT_RC, ibvQPTRC},
		"IBV_QPT_UC":                    {C.IBV_QPT_UC, ibvQPTUC},
		"IBV_QPT_UD":                    {C.IBV_QPT_UD, ibvQPTUD},
		"IBV_QPT_XRC_SEND":              {C.IBV_QPT_XRC_SEND, ibvQPTXRCSend},
		"IBV_QPT_XRC_RECV":              {C.IBV_QPT_XRC_RECV, ibvQPTXRCRecv},
		"IBV_QPT_DRIVER":                {C.IBV_QPT_DRIVER, ibvQPTDriver},
		"IBV_WR_RDMA_WRITE":             {C.IBV_WR_RDMA_WRITE, ibvWRRDMAWrite},
		"IBV_WR_RDMA_WRITE_WITH_IMM":    {C.IBV_WR_RDMA_WRITE_WITH_IMM, ibvWRRDMAWriteWithImm},
		"IBV_WR_SEND":                   {C.IBV_WR_SEND, ibvWRSend},
		"IBV_WR_SEND_WITH_IMM":          {C.IBV_WR_SEND_WITH_IMM, ibvWRSendWithImm},
		"IBV_WR_RDMA_READ":              {C.IBV_WR_RDMA_READ, ibvWRRDMARead},
		"IBV_SEND_SIGNALED":             {C.IBV_SEND_SIGNALED, ibvSendSignaled},
		"IBV_SEND_INLINE":               {C.IBV_SEND_INLINE, ibvSendInline},
		"IBV_ACCESS_LOCAL_WRITE":        {C.IBV_ACCESS_LOCAL_WRITE, ibvAccessLocalWrite},
		"IBV_ACCESS_REMOTE_WRITE":       {C.IBV_ACCESS_REMOTE_WRITE, ibvAccessRemoteWrite},
		"IBV_ACCESS_REMOTE_READ":        {C.IBV_ACCESS_REMOTE_READ, ibvAccessRemoteRead},
		"IBV_WC_SEND":                   {C.IBV_WC_SEND, ibvWCSend},
		"IBV_WC_RDMA_WRITE":             {C.IBV_WC_RDMA_WRITE, ibvWCRDMAWrite},
		"IBV_WC_RDMA_READ":              {C.IBV_WC_RDMA_READ, ibvWCRDMARead},
		"IBV_WC_RECV":                   {C.IBV_WC_RECV, ibvWCRecv},
		"IBV_WC_RECV_RDMA_WITH_IMM":     {C.IBV_WC_RECV_RDMA_WITH_IMM, ibvWCRecvRDMAWithImm},
		"IBV_WC_WITH_IMM":               {C.IBV_WC_WITH_IMM, ibvWCWithImm},
		"IBV_LINK_LAYER_INFINIBAND":     {C.IBV_LINK_LAYER_INFINIBAND, ibvLinkLayerIB},
		"IBV_LINK_LAYER_ETHERNET":       {C.IBV_LINK_LAYER_ETHERNET, ibvLinkLayerEthernet},
		"IBV_WC_SUCCESS":                {C.IBV_WC_SUCCESS, ibvWCSuccess},
		"IBV_WC_LOC_LEN_ERR":            {C.IBV_WC_LOC_LEN_ERR, ibvWCLocLenErr},
		"IBV_WC_LOC_QP_OP_ERR":          {C.IBV_WC_LOC_QP_OP_ERR, ibvWCLocQPOpErr},
		"IBV_WC_LOC_EEC_OP_ERR":         {C.IBV_WC_LOC_EEC_OP_ERR, ibvWCLocEECOpErr},
		"IBV_WC_LOC_PROT_ERR":           {C.IBV_WC_LOC_PROT_ERR, ibvWCLocProtErr},
		"IBV_WC_WR_FLUSH_ERR":           {C.IBV_WC_WR_FLUSH_ERR, ibvWCWRFlushErr},
		"IBV_WC_MW_BIND_ERR":            {C.IBV_WC_MW_BIND_ERR, ibvWCMWBindErr},
		"IBV_WC_BAD_RESP_ERR":           {C.IBV_WC_BAD_RESP_ERR, ibvWCBadRespErr},
		"IBV_WC_LOC_ACCESS_ERR":         {C.IBV_WC_LOC_ACCESS_ERR, ibvWCLocAccessErr},
		"IBV_WC_REM_INV_REQ_ERR":        {C.IBV_WC_REM_INV_REQ_ERR, ibvWCRemInvReqErr},
		"IBV_WC_REM_ACCESS_ERR":         {C.IBV_WC_REM_ACCESS_ERR, ibvWCRemAccessErr},
		"IBV_WC_REM_OP_ERR":             {C.IBV_WC_REM_OP_ERR, ibvWCRemOpErr},
		"IBV_WC_RETRY_EXC_ERR":          {C.IBV_WC_RETRY_EXC_ERR, ibvWCRetryExcErr},
		"IBV_WC_RNR_RETRY_EXC_ERR":      {C.IBV_WC_RNR_RETRY_EXC_ERR, ibvWCRNRRetryExcErr},
		"IBV_WC_GENERAL_ERR":            {C.IBV_WC_GENERAL_ERR, ibvWCGeneralErr},
		"IBV_MTU_256":                   {C.IBV_MTU_256, 1},
		"IBV_MTU_4096":                  {C.IBV_MTU_4096, 5},
	}
}

// checkSendChain builds a chain of an RDMA Write with immediate, a UD send
// with immediate and a zero-length send in C memory and reports every
// field that is not what ibv_post_send(3) expects.
func checkSendChain() []string {
	const n = 3
	in := (*C.rs_send)(C.calloc(n, C.sizeof_rs_send))
	wrs := (*C.struct_ibv_send_wr)(C.calloc(n, C.sizeof_struct_ibv_send_wr))
	sges := (*C.struct_ibv_sge)(C.calloc(n, C.sizeof_struct_ibv_sge))
	defer C.free(unsafe.Pointer(in))
	defer C.free(unsafe.Pointer(wrs))
	defer C.free(unsafe.Pointer(sges))
	s := unsafe.Slice(in, n)
	fakeAH := (*C.struct_ibv_ah)(unsafe.Pointer(sges)) // any non-NULL pointer; never dereferenced
	s[0] = C.rs_send{wr_id: 7, addr: 0x1000, length: 64, lkey: 11, remote_addr: 0x2000, rkey: 22, imm: 0xdeadbeef,
		opcode: ibvWRRDMAWriteWithImm, send_flags: ibvSendSignaled}
	s[1] = C.rs_send{wr_id: 8 | recvBit>>1, addr: 0x3000, length: 100, lkey: 33, ah: fakeAH, remote_qpn: 0x123456,
		remote_qkey: 0x11111111, imm: 42, opcode: ibvWRSendWithImm, send_flags: ibvSendInline}
	s[2] = C.rs_send{wr_id: 9, opcode: ibvWRSend}
	C.rs_build_send(in, n, wrs, sges)
	w := unsafe.Slice(wrs, n)
	g := unsafe.Slice(sges, n)
	var bad []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	check(w[0].next == &w[1] && w[1].next == &w[2] && w[2].next == nil, "chain links")
	check(w[0].wr_id == 7 && w[1].wr_id == 8|recvBit>>1 && w[2].wr_id == 9, "wr_id")
	check(w[0].sg_list == &g[0] && w[0].num_sge == 1 && g[0].addr == 0x1000 && g[0].length == 64 && g[0].lkey == 11, "SGE 0")
	check(w[2].num_sge == 0, "a zero-length request must carry no SGE, got %d", w[2].num_sge)
	check(w[0].opcode == C.IBV_WR_RDMA_WRITE_WITH_IMM && w[0].send_flags == C.IBV_SEND_SIGNALED, "opcode/flags 0")
	check(w[1].opcode == C.IBV_WR_SEND_WITH_IMM && w[1].send_flags == C.IBV_SEND_INLINE, "opcode/flags 1")
	imm := uint32(C.rs_t_imm(&w[0]))
	check(*(*[4]byte)(unsafe.Pointer(&imm)) == [4]byte{0xde, 0xad, 0xbe, 0xef}, "imm_data %#x is not big-endian in memory", imm)
	check(C.rs_t_raddr(&w[0]) == 0x2000 && C.rs_t_rkey(&w[0]) == 22, "rdma fields")
	check(C.rs_t_ah(&w[1]) == fakeAH && C.rs_t_rqpn(&w[1]) == 0x123456 && C.rs_t_qkey(&w[1]) == 0x11111111, "ud fields")
	check(C.rs_t_imm(&w[2]) == 0, "imm of a plain send")
	return bad
}

// checkWCConversion converts synthetic completions and reports mismatches.
func checkWCConversion() []string {
	wc := (*C.struct_ibv_wc)(C.calloc(2, C.sizeof_struct_ibv_wc))
	out := (*C.rs_wc)(C.calloc(2, C.sizeof_rs_wc))
	defer C.free(unsafe.Pointer(wc))
	defer C.free(unsafe.Pointer(out))
	w := unsafe.Slice(wc, 2)
	C.rs_t_set_wc(&w[0], C.uint64_t(5|recvBit), C.IBV_WC_SUCCESS, C.IBV_WC_RECV_RDMA_WITH_IMM, 1000, C.uint32_t(htonl(42)), 0x77, 0x99, C.IBV_WC_WITH_IMM, 3)
	C.rs_t_set_wc(&w[1], 6, C.IBV_WC_REM_ACCESS_ERR, 0, 0, C.uint32_t(htonl(7)), 0x78, 0, 0, 0)
	C.rs_convert_wc(wc, 2, out)
	o := unsafe.Slice(out, 2)
	var bad []string
	if o[0].wr_id != C.uint64_t(5|recvBit) || o[0].status != C.IBV_WC_SUCCESS || o[0].opcode != C.IBV_WC_RECV_RDMA_WITH_IMM ||
		o[0].byte_len != 1000 || o[0].imm != 42 || o[0].qp_num != 0x77 || o[0].src_qp != 0x99 || o[0].slid != 3 {
		bad = append(bad, fmt.Sprintf("completion 0: %+v", o[0]))
	}
	if o[1].imm != 0 || o[1].status != C.IBV_WC_REM_ACCESS_ERR || statusOf(uint32(o[1].status)) != 4 {
		bad = append(bad, fmt.Sprintf("completion 1 (no IBV_WC_WITH_IMM: imm must read 0): %+v", o[1]))
	}
	return bad
}

// checkDCPost runs rs_post_send_dc on a fake DCI post interface with a
// send with immediate, an inline RDMA Write, an RDMA Read and a
// zero-length send, and reports every call that is not what ibv_wr_post(3)
// and mlx5dv_wr_set_dc_addr(3) expect: one critical section, per request
// its wr_id and flags (inline not among them) set before the builder, the
// builder with its remote address and key or big-endian immediate, the DC
// address (handle, DCT number, key) and the data setter; and that a failed
// ibv_wr_complete reports its error with nothing posted.
func checkDCPost() []string {
	const n = 4
	in := (*C.rs_send)(C.calloc(n, C.sizeof_rs_send))
	defer C.free(unsafe.Pointer(in))
	s := unsafe.Slice(in, n)
	fakeAH := (*C.struct_ibv_ah)(unsafe.Pointer(in)) // any non-NULL pointer; never dereferenced
	s[0] = C.rs_send{wr_id: 1, addr: 0x1000, length: 64, lkey: 11, imm: 0xdeadbeef, ah: fakeAH, remote_qpn: 0x1234,
		dc_key: 0xdc01, opcode: ibvWRSendWithImm, send_flags: ibvSendSignaled}
	s[1] = C.rs_send{wr_id: 2, addr: 0x2000, length: 16, remote_addr: 0x9000, rkey: 22, ah: fakeAH, remote_qpn: 0x1235,
		dc_key: 0xdc02, opcode: ibvWRRDMAWrite, send_flags: ibvSendInline | ibvSendSignaled}
	s[2] = C.rs_send{wr_id: 3, addr: 0x3000, length: 32, lkey: 33, remote_addr: 0xa000, rkey: 44, ah: fakeAH,
		remote_qpn: 0x1236, dc_key: 0xdc03, opcode: ibvWRRDMARead}
	s[3] = C.rs_send{wr_id: 4, ah: fakeAH, remote_qpn: 0x1237, dc_key: 0xdc04, opcode: ibvWRSend}
	var bad []string
	if r := int64(C.rs_t_post(in, n, 0)); r != n {
		bad = append(bad, fmt.Sprintf("rs_post_send_dc returned %#x, want %d", r, n))
	}
	ah := C.uint64_t(uintptr(unsafe.Pointer(fakeAH)))
	be := uint32(htonl(0xdeadbeef))
	want := []C.rs_t_ev{
		{kind: C.RS_T_START},
		{kind: C.RS_T_SEND_IMM, wr_id: 1, flags: ibvSendSignaled, a: C.uint64_t(be)},
		{kind: C.RS_T_DC, wr_id: 1, flags: ibvSendSignaled, a: ah, b: 0x1234, c: 0xdc01},
		{kind: C.RS_T_SGE, wr_id: 1, flags: ibvSendSignaled, a: 11, b: 0x1000, c: 64},
		{kind: C.RS_T_WRITE, wr_id: 2, flags: ibvSendSignaled, a: 22, b: 0x9000},
		{kind: C.RS_T_DC, wr_id: 2, flags: ibvSendSignaled, a: ah, b: 0x1235, c: 0xdc02},
		{kind: C.RS_T_INLINE, wr_id: 2, flags: ibvSendSignaled, a: 0x2000, b: 16},
		{kind: C.RS_T_READ, wr_id: 3, a: 44, b: 0xa000},
		{kind: C.RS_T_DC, wr_id: 3, a: ah, b: 0x1236, c: 0xdc03},
		{kind: C.RS_T_SGE, wr_id: 3, a: 33, b: 0x3000, c: 32},
		{kind: C.RS_T_SEND, wr_id: 4},
		{kind: C.RS_T_DC, wr_id: 4, a: ah, b: 0x1237, c: 0xdc04},
		{kind: C.RS_T_SGE_LIST, wr_id: 4, a: 0, b: 0},
		{kind: C.RS_T_COMPLETE, wr_id: 4},
	}
	if got := int(C.rs_t_count()); got != len(want) {
		bad = append(bad, fmt.Sprintf("%d calls, want %d", got, len(want)))
	}
	for i := 0; i < min(int(C.rs_t_count()), len(want)); i++ {
		if got := C.rs_t_at(C.int(i)); got != want[i] {
			bad = append(bad, fmt.Sprintf("call %d: %+v, want %+v", i, got, want[i]))
		}
	}
	if r := int64(C.rs_t_post(in, n, C.ENOMEM)); r != int64(C.ENOMEM)<<32 {
		bad = append(bad, fmt.Sprintf("a failed ibv_wr_complete: rs_post_send_dc returned %#x, want ENOMEM << 32 (nothing posted)", r))
	}
	s[0].opcode = 99
	if r := int64(C.rs_t_post(in, 1, 0)); r != int64(C.EINVAL)<<32 || C.rs_t_at(C.rs_t_count()-1).kind != C.RS_T_ABORT {
		bad = append(bad, fmt.Sprintf("an unknown opcode: rs_post_send_dc returned %#x, want EINVAL << 32 after ibv_wr_abort", r))
	}
	return bad
}
