/*
 * shim.h: the C side of the libibverbs backend (build tag ibverbs), included
 * by its cgo files. Small static helpers so that Go never touches the
 * anonymous unions of the verbs structs, and so that a whole batch of work
 * requests (or completions) costs one cgo call. The request chains live in
 * C memory that each queue pair allocates once and reuses.
 */
#ifndef RDMASHUFFLE_SHIM_H
#define RDMASHUFFLE_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <poll.h>
#include <infiniband/verbs.h>

/* One send work request as Go fills it in (flat, host byte order). */
typedef struct {
	uint64_t wr_id;
	uint64_t addr;
	uint64_t remote_addr;
	struct ibv_ah *ah;
	uint32_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t imm;		/* host order; converted to __be32 here */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	int32_t opcode;		/* enum ibv_wr_opcode */
	uint32_t send_flags;	/* enum ibv_send_flags */
	uint32_t remote_srqn;	/* XRC_SEND: the remote XRC SRQ */
	uint64_t dc_key;	/* DCI: the target DCT's access key (shim_dc.h) */
} rs_send;

/* One receive work request. */
typedef struct {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
} rs_recv;

/* One work completion, flattened. */
typedef struct {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm;		/* host order */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t slid;
	uint16_t pad;
} rs_wc;

/* rs_build_send links n requests into wrs and sges (n entries each). */
static void rs_build_send(const rs_send *in, int n, struct ibv_send_wr *wrs, struct ibv_sge *sges)
{
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &wrs[i];
		const rs_send *s = &in[i];
		memset(w, 0, sizeof(*w));
		w->wr_id = s->wr_id;
		sges[i].addr = s->addr;
		sges[i].length = s->length;
		sges[i].lkey = s->lkey;
		w->sg_list = &sges[i];
		/* A zero-length SGE means 2 GiB to some providers: send none. */
		w->num_sge = s->length ? 1 : 0;
		w->opcode = (enum ibv_wr_opcode)s->opcode;
		w->send_flags = s->send_flags;
		if (s->opcode == IBV_WR_SEND_WITH_IMM || s->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			w->imm_data = htonl(s->imm);
		if (s->ah) {
			w->wr.ud.ah = s->ah;
			w->wr.ud.remote_qpn = s->remote_qpn;
			w->wr.ud.remote_qkey = s->remote_qkey;
		} else if (s->opcode == IBV_WR_RDMA_WRITE || s->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
			   s->opcode == IBV_WR_RDMA_READ) {
			w->wr.rdma.remote_addr = s->remote_addr;
			w->wr.rdma.rkey = s->rkey;
		}
		w->qp_type.xrc.remote_srqn = s->remote_srqn;
		w->next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
}

/*
 * rs_post_send posts n requests with one ibv_post_send. It returns
 * errno << 32 | index of the first request not posted (n when all were).
 */
static int64_t rs_post_send(struct ibv_qp *qp, const rs_send *in, int n, struct ibv_send_wr *wrs, struct ibv_sge *sges)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	rs_build_send(in, n, wrs, sges);
	rc = ibv_post_send(qp, wrs, &bad);
	if (rc == 0)
		return n;
	return ((int64_t)rc << 32) | (int64_t)(bad ? bad - wrs : 0);
}

static void rs_build_recv(const rs_recv *in, int n, struct ibv_recv_wr *wrs, struct ibv_sge *sges)
{
	for (int i = 0; i < n; i++) {
		struct ibv_recv_wr *w = &wrs[i];
		memset(w, 0, sizeof(*w));
		w->wr_id = in[i].wr_id;
		sges[i].addr = in[i].addr;
		sges[i].length = in[i].length;
		sges[i].lkey = in[i].lkey;
		w->sg_list = &sges[i];
		w->num_sge = in[i].length ? 1 : 0;
		w->next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
}

static int64_t rs_post_recv(struct ibv_qp *qp, const rs_recv *in, int n, struct ibv_recv_wr *wrs, struct ibv_sge *sges)
{
	struct ibv_recv_wr *bad = NULL;
	int rc;

	rs_build_recv(in, n, wrs, sges);
	rc = ibv_post_recv(qp, wrs, &bad);
	if (rc == 0)
		return n;
	return ((int64_t)rc << 32) | (int64_t)(bad ? bad - wrs : 0);
}

static int64_t rs_post_srq_recv(struct ibv_srq *srq, const rs_recv *in, int n, struct ibv_recv_wr *wrs,
				struct ibv_sge *sges)
{
	struct ibv_recv_wr *bad = NULL;
	int rc;

	rs_build_recv(in, n, wrs, sges);
	rc = ibv_post_srq_recv(srq, wrs, &bad);
	if (rc == 0)
		return n;
	return ((int64_t)rc << 32) | (int64_t)(bad ? bad - wrs : 0);
}

/* rs_create_srq creates a shared receive queue of max_wr receives of one
 * SGE; got_wr receives the depth the provider granted. */
static struct ibv_srq *rs_create_srq(struct ibv_pd *pd, uint32_t max_wr, uint32_t *got_wr)
{
	struct ibv_srq_init_attr attr;
	struct ibv_srq *srq;

	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = max_wr;
	attr.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &attr);
	if (srq)
		*got_wr = attr.attr.max_wr;
	return srq;
}

/* rs_arm_srq sets the limit of the shared queue's limit event (0 disarms);
 * 0 or an error number. */
static int rs_arm_srq(struct ibv_srq *srq, uint32_t limit)
{
	struct ibv_srq_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.srq_limit = limit;
	return ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT);
}

/* rs_convert_wc flattens n completions. */
static void rs_convert_wc(const struct ibv_wc *wc, int n, rs_wc *out)
{
	for (int i = 0; i < n; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
		out[i].qp_num = wc[i].qp_num;
		out[i].src_qp = wc[i].src_qp;
		out[i].wc_flags = wc[i].wc_flags;
		out[i].slid = wc[i].slid;
		out[i].pad = 0;
	}
}

/* rs_poll polls up to n completions into out; negative on error. */
static int rs_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc, rs_wc *out)
{
	int k = ibv_poll_cq(cq, n, wc);
	if (k > 0)
		rs_convert_wc(wc, k, out);
	return k;
}

/* Addressing of a remote port, flat. */
typedef struct {
	uint8_t dgid[16];
	uint16_t dlid;
	uint8_t use_gid;
	uint8_t sgid_index;
	uint8_t port;
	uint8_t sl;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t static_rate;
} rs_path;

static void rs_fill_ah(struct ibv_ah_attr *ah, const rs_path *p)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = p->dlid;
	ah->sl = p->sl;
	ah->src_path_bits = 0;
	ah->static_rate = p->static_rate;
	ah->port_num = p->port;
	if (p->use_gid) {
		ah->is_global = 1;
		memcpy(ah->grh.dgid.raw, p->dgid, 16);
		ah->grh.sgid_index = p->sgid_index;
		ah->grh.hop_limit = p->hop_limit;
		ah->grh.traffic_class = p->traffic_class;
		ah->grh.flow_label = 0;
	}
}

static struct ibv_ah *rs_create_ah(struct ibv_pd *pd, const rs_path *p)
{
	struct ibv_ah_attr attr;
	rs_fill_ah(&attr, p);
	return ibv_create_ah(pd, &attr);
}

/* The attributes of one ibv_modify_qp, flat; mask says which are used. */
typedef struct {
	rs_path path;
	int32_t state;
	int32_t mask;
	int32_t access;
	uint32_t qkey;
	int32_t mtu;
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint16_t pkey_index;
	uint8_t port;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
} rs_modify_args;

static int rs_modify(struct ibv_qp *qp, const rs_modify_args *a)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = (enum ibv_qp_state)a->state;
	attr.qp_access_flags = a->access;
	attr.qkey = a->qkey;
	attr.pkey_index = a->pkey_index;
	attr.port_num = a->port;
	if (a->mask & IBV_QP_AV)
		rs_fill_ah(&attr.ah_attr, &a->path);
	attr.path_mtu = (enum ibv_mtu)a->mtu;
	attr.dest_qp_num = a->dest_qpn;
	attr.rq_psn = a->rq_psn;
	attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr.min_rnr_timer = a->min_rnr_timer;
	attr.sq_psn = a->sq_psn;
	attr.timeout = a->timeout;
	attr.retry_cnt = a->retry_cnt;
	attr.rnr_retry = a->rnr_retry;
	attr.max_rd_atomic = a->max_rd_atomic;
	return ibv_modify_qp(qp, &attr, a->mask);
}

/* rs_query_state reads the current state (enum ibv_qp_state), or -errno. */
static int rs_query_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int rc = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);
	if (rc)
		return -rc;
	return attr.qp_state;
}

/* rs_async waits up to timeout_ms for an asynchronous event of ctx and, if
 * one came, reports its type, the QPN of a queue pair event, the port of a
 * port event, the completion queue of a CQ event or the shared receive
 * queue of an SRQ event (obj), acknowledges it and returns 1; 0 on timeout,
 * -1 on error. */
static int rs_async(struct ibv_context *ctx, int timeout_ms, int *type, uint32_t *qpn, int *port, uintptr_t *obj)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	if (r <= 0)
		return r;
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev))
		return -1;
	*type = ev.event_type;
	*qpn = 0;
	*port = 0;
	*obj = 0;
	switch (ev.event_type) {
	case IBV_EVENT_CQ_ERR:
		*obj = (uintptr_t)ev.element.cq;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		*obj = (uintptr_t)ev.element.srq;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		*qpn = ev.element.qp->qp_num;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		*port = ev.element.port_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 1;
}

/* rs_create_qp creates a queue pair, attached to srq unless it is NULL
 * (then max_recv_wr is ignored); caps_out receives the granted caps. */
static struct ibv_qp *rs_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
				   int type, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_inline,
				   struct ibv_qp_cap *caps_out)
{
	struct ibv_qp_init_attr attr;
	struct ibv_qp *qp;

	memset(&attr, 0, sizeof(attr));
	attr.send_cq = scq;
	attr.recv_cq = rcq;
	attr.srq = srq;
	attr.qp_type = (enum ibv_qp_type)type;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = max_send_wr;
	attr.cap.max_recv_wr = srq ? 0 : max_recv_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = srq ? 0 : 1;
	attr.cap.max_inline_data = max_inline;
	qp = ibv_create_qp(pd, &attr);
	if (qp)
		*caps_out = attr.cap;
	return qp;
}

/* rs_open_xrcd opens a new XRC domain (no file: fd -1). */
static struct ibv_xrcd *rs_open_xrcd(struct ibv_context *ctx)
{
	struct ibv_xrcd_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	attr.fd = -1;
	attr.oflags = O_CREAT;
	return ibv_open_xrcd(ctx, &attr);
}

/* rs_create_xrc_srq creates an XRC SRQ of max_wr receives of one SGE in
 * xrcd, completing in cq; got_wr receives the granted depth, num its
 * number (ibv_get_srq_num). */
static struct ibv_srq *rs_create_xrc_srq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_xrcd *xrcd,
					 struct ibv_cq *cq, uint32_t max_wr, uint32_t *got_wr, uint32_t *num)
{
	struct ibv_srq_init_attr_ex attr;
	struct ibv_srq *srq;

	memset(&attr, 0, sizeof(attr));
	attr.attr.max_wr = max_wr;
	attr.attr.max_sge = 1;
	attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	attr.srq_type = IBV_SRQT_XRC;
	attr.pd = pd;
	attr.xrcd = xrcd;
	attr.cq = cq;
	srq = ibv_create_srq_ex(ctx, &attr);
	if (!srq)
		return NULL;
	*got_wr = attr.attr.max_wr;
	int rc = ibv_get_srq_num(srq, num);
	if (rc) {
		ibv_destroy_srq(srq);
		errno = rc;
		return NULL;
	}
	return srq;
}

/* rs_create_xrc_qp creates an XRC_SEND queue pair of pd (send CQ scq) or
 * an XRC_RECV one of xrcd (ibv_create_qp_ex); caps_out receives the
 * granted caps. */
static struct ibv_qp *rs_create_xrc_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_xrcd *xrcd,
				       struct ibv_cq *scq, int type, uint32_t max_send_wr, uint32_t max_inline,
				       struct ibv_qp_cap *caps_out)
{
	struct ibv_qp_init_attr_ex attr;
	struct ibv_qp *qp;

	memset(&attr, 0, sizeof(attr));
	attr.qp_type = (enum ibv_qp_type)type;
	if (type == IBV_QPT_XRC_RECV) {
		attr.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		attr.xrcd = xrcd;
	} else {
		attr.comp_mask = IBV_QP_INIT_ATTR_PD;
		attr.pd = pd;
		attr.send_cq = scq;
		attr.cap.max_send_wr = max_send_wr;
		attr.cap.max_send_sge = 1;
		attr.cap.max_inline_data = max_inline;
	}
	qp = ibv_create_qp_ex(ctx, &attr);
	if (qp)
		*caps_out = attr.cap;
	return qp;
}

/* Port and GID queries (ibv_query_port is a macro in recent rdma-core). */
static int rs_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

/* rs_query_gid reads GID table entry index into out16 (zeros for an empty
 * entry). It returns 0 or an error number: ibv_query_gid returns -1 and
 * loses it, ibv_query_gid_ex returns it (ENODATA for an empty entry). */
static int rs_query_gid(struct ibv_context *ctx, uint8_t port, int index, uint8_t *out16)
{
	struct ibv_gid_entry e;
	int rc = ibv_query_gid_ex(ctx, port, (uint32_t)index, &e, 0);
	if (rc == ENODATA) {
		memset(out16, 0, 16);
		return 0;
	}
	if (rc == 0)
		memcpy(out16, e.gid.raw, 16);
	return rc;
}

/*
 * rs_gid_type returns the type of a GID table entry (enum ibv_gid_type) or
 * -1 when the table cannot say (older kernels, empty entries).
 */
static int rs_gid_type(struct ibv_context *ctx, uint32_t port, uint32_t index)
{
	struct ibv_gid_entry e;
	if (ibv_query_gid_ex(ctx, port, index, &e, 0))
		return -1;
	return (int)e.gid_type;
}

static struct ibv_device *rs_device_at(struct ibv_device **list, int i) { return list[i]; }

/* rs_alloc returns zeroed, page-aligned memory for a memory region. */
static void *rs_alloc(size_t n)
{
	void *p = NULL;
	long page = 4096;
	if (posix_memalign(&p, page, n ? n : 1))
		return NULL;
	memset(p, 0, n);
	return p;
}

#endif
