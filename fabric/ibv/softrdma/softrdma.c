/*
 * softrdma: a software RDMA device for tests, loaded by the unmodified
 * libibverbs as a provider (libsoftrdma-rdmav34.so).
 *
 * Every context of every softrdma device opened by one process shares one
 * in-memory fabric: queue pairs of contexts on the same device reach each
 * other through it, addressed as on the wire (destination QPN plus LID on an
 * InfiniBand-like port, plus GID on a RoCE-like port). A thread per process
 * (the "NIC") executes posted work requests in order, moves the bytes
 * between registered regions, and writes completions; requests wait on the
 * same timers as on hardware (the RNR timer, the local ACK timeout) and
 * fail the same way when their retries run out.
 *
 * What it implements, from the InfiniBand specification (volume 1, chapters
 * 9-11) and the verbs man pages: RC, UC and UD queue pairs; SEND,
 * SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM and RDMA_READ; memory
 * regions with keys, bounds and access flags; completion queues with
 * overrun; shared receive queues (consumed in posting order by any attached
 * queue pair, with the limit event); XRC (domains, XRC SRQs with their own
 * CQ, XRC_SEND queue pairs whose requests name the remote SRQ, XRC_RECV
 * queue pairs that deliver into the SRQ named); RNR NAKs and retries; transport
 * retries when the responder is not ready; queue pair state transitions with the required and optional
 * attribute masks of each transport and transition; a GRH required on RoCE
 * ports; UD's 40-byte GRH and Q_Key; flushes in the error state; the
 * asynchronous events of access errors, overruns and SRQ limits. Send queues are sized
 * as the mlx5 provider sizes them (64-byte basic blocks, per-transport WQE
 * overhead, inline space inside the WQE), so a request that does not fit a
 * ConnectX does not fit here either. docs/hardware.md says what this device
 * cannot prove.
 *
 * Device parameters come from the (fake) sysfs tree that names the device:
 * ports/1/link_layer, ports/1/lid, ports/1/gids/N, node_guid, and the
 * device's own files softrdma/active_mtu and softrdma/max_sq_desc_sz.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/ib_user_verbs.h>

#include "provider_abi.h"

/* Device limits: those of a ConnectX-4/5 as ibv_devinfo reports them
 * (max_qp_wr 32768 basic blocks, 30 SGEs, 16 outstanding reads). */
enum {
	SR_MAX_QP = 1 << 17,
	SR_MAX_QP_WR = 32768, /* also max_send_wqebb: the send queue's blocks */
	SR_MAX_SRQ = 1 << 23,
	SR_MAX_SRQ_WR = 32767,
	SR_MAX_SGE = 30,
	SR_MAX_CQE = (1 << 22) - 1,
	SR_MAX_RD_ATOM = 16,
	SR_MAX_RQ_DESC = 512,
	SR_PKEY_TABLE = 128,
	SR_MAX_GIDS = 4,
	SR_SEND_WQE_BB = 64,
	SR_INLINE_SEG = 4,
	SR_DATA_SEG = 16,
	SR_GRH = 40,
	SR_QPN_BASE = 0x100,
};

/*
 * The send-queue WQE overhead of plain ibv_create_qp on mlx5 (rdma-core
 * providers/mlx5/verbs.c, sq_overhead for the default operation set): RC
 * and UC reserve room for the largest operation they may post, a memory
 * window bind (control 16 + UMR control 48 + mkey context 64 + 64 = 192
 * bytes); UD has the control segment and a 48-byte datagram segment.
 */
enum { SR_OVERHEAD_RC = 192, SR_OVERHEAD_UD = 64 };

struct sr_dev {
	struct verbs_device vdev; /* first: the library's view */
	pthread_mutex_t once;
	int configured;
	int roce;
	uint16_t lid;
	int active_mtu; /* enum ibv_mtu */
	int sq_desc_sz;
	uint64_t guid; /* network byte order, as ibv_get_device_guid returns it */
	int ngid;
	union ibv_gid gid[SR_MAX_GIDS];
};

struct sr_srq;

struct sr_ctx {
	struct verbs_context vctx; /* first */
	struct sr_dev *dev;
	int evw; /* write end of the asynchronous event pipe */
	struct sr_srq *zombies; /* destroyed shared receive queues with events not yet acknowledged */
};

/* ctx_of: the library hands providers the public context, the last member
 * of struct verbs_context (which grows at the front). */
static struct sr_ctx *ctx_of(struct ibv_context *c)
{
	return (struct sr_ctx *)((char *)c - offsetof(struct verbs_context, context));
}

struct sr_pd {
	struct ibv_pd pd;
	int users;
};

/* An XRC domain: its XRC SRQs and XRC_RECV queue pairs count as users. */
struct sr_xrcd {
	struct ibv_xrcd xrcd; /* first (the library's struct verbs_xrcd adds nothing it reads) */
	struct sr_ctx *ctx;
	int users;
};

struct sr_mr {
	struct verbs_mr vmr;
	struct sr_pd *pd;
	uint64_t start, len;
	int access;
};

struct sr_ah {
	struct ibv_ah ah;
	struct ibv_ah_attr attr;
	struct sr_pd *pd;
};

struct sr_cqe {
	struct ibv_wc wc;
	uint32_t upto;      /* the work queue's consumer index after this entry */
	uint8_t sq;         /* a send completion (else a receive) */
	struct sr_srq *srq; /* a receive taken from this shared queue: polling frees its slot */
};

struct sr_cq {
	struct verbs_cq vcq;
	struct sr_ctx *ctx;
	struct sr_cqe *ring;
	int cap, head, n;
	int overrun;
	int users;
};

struct sr_swqe {
	uint64_t wr_id;
	int opcode;
	unsigned flags;
	int nsge;
	struct ibv_sge sge[SR_MAX_SGE];
	uint32_t len;
	uint8_t *inl; /* inline copy, or NULL */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm; /* network order, as posted */
	struct ibv_ah_attr av; /* UD */
	uint32_t rqpn, rqkey;  /* UD */
	uint32_t srqn;         /* XRC_SEND: the remote XRC SRQ */
	int tries, rnr_tries;
	uint64_t due; /* not before this time (ns), after a NAK or a timeout */
};

struct sr_rwqe {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[SR_MAX_SGE];
};

/*
 * A shared receive queue: a ring of receives that its queue pairs take in
 * posting order. A receive occupies its slot from posting until the
 * completion of the message that took it is polled (or purged with its
 * queue pair), as in mlx5, which frees an SRQ WQE when it polls its CQE.
 */
struct sr_srq {
	struct ibv_srq srq; /* first */
	struct sr_ctx *ctx;
	struct sr_pd *pd;
	struct sr_rwqe *ring;
	uint32_t cap;        /* slots: the granted max_wr */
	uint32_t max_sge;
	uint32_t head, next; /* free-running: posted, taken by a message */
	uint32_t freed;      /* taken and polled or purged: head - freed slots are in use */
	uint32_t limit;      /* armed limit, 0 when disarmed */
	int users;           /* attached queue pairs */
	unsigned events;     /* limit events written to the event pipe */
	struct sr_srq *zombie;
	struct sr_xrcd *xrcd; /* an XRC SRQ's domain, or NULL */
	struct sr_cq *cq;     /* an XRC SRQ's completion queue */
};

struct sr_qp {
	struct verbs_qp vqp; /* first */
	struct sr_ctx *ctx;
	struct sr_pd *pd;
	struct sr_cq *scq, *rcq;
	struct sr_srq *srq; /* receives come from it, or from rq when NULL; XRC_RECV: the request's, while it is delivered */
	struct sr_xrcd *xrcd; /* XRC_RECV: its domain */
	int type;
	int state;
	int sig_all;
	struct ibv_qp_cap cap;
	int sq_cap, rq_cap;
	struct sr_swqe *sq;
	uint8_t *inl;
	struct sr_rwqe *rq;
	/* free-running counters: posted, executed, polled */
	uint32_t sq_head, sq_next, sq_tail;
	uint32_t rq_head, rq_next, rq_tail;
	/* attributes */
	int port, pkey_index, access, path_mtu;
	uint32_t qkey, dest_qpn, rq_psn, sq_psn;
	struct ibv_ah_attr av;
	int timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
};

/* The process's fabric: one lock, one NIC thread. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static pthread_t g_nic;
static int g_contexts, g_stop;
static struct sr_qp **g_qps;
static uint32_t g_nqps, g_qpcap;
static struct sr_mr **g_mrs;
static uint32_t g_nmrs, g_mrcap;
static uint32_t g_keygen;
static uint32_t g_srqs; /* shared receive queues created: their handles (and SRQ numbers) */
static struct sr_srq **g_srqtab; /* by handle, while they exist */
static uint32_t g_srqcap;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int mtu_bytes(int mtu) { return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0; }

static uint32_t pow2_at_least(uint64_t v)
{
	uint64_t p = 1;
	while (p < v)
		p <<= 1;
	return p > UINT32_MAX ? UINT32_MAX : (uint32_t)p;
}

static uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

/* ---- configuration from the sysfs tree ---- */

static int read_file(const char *dir, const char *name, char *buf, size_t n)
{
	char path[IBV_SYSFS_PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t k = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[k] = 0;
	while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == ' '))
		buf[--k] = 0;
	return (int)k;
}

static int parse_gid(const char *s, union ibv_gid *g)
{
	for (int i = 0; i < 8; i++) {
		unsigned v;
		if (sscanf(s + i * 5, "%4x", &v) != 1)
			return -1;
		g->raw[2 * i] = v >> 8;
		g->raw[2 * i + 1] = v & 0xff;
	}
	return 0;
}

static int mtu_enum(int bytes)
{
	for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
		if (mtu_bytes(m) == bytes)
			return m;
	return -1;
}

static int configure(struct sr_dev *d)
{
	const char *dir = d->vdev.device.ibdev_path;
	char buf[128];

	pthread_mutex_lock(&d->once);
	if (d->configured) {
		pthread_mutex_unlock(&d->once);
		return 0;
	}
	d->roce = read_file(dir, "ports/1/link_layer", buf, sizeof(buf)) > 0 && strcmp(buf, "Ethernet") == 0;
	d->lid = 0;
	if (!d->roce && read_file(dir, "ports/1/lid", buf, sizeof(buf)) > 0)
		d->lid = (uint16_t)strtoul(buf, NULL, 0);
	d->active_mtu = d->roce ? IBV_MTU_1024 : IBV_MTU_4096;
	if (read_file(dir, "softrdma/active_mtu", buf, sizeof(buf)) > 0 && mtu_enum(atoi(buf)) > 0)
		d->active_mtu = mtu_enum(atoi(buf));
	d->sq_desc_sz = 1024;
	if (read_file(dir, "softrdma/max_sq_desc_sz", buf, sizeof(buf)) > 0 && atoi(buf) >= 256)
		d->sq_desc_sz = atoi(buf);
	d->guid = 0;
	if (read_file(dir, "node_guid", buf, sizeof(buf)) > 0) {
		unsigned a, b, c, e;
		if (sscanf(buf, "%4x:%4x:%4x:%4x", &a, &b, &c, &e) == 4)
			d->guid = htobe64((uint64_t)a << 48 | (uint64_t)b << 32 | (uint64_t)c << 16 | e);
	}
	d->ngid = 0;
	for (int i = 0; i < SR_MAX_GIDS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "ports/1/gids/%d", i);
		if (read_file(dir, name, buf, sizeof(buf)) <= 0 || parse_gid(buf, &d->gid[i]))
			break;
		d->ngid = i + 1;
	}
	if ((!d->roce && d->lid == 0) || d->ngid == 0) {
		fprintf(stderr, "softrdma: %s: needs ports/1/lid (InfiniBand) and ports/1/gids/0\n", dir);
		pthread_mutex_unlock(&d->once);
		return -1;
	}
	d->configured = 1;
	pthread_mutex_unlock(&d->once);
	return 0;
}

/* ---- tables (g_mu held) ---- */

static struct sr_qp *qp_by_num(uint32_t qpn)
{
	if (qpn < SR_QPN_BASE || qpn - SR_QPN_BASE >= g_nqps)
		return NULL;
	return g_qps[qpn - SR_QPN_BASE];
}

static struct sr_mr *mr_by_key(uint32_t key)
{
	uint32_t i = key >> 8;
	if (i >= g_nmrs || !g_mrs[i] || g_mrs[i]->vmr.ibv_mr.lkey != key)
		return NULL;
	return g_mrs[i];
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *p = realloc(*arr, (size_t)c * elem);
	if (!p)
		return -1;
	memset((char *)p + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
	*arr = p;
	*cap = c;
	return 0;
}

/* ---- asynchronous events ---- */

/* post_event returns whether the event was written. */
static int post_event(struct sr_ctx *c, uint32_t type, uint64_t element)
{
	struct ib_uverbs_async_event_desc ev = { .element = element, .event_type = type };
	/* The pipe is non-blocking: events beyond its capacity are lost, as
	 * the kernel drops them when its queue is full. */
	return write(c->evw, &ev, sizeof(ev)) == sizeof(ev);
}

/* ---- completions ---- */

static void cq_push(struct sr_cq *cq, const struct sr_cqe *e)
{
	if (cq->overrun)
		return;
	if (cq->n == cq->cap) {
		cq->overrun = 1;
		post_event(cq->ctx, IBV_EVENT_CQ_ERR, (uintptr_t)&cq->vcq.cq);
		return;
	}
	cq->ring[(cq->head + cq->n) % cq->cap] = *e;
	cq->n++;
}

/* cq_purge drops the entries of qpn (the queue pair was reset or destroyed). */
static void cq_purge(struct sr_cq *cq, uint32_t qpn)
{
	int k = 0;
	for (int i = 0; i < cq->n; i++) {
		struct sr_cqe *e = &cq->ring[(cq->head + i) % cq->cap];
		if (e->wc.qp_num != qpn)
			cq->ring[(cq->head + k++) % cq->cap] = *e;
		else if (e->srq)
			e->srq->freed++;
	}
	cq->n = k;
}

static void complete_send(struct sr_qp *qp, struct sr_swqe *w, enum ibv_wc_status st, uint32_t len)
{
	static const enum ibv_wc_opcode ops[] = {
		[IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE, [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
		[IBV_WR_SEND] = IBV_WC_SEND, [IBV_WR_SEND_WITH_IMM] = IBV_WC_SEND,
		[IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
	};
	qp->sq_next++;
	if (st == IBV_WC_SUCCESS && !(w->flags & IBV_SEND_SIGNALED) && !qp->sig_all)
		return;
	struct sr_cqe e = { .upto = qp->sq_next, .sq = 1 };
	e.wc.wr_id = w->wr_id;
	e.wc.status = st;
	e.wc.opcode = w->opcode >= 0 && w->opcode <= IBV_WR_RDMA_READ ? ops[w->opcode] : IBV_WC_SEND;
	e.wc.byte_len = len;
	e.wc.qp_num = qp->vqp.qp.qp_num;
	e.wc.vendor_err = st == IBV_WC_SUCCESS ? 0 : 0x100 + st;
	cq_push(qp->scq, &e);
}

/* srq_taken consumes the shared queue's next receive and raises the limit
 * event, once, when fewer receives than the armed limit remain. */
static void srq_taken(struct sr_srq *s)
{
	s->next++;
	if (s->limit > 0 && s->head - s->next < s->limit) {
		s->limit = 0;
		if (post_event(s->ctx, IBV_EVENT_SRQ_LIMIT_REACHED, (uintptr_t)&s->srq))
			s->events++;
	}
}

static void complete_recv(struct sr_qp *qp, struct sr_rwqe *r, enum ibv_wc_status st, enum ibv_wc_opcode op,
			  uint32_t len, int has_imm, uint32_t imm, const struct sr_qp *src, int grh)
{
	struct sr_cqe e = { .sq = 0 };
	if (qp->srq) {
		srq_taken(qp->srq);
		e.srq = qp->srq;
	} else {
		e.upto = ++qp->rq_next;
	}
	e.wc.wr_id = r->wr_id;
	e.wc.status = st;
	e.wc.opcode = op;
	e.wc.byte_len = len;
	e.wc.qp_num = qp->vqp.qp.qp_num;
	e.wc.vendor_err = st == IBV_WC_SUCCESS ? 0 : 0x100 + st;
	if (st == IBV_WC_SUCCESS) {
		if (has_imm) {
			e.wc.wc_flags |= IBV_WC_WITH_IMM;
			e.wc.imm_data = imm;
		}
		if (src) {
			e.wc.src_qp = src->vqp.qp.qp_num;
			e.wc.slid = src->ctx->dev->lid;
			e.wc.sl = 0;
		}
		if (grh)
			e.wc.wc_flags |= IBV_WC_GRH;
	}
	cq_push(qp->srq && qp->srq->cq ? qp->srq->cq : qp->rcq, &e);
}

/* to_error moves qp to ERROR; the NIC thread flushes what remains. */
static void to_error(struct sr_qp *qp)
{
	qp->state = IBV_QPS_ERR;
	qp->vqp.qp.state = IBV_QPS_ERR;
}

static void flush(struct sr_qp *qp)
{
	while (qp->sq_next != qp->sq_head) {
		struct sr_swqe *w = &qp->sq[qp->sq_next % qp->sq_cap];
		complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
	}
	while (qp->rq_next != qp->rq_head) {
		struct sr_rwqe *r = &qp->rq[qp->rq_next % qp->rq_cap];
		complete_recv(qp, r, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0, NULL, 0);
	}
}

/* ---- memory access checks ---- */

/* local_ok: every SGE names a region of pd, inside it, with write access
 * when the device writes there. */
static int local_ok(struct sr_pd *pd, const struct ibv_sge *sge, int n, int write, uint64_t *total)
{
	uint64_t t = 0;
	for (int i = 0; i < n; i++) {
		struct sr_mr *m = mr_by_key(sge[i].lkey);
		if (!m || m->pd != pd)
			return 0;
		if (sge[i].addr < m->start || sge[i].addr + sge[i].length > m->start + m->len)
			return 0;
		if (write && !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return 0;
		t += sge[i].length;
	}
	*total = t;
	return 1;
}

/* remote_ok: rkey names a region of the responder's domain, [addr, addr+len)
 * lies inside it, and both the region and the queue pair allow the access. */
static int remote_ok(struct sr_qp *dst, uint32_t rkey, uint64_t addr, uint64_t len, int access)
{
	struct sr_mr *m = mr_by_key(rkey);
	/* An XRC_RECV queue pair has no domain of its own: the SRQ's counts. */
	struct sr_pd *pd = dst->type == IBV_QPT_XRC_RECV && dst->srq ? dst->srq->pd : dst->pd;
	if (!m || m->pd != pd || !(m->access & access) || !(dst->access & access))
		return 0;
	return addr >= m->start && addr + len <= m->start + m->len && addr + len >= addr;
}

/* gather copies the request's bytes into buf (len bytes). */
static void gather(const struct sr_swqe *w, uint8_t *buf)
{
	if (w->inl) {
		memcpy(buf, w->inl, w->len);
		return;
	}
	for (int i = 0; i < w->nsge; i++) {
		memcpy(buf, (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
		buf += w->sge[i].length;
	}
}

/* scatter writes len bytes of src over the SGEs, skipping the first skip bytes. */
static void scatter(const struct ibv_sge *sge, int n, const uint8_t *src, uint64_t len, uint64_t skip)
{
	for (int i = 0; i < n && len > 0; i++) {
		uint64_t l = sge[i].length;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		uint64_t k = l - skip;
		if (k > len)
			k = len;
		memcpy((uint8_t *)(uintptr_t)sge[i].addr + skip, src, k);
		src += k;
		len -= k;
		skip = 0;
	}
}

/* ---- addressing ---- */

static int dev_has_gid(const struct sr_dev *d, const union ibv_gid *g)
{
	for (int i = 0; i < d->ngid; i++)
		if (memcmp(d->gid[i].raw, g->raw, 16) == 0)
			return 1;
	return 0;
}

/* reach finds queue pair qpn at the port the address vector names, on the
 * fabric of dev; NULL when nothing answers there. */
static struct sr_qp *reach(struct sr_dev *dev, const struct ibv_ah_attr *av, uint32_t qpn)
{
	struct sr_qp *q = qp_by_num(qpn);
	if (!q || q->ctx->dev != dev)
		return NULL;
	if (av->is_global) {
		if (!dev_has_gid(dev, &av->grh.dgid))
			return NULL;
	} else if (dev->roce || av->dlid != dev->lid) {
		return NULL;
	}
	return q;
}

static uint64_t rnr_delay_ns(int code)
{
	/* The RNR timer encoding of the specification (volume 1, table 45),
	 * in units of 10 us: 1..31 run from 0.01 ms to 491.52 ms, and 0 is the
	 * longest, 655.36 ms. */
	static const uint32_t units[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
	};
	return (uint64_t)units[code & 31] * 10000ull;
}

static uint64_t ack_timeout_ns(int code)
{
	/* 4.096 us x 2^timeout; 0 means wait forever (retried every second here). */
	if (code == 0)
		return 1000000000ull;
	return 4096ull << code;
}

/* ---- the NIC: executing one send request ---- */

enum { DONE, WAIT, FAILED };

static int fail(struct sr_qp *qp, struct sr_swqe *w, enum ibv_wc_status st)
{
	complete_send(qp, w, st, 0);
	to_error(qp);
	return FAILED;
}

/* take_recv finds the responder's next receive (from its shared queue
 * when it has one); complete_recv consumes it. */
static int take_recv(struct sr_qp *dst, struct sr_rwqe **r)
{
	struct sr_srq *s = dst->srq;
	if (s) {
		if (s->next == s->head)
			return 0;
		*r = &s->ring[s->next % s->cap];
		return 1;
	}
	if (dst->rq_next == dst->rq_head)
		return 0;
	*r = &dst->rq[dst->rq_next % dst->rq_cap];
	return 1;
}

/* recv_pd is the domain of dst's receive buffers: its shared queue's. */
static struct sr_pd *recv_pd(const struct sr_qp *dst) { return dst->srq ? dst->srq->pd : dst->pd; }

static int exec_ud(struct sr_qp *qp, struct sr_swqe *w)
{
	struct sr_dev *dev = qp->ctx->dev;
	if (w->len > (uint32_t)mtu_bytes(dev->active_mtu))
		return fail(qp, w, IBV_WC_LOC_LEN_ERR);
	struct sr_qp *dst = reach(dev, &w->av, w->rqpn);
	uint32_t qkey = (w->rqkey & 0x80000000u) ? qp->qkey : w->rqkey;
	struct sr_rwqe *r;
	if (dst && dst->type == IBV_QPT_UD && (dst->state == IBV_QPS_RTR || dst->state == IBV_QPS_RTS) &&
	    dst->qkey == qkey && take_recv(dst, &r)) {
		uint64_t room;
		if (!local_ok(recv_pd(dst), r->sge, r->nsge, 1, &room)) {
			complete_recv(dst, r, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, NULL, 0);
			to_error(dst);
		} else if (room < (uint64_t)w->len + SR_GRH) {
			complete_recv(dst, r, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, NULL, 0);
			to_error(dst);
		} else {
			uint8_t grh[SR_GRH] = { 0 };
			if (w->av.is_global) {
				/* An IPv6-shaped header: version 6, payload length, next
				 * header 0x1b, hop limit, source and destination GIDs. */
				grh[0] = 0x60;
				uint16_t plen = htons((uint16_t)(w->len + 12 + 8 + 4));
				memcpy(grh + 4, &plen, 2);
				grh[6] = 0x1b;
				grh[7] = w->av.grh.hop_limit;
				memcpy(grh + 8, qp->ctx->dev->gid[w->av.grh.sgid_index < qp->ctx->dev->ngid ? w->av.grh.sgid_index : 0].raw, 16);
				memcpy(grh + 24, w->av.grh.dgid.raw, 16);
				scatter(r->sge, r->nsge, grh, SR_GRH, 0);
			}
			uint8_t *buf = malloc(w->len ? w->len : 1);
			if (buf) {
				gather(w, buf);
				scatter(r->sge, r->nsge, buf, w->len, SR_GRH);
				free(buf);
				complete_recv(dst, r, IBV_WC_SUCCESS, IBV_WC_RECV, w->len + SR_GRH,
					      w->opcode == IBV_WR_SEND_WITH_IMM, w->imm, qp, w->av.is_global);
			}
		}
	}
	/* A datagram completes at the sender whether or not it was received. */
	complete_send(qp, w, IBV_WC_SUCCESS, w->len);
	return DONE;
}

/* retry handles a request the responder did not answer: the requester
 * waits for its ACK timeout and sends again, retry_cnt times. */
static int retry(struct sr_qp *qp, struct sr_swqe *w, uint64_t now)
{
	if (qp->timeout != 0 && ++w->tries > qp->retry_cnt)
		return fail(qp, w, IBV_WC_RETRY_EXC_ERR);
	w->due = now + ack_timeout_ns(qp->timeout);
	return WAIT;
}

/* rnr handles an RNR NAK: wait the responder's RNR timer, rnr_retry times
 * (7 means forever). */
static int rnr(struct sr_qp *qp, struct sr_qp *dst, struct sr_swqe *w, uint64_t now)
{
	if (qp->rnr_retry != 7 && ++w->rnr_tries > qp->rnr_retry)
		return fail(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
	w->due = now + rnr_delay_ns(dst->min_rnr_timer);
	return WAIT;
}

/* responder_error: a request the responder rejects moves it to ERROR with
 * an asynchronous event; the requester completes with st (RC). */
static int responder_error(struct sr_qp *qp, struct sr_qp *dst, struct sr_swqe *w, enum ibv_wc_status st,
			   uint32_t event)
{
	to_error(dst);
	if (event)
		post_event(dst->ctx, event, (uintptr_t)&dst->vqp.qp);
	if (qp->type == IBV_QPT_UC) {
		complete_send(qp, w, IBV_WC_SUCCESS, w->len);
		return DONE;
	}
	return fail(qp, w, st);
}

/* peer_type is the type of the responder a connected queue pair of type t
 * talks to. */
static int peer_type(int t) { return t == IBV_QPT_XRC_SEND ? IBV_QPT_XRC_RECV : t; }

/* xrc_srq is the XRC SRQ numbered srqn of target dst's domain, or NULL. */
static struct sr_srq *xrc_srq(const struct sr_qp *dst, uint32_t srqn)
{
	if (srqn == 0 || srqn >= g_srqcap || !g_srqtab[srqn] || g_srqtab[srqn]->xrcd != dst->xrcd)
		return NULL;
	return g_srqtab[srqn];
}

static int exec_connected(struct sr_qp *qp, struct sr_swqe *w, uint64_t now)
{
	int rc = qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND;
	struct sr_qp *dst = reach(qp->ctx->dev, &qp->av, qp->dest_qpn);
	if (!dst || dst->type != peer_type(qp->type) || (dst->state != IBV_QPS_RTR && dst->state != IBV_QPS_RTS)) {
		if (!rc) { /* UC: the packets are lost, the sender does not know */
			complete_send(qp, w, IBV_WC_SUCCESS, w->len);
			return DONE;
		}
		return retry(qp, w, now);
	}
	w->tries = 0;
	if (dst->type == IBV_QPT_XRC_RECV) {
		/* Every XRC request names an SRQ of the target's domain (its
		 * XRCETH); another is a NAK-Invalid Request. */
		dst->srq = xrc_srq(dst, w->srqn);
		if (!dst->srq)
			return responder_error(qp, dst, w, IBV_WC_REM_INV_REQ_ERR, 0);
	}
	struct sr_rwqe *r = NULL;
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (!take_recv(dst, &r)) {
			if (!rc) {
				complete_send(qp, w, IBV_WC_SUCCESS, w->len);
				return DONE;
			}
			return rnr(qp, dst, w, now);
		}
		break;
	}
	uint8_t *buf = NULL;
	if (w->opcode != IBV_WR_RDMA_READ) {
		buf = malloc(w->len ? w->len : 1);
		if (!buf)
			return WAIT;
		gather(w, buf);
	}
	int res = DONE;
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM: {
		uint64_t room;
		if (!local_ok(recv_pd(dst), r->sge, r->nsge, 1, &room)) {
			complete_recv(dst, r, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, NULL, 0);
			res = responder_error(qp, dst, w, IBV_WC_REM_OP_ERR, 0);
			break;
		}
		if (room < w->len) {
			complete_recv(dst, r, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, NULL, 0);
			res = responder_error(qp, dst, w, IBV_WC_REM_INV_REQ_ERR, 0);
			break;
		}
		scatter(r->sge, r->nsge, buf, w->len, 0);
		complete_recv(dst, r, IBV_WC_SUCCESS, IBV_WC_RECV, w->len, w->opcode == IBV_WR_SEND_WITH_IMM, w->imm,
			      NULL, 0);
		complete_send(qp, w, IBV_WC_SUCCESS, w->len);
		break;
	}
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (w->len > 0 && !remote_ok(dst, w->rkey, w->raddr, w->len, IBV_ACCESS_REMOTE_WRITE)) {
			res = responder_error(qp, dst, w, IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
			break;
		}
		memcpy((void *)(uintptr_t)w->raddr, buf, w->len);
		if (r)
			complete_recv(dst, r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, w->len, 1, w->imm, NULL, 0);
		complete_send(qp, w, IBV_WC_SUCCESS, w->len);
		break;
	case IBV_WR_RDMA_READ:
		if (!remote_ok(dst, w->rkey, w->raddr, w->len, IBV_ACCESS_REMOTE_READ) || dst->max_dest_rd_atomic == 0) {
			res = responder_error(qp, dst, w, IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
			break;
		}
		scatter(w->sge, w->nsge, (const uint8_t *)(uintptr_t)w->raddr, w->len, 0);
		complete_send(qp, w, IBV_WC_SUCCESS, w->len);
		break;
	}
	free(buf);
	return res;
}

static int execute(struct sr_qp *qp, struct sr_swqe *w, uint64_t now)
{
	if (!w->inl) {
		uint64_t total;
		if (!local_ok(qp->pd, w->sge, w->nsge, w->opcode == IBV_WR_RDMA_READ, &total))
			return fail(qp, w, IBV_WC_LOC_PROT_ERR);
		if (total > (1ull << 31))
			return fail(qp, w, IBV_WC_LOC_LEN_ERR);
		w->len = (uint32_t)total;
	}
	if (qp->type == IBV_QPT_UD)
		return exec_ud(qp, w);
	return exec_connected(qp, w, now);
}

/* progress runs qp's send queue as far as it can; *next receives the time
 * of its next timer. It returns whether anything happened. */
static int progress(struct sr_qp *qp, uint64_t now, uint64_t *next)
{
	int did = 0;
	if (qp->state == IBV_QPS_ERR) {
		did = qp->sq_next != qp->sq_head || qp->rq_next != qp->rq_head;
		flush(qp);
		return did;
	}
	if (qp->state != IBV_QPS_RTS)
		return 0;
	while (qp->sq_next != qp->sq_head && qp->state == IBV_QPS_RTS) {
		struct sr_swqe *w = &qp->sq[qp->sq_next % qp->sq_cap];
		if (w->due > now) {
			if (w->due < *next)
				*next = w->due;
			break;
		}
		int r = execute(qp, w, now);
		if (r == WAIT) {
			if (w->due < *next)
				*next = w->due;
			break;
		}
		did = 1;
	}
	return did;
}

static void *nic(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g_mu);
	while (!g_stop) {
		uint64_t now = now_ns(), next = UINT64_MAX;
		int did = 0;
		for (uint32_t i = 0; i < g_nqps; i++)
			if (g_qps[i])
				did |= progress(g_qps[i], now, &next);
		if (did)
			continue;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&g_cv, &g_mu);
		} else {
			struct timespec ts = { .tv_sec = next / 1000000000ull, .tv_nsec = next % 1000000000ull };
			pthread_cond_timedwait(&g_cv, &g_mu, &ts);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return NULL;
}

static void kick(void) { pthread_cond_signal(&g_cv); }

/* ---- verbs: device, port ---- */

static int sr_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	(void)input;
	struct sr_dev *d = ctx_of(context)->dev;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(attr, 0, attr_size);
	struct ibv_device_attr *a = &attr->orig_attr;
	snprintf(a->fw_ver, sizeof(a->fw_ver), "softrdma 1");
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = ~0ull;
	a->page_size_cap = 0xfffff000;
	/* ConnectX's vendor ID and the part of a ConnectX-4: the device sizes
	 * its queues as mlx5 does, so software that special-cases mlx5 limits
	 * applies them here too. */
	a->vendor_id = 0x02c9;
	a->vendor_part_id = 4115;
	a->hw_ver = 0;
	a->max_qp = SR_MAX_QP;
	a->max_qp_wr = SR_MAX_QP_WR;
	a->max_srq = SR_MAX_SRQ;
	a->max_srq_wr = SR_MAX_SRQ_WR;
	a->max_srq_sge = SR_MAX_SGE;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
	a->max_sge = SR_MAX_SGE;
	a->max_sge_rd = SR_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = SR_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = SR_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = SR_MAX_RD_ATOM;
	a->max_res_rd_atom = SR_MAX_RD_ATOM * SR_MAX_QP;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_ah = 1 << 20;
	a->max_pkeys = SR_PKEY_TABLE;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
	return 0;
}

static int sr_query_port(struct ibv_context *context, uint8_t port, struct ibv_port_attr *a)
{
	struct sr_dev *d = ctx_of(context)->dev;
	if (port != 1)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = d->active_mtu;
	a->gid_tbl_len = d->ngid;
	a->port_cap_flags = d->roce ? 0 : IBV_PORT_SM;
	a->max_msg_sz = 1u << 31;
	a->pkey_tbl_len = SR_PKEY_TABLE;
	a->lid = d->lid;
	a->sm_lid = d->roce ? 0 : 1;
	a->max_vl_num = 4;
	a->active_width = 2;  /* 4x */
	a->active_speed = 32; /* EDR: 4 x 25 Gb/s */
	a->phys_state = 5;    /* LinkUp */
	a->link_layer = d->roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

/* ---- protection domains, memory regions, address handles ---- */

/* in_use reads a use count that the fabric's lock guards. */
static int in_use(const int *users)
{
	pthread_mutex_lock(&g_mu);
	int n = *users;
	pthread_mutex_unlock(&g_mu);
	return n > 0;
}

static struct ibv_pd *sr_alloc_pd(struct ibv_context *context)
{
	(void)context;
	struct sr_pd *p = calloc(1, sizeof(*p));
	if (!p)
		errno = ENOMEM;
	return p ? &p->pd : NULL;
}

static int sr_dealloc_pd(struct ibv_pd *pd)
{
	struct sr_pd *p = (struct sr_pd *)pd;
	if (in_use(&p->users))
		return EBUSY;
	free(p);
	return 0;
}

static struct ibv_mr *sr_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access)
{
	struct sr_pd *p = (struct sr_pd *)pd;
	(void)hca_va;
	if (length == 0 || ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			    !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	struct sr_mr *m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&g_mu);
	uint32_t slot = g_nmrs;
	for (uint32_t i = 0; i < g_nmrs; i++)
		if (!g_mrs[i]) {
			slot = i;
			break;
		}
	if (slot >= (1u << 24) || grow((void **)&g_mrs, &g_mrcap, slot + 1, sizeof(*g_mrs))) {
		pthread_mutex_unlock(&g_mu);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	if (slot == g_nmrs)
		g_nmrs++;
	/* The key's low byte changes with every registration, so a stale key
	 * does not name a later region of the same slot. */
	uint32_t key = slot << 8 | (++g_keygen & 0xff);
	m->vmr.ibv_mr.lkey = m->vmr.ibv_mr.rkey = key;
	m->vmr.ibv_mr.handle = key;
	m->vmr.mr_type = SR_MR_TYPE_MR;
	m->vmr.access = access;
	m->pd = p;
	m->start = (uintptr_t)addr;
	m->len = length;
	m->access = access;
	g_mrs[slot] = m;
	p->users++;
	pthread_mutex_unlock(&g_mu);
	return &m->vmr.ibv_mr;
}

static int sr_dereg_mr(struct verbs_mr *vmr)
{
	struct sr_mr *m = (struct sr_mr *)vmr;
	pthread_mutex_lock(&g_mu);
	g_mrs[m->vmr.ibv_mr.lkey >> 8] = NULL;
	m->pd->users--;
	pthread_mutex_unlock(&g_mu);
	free(m);
	return 0;
}

/* check_av validates an address vector for this port: port 1, a GRH on
 * RoCE (where addressing is by GID), a LID otherwise, a source GID index
 * inside the table. */
static int check_av(struct sr_dev *d, const struct ibv_ah_attr *av)
{
	if (av->port_num != 1)
		return EINVAL;
	if (d->roce && !av->is_global)
		return EINVAL;
	if (av->is_global && av->grh.sgid_index >= d->ngid)
		return EINVAL;
	if (!av->is_global && av->dlid == 0)
		return EINVAL;
	return 0;
}

static struct ibv_ah *sr_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct sr_dev *d = ctx_of(pd->context)->dev;
	int rc = check_av(d, attr);
	if (rc) {
		errno = rc;
		return NULL;
	}
	struct sr_ah *a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->attr = *attr;
	a->pd = (struct sr_pd *)pd;
	pthread_mutex_lock(&g_mu);
	a->pd->users++;
	pthread_mutex_unlock(&g_mu);
	return &a->ah;
}

static int sr_destroy_ah(struct ibv_ah *ah)
{
	struct sr_ah *a = (struct sr_ah *)ah;
	pthread_mutex_lock(&g_mu);
	a->pd->users--;
	pthread_mutex_unlock(&g_mu);
	free(a);
	return 0;
}

/* ---- completion queues ---- */

static struct ibv_cq *sr_create_cq(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
				   int comp_vector)
{
	(void)channel;
	(void)comp_vector;
	if (cqe < 1 || cqe > SR_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	struct sr_cq *c = calloc(1, sizeof(*c));
	/* mlx5 rounds the depth up to a power of two, less one entry. */
	int cap = (int)pow2_at_least((uint64_t)cqe + 1) - 1;
	if (c)
		c->ring = calloc((size_t)cap, sizeof(*c->ring));
	if (!c || !c->ring) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->cap = cap;
	c->ctx = ctx_of(context);
	c->vcq.cq.cqe = cap;
	return &c->vcq.cq;
}

static int sr_destroy_cq(struct ibv_cq *cq)
{
	struct sr_cq *c = (struct sr_cq *)cq;
	if (in_use(&c->users))
		return EBUSY;
	free(c->ring);
	free(c);
	return 0;
}

static int sr_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	struct sr_cq *c = (struct sr_cq *)cq;
	int k = 0;
	pthread_mutex_lock(&g_mu);
	if (c->overrun) {
		pthread_mutex_unlock(&g_mu);
		return -1;
	}
	for (; k < num && c->n > 0; k++) {
		struct sr_cqe *e = &c->ring[c->head];
		struct sr_qp *q = qp_by_num(e->wc.qp_num);
		if (e->srq) /* the shared queue's slot is free again */
			e->srq->freed++;
		else if (q) { /* the slot of the request is free again, as in mlx5's poll */
			if (e->sq)
				q->sq_tail = e->upto;
			else
				q->rq_tail = e->upto;
		}
		wc[k] = e->wc;
		c->head = (c->head + 1) % c->cap;
		c->n--;
	}
	pthread_mutex_unlock(&g_mu);
	return k;
}

static int sr_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return EOPNOTSUPP; /* completion channels are not implemented */
}

/* ---- queue pairs ---- */

/* size_sq sizes the send queue as mlx5 does for plain ibv_create_qp: the
 * WQE holds the transport's overhead and either the SGEs or the inline
 * data, rounded to 64-byte blocks; the queue's bytes round up to a power of
 * two and its blocks may not exceed max_send_wqebb. It returns the number
 * of requests the queue holds (>= cap->max_send_wr) and the inline size it
 * grants, or -EINVAL. */
static int size_sq(const struct sr_dev *d, int type, struct ibv_qp_cap *cap)
{
	int over = type == IBV_QPT_UD ? SR_OVERHEAD_UD : SR_OVERHEAD_RC;
	if (cap->max_send_wr == 0)
		return 0;
	uint32_t inl = cap->max_inline_data ? over + align_up(SR_INLINE_SEG + cap->max_inline_data, 16) : 0;
	uint32_t max_gather = (uint32_t)(d->sq_desc_sz - over) / SR_DATA_SEG;
	if (cap->max_send_sge > max_gather || cap->max_send_sge > SR_MAX_SGE)
		return -EINVAL;
	uint32_t size = over + cap->max_send_sge * SR_DATA_SEG;
	uint32_t tot = size > inl ? size : inl;
	if (tot > (uint32_t)d->sq_desc_sz)
		return -EINVAL;
	uint32_t wqe = align_up(tot, SR_SEND_WQE_BB);
	if (cap->max_send_wr > 0x7fffffffu / (uint32_t)d->sq_desc_sz)
		return -EINVAL;
	uint32_t bytes = pow2_at_least((uint64_t)cap->max_send_wr * wqe);
	if (bytes / SR_SEND_WQE_BB > SR_MAX_QP_WR)
		return -EINVAL;
	cap->max_inline_data = wqe - over - SR_INLINE_SEG;
	return (int)(bytes / wqe);
}

static int size_rq(struct ibv_qp_cap *cap)
{
	if (cap->max_recv_wr == 0)
		return 0;
	if (cap->max_recv_wr > SR_MAX_QP_WR || cap->max_recv_sge > SR_MAX_SGE)
		return -EINVAL;
	uint32_t sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	if (pow2_at_least(sge * SR_DATA_SEG) > SR_MAX_RQ_DESC)
		return -EINVAL;
	return (int)pow2_at_least(cap->max_recv_wr);
}

/* qp_args checks what a queue pair of type attr->qp_type takes: RC, UC and
 * UD a send and a receive CQ (and maybe an SRQ); XRC_SEND a send CQ only
 * (no receive queue); XRC_RECV an XRC domain and nothing else. It clears
 * what the type ignores; 0 or an errno. */
static int qp_args(struct sr_ctx *ctx, struct ibv_pd *pd, struct sr_xrcd *xrcd, struct ibv_qp_init_attr *attr)
{
	struct sr_cq *scq = (struct sr_cq *)attr->send_cq, *rcq = (struct sr_cq *)attr->recv_cq;
	struct sr_srq *srq = (struct sr_srq *)attr->srq;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		if (!pd || !scq || !rcq || scq->ctx != ctx || rcq->ctx != ctx || (srq && (srq->ctx != ctx || srq->xrcd)))
			return EINVAL;
		if (srq) /* the receive queue's attributes are ignored, as by mlx5 */
			attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0;
		return 0;
	case IBV_QPT_XRC_SEND:
		if (!pd || !scq || scq->ctx != ctx || srq)
			return EINVAL;
		attr->recv_cq = NULL;
		attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0;
		return 0;
	case IBV_QPT_XRC_RECV:
		if (!xrcd || xrcd->ctx != ctx || srq)
			return EINVAL;
		attr->send_cq = attr->recv_cq = NULL;
		memset(&attr->cap, 0, sizeof(attr->cap));
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static void free_qp(struct sr_qp *q)
{
	free(q->sq);
	free(q->rq);
	free(q->inl);
	free(q);
}

/* create_qp creates a queue pair of pd, or for XRC_RECV of xrcd. */
static struct ibv_qp *create_qp(struct ibv_context *context, struct ibv_pd *pd, struct sr_xrcd *xrcd,
				struct ibv_qp_init_attr *attr)
{
	struct sr_ctx *ctx = ctx_of(context);
	int rc = qp_args(ctx, pd, xrcd, attr);
	if (rc) {
		errno = rc;
		return NULL;
	}
	struct ibv_qp_cap cap = attr->cap;
	int sq = size_sq(ctx->dev, attr->qp_type, &cap);
	int rq = size_rq(&cap);
	if (sq < 0 || rq < 0) {
		errno = EINVAL;
		return NULL;
	}
	struct sr_qp *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->sq_cap = sq > 0 ? sq : 1;
	q->rq_cap = rq > 0 ? rq : 1;
	q->sq = calloc((size_t)q->sq_cap, sizeof(*q->sq));
	q->rq = calloc((size_t)q->rq_cap, sizeof(*q->rq));
	q->inl = calloc((size_t)q->sq_cap, (size_t)cap.max_inline_data + 1);
	if (!q->sq || !q->rq || !q->inl) {
		free_qp(q);
		errno = ENOMEM;
		return NULL;
	}
	cap.max_send_wr = (uint32_t)sq;
	cap.max_recv_wr = (uint32_t)rq;
	q->cap = cap;
	attr->cap = cap;
	q->ctx = ctx;
	q->pd = (struct sr_pd *)pd;
	q->xrcd = xrcd;
	q->scq = (struct sr_cq *)attr->send_cq;
	q->rcq = (struct sr_cq *)attr->recv_cq;
	q->srq = (struct sr_srq *)attr->srq;
	q->type = attr->qp_type;
	q->state = IBV_QPS_RESET;
	q->sig_all = attr->sq_sig_all;
	q->port = 1;

	pthread_mutex_lock(&g_mu);
	if (g_nqps >= SR_MAX_QP || grow((void **)&g_qps, &g_qpcap, g_nqps + 1, sizeof(*g_qps))) {
		pthread_mutex_unlock(&g_mu);
		free_qp(q);
		errno = ENOMEM;
		return NULL;
	}
	uint32_t qpn = SR_QPN_BASE + g_nqps;
	g_qps[g_nqps++] = q;
	if (q->pd)
		q->pd->users++;
	if (q->xrcd)
		q->xrcd->users++;
	if (q->scq)
		q->scq->users++;
	if (q->rcq)
		q->rcq->users++;
	if (q->srq)
		q->srq->users++;
	pthread_mutex_unlock(&g_mu);

	struct ibv_qp *ib = &q->vqp.qp;
	ib->context = context;
	ib->qp_context = attr->qp_context;
	ib->pd = pd;
	ib->send_cq = attr->send_cq;
	ib->recv_cq = attr->recv_cq;
	ib->srq = attr->srq;
	ib->handle = qpn;
	ib->qp_num = qpn;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = attr->qp_type;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	ib->events_completed = 0;
	if (xrcd) {
		q->vqp.comp_mask = 1; /* VERBS_QP_XRCD */
		q->vqp.xrcd = &xrcd->xrcd;
	}
	return ib;
}

static struct ibv_qp *sr_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return create_qp(pd->context, pd, NULL, attr);
}

/* sr_create_qp_ex: ibv_create_qp_ex with a protection domain, or with an
 * XRC domain for XRC_RECV (the only extended attributes taken). */
static struct ibv_qp *sr_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct ibv_pd *pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
	struct sr_xrcd *xrcd = (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ? (struct sr_xrcd *)attr->xrcd : NULL;
	if ((attr->qp_type == IBV_QPT_XRC_RECV) != (xrcd != NULL) || (pd && pd->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	/* struct ibv_qp_init_attr_ex begins as struct ibv_qp_init_attr. */
	struct ibv_qp_init_attr init;
	memcpy(&init, attr, sizeof(init));
	struct ibv_qp *qp = create_qp(context, pd, xrcd, &init);
	if (qp)
		memcpy(attr, &init, sizeof(init));
	return qp;
}

/* discard forgets q's requests and purges its completions (an XRC_RECV
 * queue pair's, in its SRQs' CQs, stay: they free SRQ slots when polled). */
static void discard(struct sr_qp *q)
{
	q->sq_head = q->sq_next = q->sq_tail = 0;
	q->rq_head = q->rq_next = q->rq_tail = 0;
	if (q->scq)
		cq_purge(q->scq, q->vqp.qp.qp_num);
	if (q->rcq && q->rcq != q->scq)
		cq_purge(q->rcq, q->vqp.qp.qp_num);
}

static int sr_destroy_qp(struct ibv_qp *qp)
{
	struct sr_qp *q = (struct sr_qp *)qp;
	pthread_mutex_lock(&g_mu);
	discard(q);
	g_qps[qp->qp_num - SR_QPN_BASE] = NULL;
	if (q->pd)
		q->pd->users--;
	if (q->xrcd)
		q->xrcd->users--;
	if (q->scq)
		q->scq->users--;
	if (q->rcq)
		q->rcq->users--;
	if (q->srq && q->type != IBV_QPT_XRC_RECV) /* a target's is the last request's, not attached */
		q->srq->users--;
	pthread_mutex_unlock(&g_mu);
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	free_qp(q);
	return 0;
}

/*
 * The attribute masks of ibv_modify_qp per transition and transport, from
 * the InfiniBand specification's QP state table (volume 1, section 11.2.5,
 * as ibv_modify_qp(3) lists it): attributes outside required|optional are
 * refused, as are missing required ones.
 */
struct transition {
	int from, to;
	int req[5], opt[5]; /* indexed RC, UC, UD, XRC_SEND, XRC_RECV */
};

enum {
	M_INIT_RCUC = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
	M_INIT_UD = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
	M_RTR_UC = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
	M_RTR_RC = M_RTR_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	M_RTR_OPT = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
	M_RTS_RC = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	M_RTS_UC_OPT = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE,
	M_RTS_RC_OPT = M_RTS_UC_OPT | IBV_QP_MIN_RNR_TIMER,
	M_UD_OPT = IBV_QP_CUR_STATE | IBV_QP_QKEY,
	/* XRC, as the kernel's table has it (ib_modify_qp_is_ok): the
	 * initiator is RC without the responder's attributes at RTR; the
	 * target is RC at RTR, and at RTS takes the timeout and SQ PSN only. */
	M_RTS_TGT = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
};

static const struct transition transitions[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT, { M_INIT_RCUC, M_INIT_RCUC, M_INIT_UD, M_INIT_RCUC, M_INIT_RCUC }, { 0 } },
	{ IBV_QPS_INIT, IBV_QPS_INIT, { 0 }, { M_INIT_RCUC, M_INIT_RCUC, M_INIT_UD, M_INIT_RCUC, M_INIT_RCUC } },
	{ IBV_QPS_INIT, IBV_QPS_RTR, { M_RTR_RC, M_RTR_UC, 0, M_RTR_UC, M_RTR_RC },
	  { M_RTR_OPT, M_RTR_OPT, IBV_QP_PKEY_INDEX | IBV_QP_QKEY, M_RTR_OPT, M_RTR_OPT } },
	{ IBV_QPS_RTR, IBV_QPS_RTS, { M_RTS_RC, IBV_QP_SQ_PSN, IBV_QP_SQ_PSN, M_RTS_RC, M_RTS_TGT },
	  { M_RTS_RC_OPT, M_RTS_UC_OPT, M_UD_OPT, M_RTS_UC_OPT, M_RTS_RC_OPT } },
	{ IBV_QPS_RTS, IBV_QPS_RTS, { 0 }, { M_RTS_RC_OPT, M_RTS_UC_OPT, M_UD_OPT, M_RTS_UC_OPT, M_RTS_RC_OPT } },
};

static int transport_index(int type)
{
	switch (type) {
	case IBV_QPT_RC:
		return 0;
	case IBV_QPT_UC:
		return 1;
	case IBV_QPT_XRC_SEND:
		return 3;
	case IBV_QPT_XRC_RECV:
		return 4;
	}
	return 2;
}

/* legal returns 0 when mask is what the transition from -> to of a queue
 * pair of type needs, else EINVAL. */
static int legal(int type, int from, int to, int mask)
{
	int extra = mask & ~IBV_QP_STATE;
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return (mask & IBV_QP_STATE) && extra == 0 ? 0 : EINVAL;
	for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++) {
		const struct transition *t = &transitions[i];
		if (t->from != from || t->to != to)
			continue;
		int k = transport_index(type), req = t->req[k], opt = t->opt[k];
		if ((extra & req) != req || (extra & ~(req | opt)) != 0)
			return EINVAL;
		return 0;
	}
	return EINVAL;
}

static int check_values(struct sr_qp *q, const struct ibv_qp_attr *a, int mask)
{
	struct sr_dev *d = q->ctx->dev;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= SR_PKEY_TABLE)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && ((int)a->path_mtu < IBV_MTU_256 || (int)a->path_mtu > d->active_mtu))
		return EINVAL;
	if ((mask & IBV_QP_AV) && check_av(d, &a->ah_attr))
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SR_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SR_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC)))
		return EINVAL;
	return 0;
}

static void apply(struct sr_qp *q, const struct ibv_qp_attr *a, int mask)
{
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port = a->port_num;
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->access = a->qp_access_flags;
	if (mask & IBV_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		q->av = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qpn = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
}

static int sr_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct sr_qp *q = (struct sr_qp *)qp;
	pthread_mutex_lock(&g_mu);
	int from = q->state;
	int to = (mask & IBV_QP_STATE) ? (int)attr->qp_state : from;
	int rc = 0;
	if ((mask & IBV_QP_CUR_STATE) && (int)attr->cur_qp_state != from)
		rc = EINVAL;
	if (!rc)
		rc = legal(q->type, from, to, mask | IBV_QP_STATE);
	if (!rc)
		rc = check_values(q, attr, mask);
	if (!rc) {
		apply(q, attr, mask);
		if (to == IBV_QPS_RESET)
			discard(q);
		q->state = to;
		q->vqp.qp.state = to;
		kick();
	}
	pthread_mutex_unlock(&g_mu);
	return rc;
}

static int sr_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init)
{
	struct sr_qp *q = (struct sr_qp *)qp;
	(void)mask;
	pthread_mutex_lock(&g_mu);
	memset(a, 0, sizeof(*a));
	a->qp_state = q->state;
	a->cur_qp_state = q->state;
	a->path_mtu = q->path_mtu;
	a->qkey = q->qkey;
	a->rq_psn = q->rq_psn;
	a->sq_psn = q->sq_psn;
	a->dest_qp_num = q->dest_qpn;
	a->qp_access_flags = q->access;
	a->cap = q->cap;
	a->ah_attr = q->av;
	a->pkey_index = q->pkey_index;
	a->port_num = q->port;
	a->timeout = q->timeout;
	a->retry_cnt = q->retry_cnt;
	a->rnr_retry = q->rnr_retry;
	a->min_rnr_timer = q->min_rnr_timer;
	a->max_rd_atomic = q->max_rd_atomic;
	a->max_dest_rd_atomic = q->max_dest_rd_atomic;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->qp_context;
		init->send_cq = qp->send_cq;
		init->recv_cq = qp->recv_cq;
		init->srq = qp->srq;
		init->cap = q->cap;
		init->qp_type = q->type;
		init->sq_sig_all = q->sig_all;
	}
	pthread_mutex_unlock(&g_mu);
	return 0;
}

static int send_opcode_ok(int type, int op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return 1;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type != IBV_QPT_UD;
	case IBV_WR_RDMA_READ:
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
	default:
		return 0; /* atomics, memory windows: not implemented */
	}
}

/* post_one queues one send request; 0 or an errno. */
static int post_one(struct sr_qp *q, const struct ibv_send_wr *wr)
{
	if (q->type == IBV_QPT_XRC_RECV || (q->state != IBV_QPS_RTS && q->state != IBV_QPS_ERR))
		return EINVAL;
	if (q->sq_head - q->sq_tail >= q->cap.max_send_wr)
		return ENOMEM;
	if (!send_opcode_ok(q->type, wr->opcode) || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge)
		return EINVAL;
	if (q->type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	struct sr_swqe *w = &q->sq[q->sq_head % q->sq_cap];
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->nsge = wr->num_sge;
	memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
	w->imm = wr->imm_data;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t total = 0;
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > q->cap.max_inline_data || wr->opcode == IBV_WR_RDMA_READ)
			return EINVAL;
		/* Inline data is copied when posted: the buffer may be reused at once. */
		w->inl = q->inl + (size_t)(q->sq_head % q->sq_cap) * (q->cap.max_inline_data + 1);
		uint8_t *p = w->inl;
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		w->len = (uint32_t)total;
	}
	if (q->type == IBV_QPT_UD) {
		w->av = ((struct sr_ah *)wr->wr.ud.ah)->attr;
		w->rqpn = wr->wr.ud.remote_qpn;
		w->rqkey = wr->wr.ud.remote_qkey;
	} else {
		w->raddr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (q->type == IBV_QPT_XRC_SEND)
		w->srqn = wr->qp_type.xrc.remote_srqn;
	q->sq_head++;
	return 0;
}

static int sr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sr_qp *q = (struct sr_qp *)qp;
	int rc = 0;
	pthread_mutex_lock(&g_mu);
	for (; wr; wr = wr->next) {
		rc = post_one(q, wr);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	kick();
	pthread_mutex_unlock(&g_mu);
	return rc;
}

static int sr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sr_qp *q = (struct sr_qp *)qp;
	int rc = 0;
	pthread_mutex_lock(&g_mu);
	for (; wr; wr = wr->next) {
		if (q->state == IBV_QPS_RESET || q->srq || q->type == IBV_QPT_XRC_SEND || q->type == IBV_QPT_XRC_RECV)
			rc = EINVAL;
		else if (q->rq_head - q->rq_tail >= q->cap.max_recv_wr)
			rc = ENOMEM;
		else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > (q->cap.max_recv_sge ? q->cap.max_recv_sge : 1))
			rc = EINVAL;
		if (rc) {
			*bad = wr;
			break;
		}
		struct sr_rwqe *r = &q->rq[q->rq_head % q->rq_cap];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		q->rq_head++;
	}
	kick();
	pthread_mutex_unlock(&g_mu);
	return rc;
}

/* ---- shared receive queues ---- */

/* create_srq creates a shared receive queue of pd; the caller fills the
 * public fields the library does not (ibv_create_srq fills them). */
static struct sr_srq *create_srq(struct ibv_pd *pd, struct ibv_srq_attr *a)
{
	if (a->max_wr == 0 || a->max_wr > SR_MAX_SRQ_WR || a->max_sge > SR_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct sr_srq *s = calloc(1, sizeof(*s));
	/* mlx5 rounds the depth up to a power of two, less one entry. */
	uint32_t cap = pow2_at_least((uint64_t)a->max_wr + 1) - 1;
	if (s)
		s->ring = calloc(cap, sizeof(*s->ring));
	if (!s || !s->ring) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->cap = cap;
	s->max_sge = a->max_sge ? a->max_sge : 1;
	s->ctx = ctx_of(pd->context);
	s->pd = (struct sr_pd *)pd;
	/* ibv_create_srq ignores srq_limit: ibv_modify_srq arms it. */
	a->max_wr = cap;
	a->max_sge = s->max_sge;
	a->srq_limit = 0;
	pthread_mutex_lock(&g_mu);
	if (grow((void **)&g_srqtab, &g_srqcap, g_srqs + 2, sizeof(*g_srqtab))) {
		pthread_mutex_unlock(&g_mu);
		free(s->ring);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->pd->users++;
	s->srq.handle = ++g_srqs;
	g_srqtab[s->srq.handle] = s;
	pthread_mutex_unlock(&g_mu);
	return s;
}

static struct ibv_srq *sr_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct sr_srq *s = create_srq(pd, &init->attr);
	/* The library fills context, pd, srq_context, mutex and cond. */
	return s ? &s->srq : NULL;
}

/* sr_create_srq_ex: ibv_create_srq_ex of an XRC SRQ (IBV_SRQT_XRC, with
 * its domain and CQ); the library creates basic ones with create_srq. */
static struct ibv_srq *sr_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *init)
{
	uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	if ((init->comp_mask & need) != need || (init->comp_mask & ~need) || init->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct sr_ctx *ctx = ctx_of(context);
	struct sr_xrcd *x = (struct sr_xrcd *)init->xrcd;
	struct sr_cq *cq = (struct sr_cq *)init->cq;
	if (!init->pd || init->pd->context != context || !x || x->ctx != ctx || !cq || cq->ctx != ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct sr_srq *s = create_srq(init->pd, &init->attr);
	if (!s)
		return NULL;
	pthread_mutex_lock(&g_mu);
	s->xrcd = x;
	s->cq = cq;
	x->users++;
	cq->users++;
	pthread_mutex_unlock(&g_mu);
	struct ibv_srq *srq = &s->srq;
	srq->context = context;
	srq->srq_context = init->srq_context;
	srq->pd = init->pd;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	srq->events_completed = 0;
	return srq;
}

/* sr_get_srq_num: an SRQ's number is its handle. */
static int sr_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	*num = srq->handle;
	return 0;
}

static struct ibv_xrcd *sr_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *init)
{
	/* A domain shared through a file (fd, O_CREAT) is not implemented:
	 * only a new one (fd -1). */
	if (!(init->comp_mask & IBV_XRCD_INIT_ATTR_FD) || init->fd != -1) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	struct sr_xrcd *x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->ctx = ctx_of(context);
	x->xrcd.context = context;
	return &x->xrcd;
}

/* sr_close_xrcd fails with EBUSY while XRC SRQs or XRC_RECV queue pairs of
 * the domain remain. */
static int sr_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct sr_xrcd *x = (struct sr_xrcd *)xrcd;
	pthread_mutex_lock(&g_mu);
	int busy = x->users > 0;
	pthread_mutex_unlock(&g_mu);
	if (busy)
		return EBUSY;
	free(x);
	return 0;
}

static int sr_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct sr_srq *s = (struct sr_srq *)srq;
	/* Resizing (IBV_SRQ_MAX_WR) is not implemented, as by mlx5. */
	if (mask & ~IBV_SRQ_LIMIT)
		return EINVAL;
	if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit >= s->cap)
		return EINVAL;
	pthread_mutex_lock(&g_mu);
	if (mask & IBV_SRQ_LIMIT)
		s->limit = attr->srq_limit;
	pthread_mutex_unlock(&g_mu);
	return 0;
}

static int sr_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct sr_srq *s = (struct sr_srq *)srq;
	pthread_mutex_lock(&g_mu);
	attr->max_wr = s->cap;
	attr->max_sge = s->max_sge;
	attr->srq_limit = s->limit;
	pthread_mutex_unlock(&g_mu);
	return 0;
}

/*
 * sr_destroy_srq fails with EBUSY while queue pairs are attached. A queue
 * whose limit event the library has not acknowledged yet (ibv_ack_async_event
 * locks the queue's mutex) is kept until its context is freed: the kernel
 * makes ibv_destroy_srq wait for those acknowledgements instead.
 */
static int sr_destroy_srq(struct ibv_srq *srq)
{
	struct sr_srq *s = (struct sr_srq *)srq;
	pthread_mutex_lock(&g_mu);
	if (s->users > 0) {
		pthread_mutex_unlock(&g_mu);
		return EBUSY;
	}
	s->pd->users--;
	g_srqtab[srq->handle] = NULL;
	if (s->xrcd) {
		s->xrcd->users--;
		s->cq->users--;
		for (uint32_t i = 0; i < g_nqps; i++) /* no target keeps it as its last request's */
			if (g_qps[i] && g_qps[i]->srq == s)
				g_qps[i]->srq = NULL;
	}
	pthread_mutex_lock(&srq->mutex);
	int unacked = srq->events_completed != s->events;
	pthread_mutex_unlock(&srq->mutex);
	if (unacked) {
		s->zombie = s->ctx->zombies;
		s->ctx->zombies = s;
	}
	pthread_mutex_unlock(&g_mu);
	if (!unacked) {
		free(s->ring);
		free(s);
	}
	return 0;
}

static int sr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sr_srq *s = (struct sr_srq *)srq;
	int rc = 0;
	pthread_mutex_lock(&g_mu);
	for (; wr; wr = wr->next) {
		if (s->head - s->freed >= s->cap)
			rc = ENOMEM;
		else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > s->max_sge)
			rc = EINVAL;
		if (rc) {
			*bad = wr;
			break;
		}
		struct sr_rwqe *r = &s->ring[s->head % s->cap];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		s->head++;
	}
	kick();
	pthread_mutex_unlock(&g_mu);
	return rc;
}

/* ---- contexts and devices ---- */

static void sr_free_context(struct ibv_context *context)
{
	struct sr_ctx *c = ctx_of(context);
	int last;
	pthread_mutex_lock(&g_mu);
	last = --g_contexts == 0;
	if (last) {
		g_stop = 1;
		kick();
	}
	pthread_mutex_unlock(&g_mu);
	if (last) {
		pthread_join(g_nic, NULL);
		pthread_mutex_lock(&g_mu);
		g_stop = 0;
		pthread_mutex_unlock(&g_mu);
	}
	close(c->evw);
	for (struct sr_srq *s = c->zombies, *next; s; s = next) {
		next = s->zombie;
		free(s->ring);
		free(s);
	}
	verbs_uninit_context(&c->vctx);
	free(c);
}

static const struct sr_context_ops sr_ops = {
	.alloc_pd = sr_alloc_pd,
	.close_xrcd = sr_close_xrcd,
	.create_ah = sr_create_ah,
	.create_cq = sr_create_cq,
	.create_qp = sr_create_qp,
	.create_qp_ex = sr_create_qp_ex,
	.create_srq = sr_create_srq,
	.create_srq_ex = sr_create_srq_ex,
	.dealloc_pd = sr_dealloc_pd,
	.dereg_mr = sr_dereg_mr,
	.destroy_ah = sr_destroy_ah,
	.destroy_cq = sr_destroy_cq,
	.destroy_qp = sr_destroy_qp,
	.destroy_srq = sr_destroy_srq,
	.free_context = sr_free_context,
	.get_srq_num = sr_get_srq_num,
	.modify_qp = sr_modify_qp,
	.modify_srq = sr_modify_srq,
	.open_xrcd = sr_open_xrcd,
	.poll_cq = sr_poll_cq,
	.post_recv = sr_post_recv,
	.post_send = sr_post_send,
	.post_srq_recv = sr_post_srq_recv,
	.query_device_ex = sr_query_device_ex,
	.query_port = sr_query_port,
	.query_qp = sr_query_qp,
	.query_srq = sr_query_srq,
	.reg_mr = sr_reg_mr,
	.req_notify_cq = sr_req_notify_cq,
};

_Static_assert(sizeof(struct sr_context_ops) == SR_CONTEXT_OPS_COUNT * sizeof(void *),
	       "the operations table must have the library's 76 slots");

/* sr_abi_check: the library copied our operations into the public
 * context's slots; had an operation sat at another position in
 * sr_context_ops than in the library's table, a slot would differ. */
static int sr_abi_check(struct ibv_context *c)
{
	return (void *)c->ops._compat_alloc_pd == (void *)sr_alloc_pd &&
	       (void *)c->ops._compat_create_ah == (void *)sr_create_ah &&
	       (void *)c->ops._compat_create_cq == (void *)sr_create_cq &&
	       (void *)c->ops._compat_create_qp == (void *)sr_create_qp &&
	       (void *)c->ops._compat_dealloc_pd == (void *)sr_dealloc_pd &&
	       (void *)c->ops._compat_destroy_cq == (void *)sr_destroy_cq &&
	       (void *)c->ops._compat_destroy_qp == (void *)sr_destroy_qp &&
	       (void *)c->ops._compat_modify_qp == (void *)sr_modify_qp &&
	       (void *)c->ops._compat_query_qp == (void *)sr_query_qp &&
	       (void *)c->ops._compat_create_srq == (void *)sr_create_srq &&
	       (void *)c->ops._compat_modify_srq == (void *)sr_modify_srq &&
	       (void *)c->ops._compat_query_srq == (void *)sr_query_srq &&
	       (void *)c->ops._compat_destroy_srq == (void *)sr_destroy_srq &&
	       (void *)c->ops.post_srq_recv == (void *)sr_post_srq_recv &&
	       (void *)c->ops.poll_cq == (void *)sr_poll_cq && (void *)c->ops.post_send == (void *)sr_post_send &&
	       (void *)c->ops.post_recv == (void *)sr_post_recv &&
	       (void *)c->ops.req_notify_cq == (void *)sr_req_notify_cq &&
	       (void *)verbs_get_ctx(c)->open_xrcd == (void *)sr_open_xrcd &&
	       (void *)verbs_get_ctx(c)->close_xrcd == (void *)sr_close_xrcd &&
	       (void *)verbs_get_ctx(c)->create_srq_ex == (void *)sr_create_srq_ex &&
	       (void *)verbs_get_ctx(c)->get_srq_num == (void *)sr_get_srq_num &&
	       (void *)verbs_get_ctx(c)->create_qp_ex == (void *)sr_create_qp_ex;
}

static struct verbs_context *sr_alloc_context(struct ibv_device *device, int cmd_fd, void *private_data)
{
	(void)private_data;
	struct sr_dev *d = (struct sr_dev *)device;
	if (configure(d)) {
		close(cmd_fd);
		errno = ENODEV;
		return NULL;
	}
	struct sr_ctx *c = _verbs_init_and_alloc_context(device, cmd_fd, sizeof(*c), NULL, 0 /* RDMA_DRIVER_UNKNOWN */);
	if (!c)
		return NULL;
	c->dev = d;
	verbs_set_ops(&c->vctx, &sr_ops);
	if (!sr_abi_check(&c->vctx.context)) {
		fprintf(stderr, "softrdma: this libibverbs lays out its provider operations differently from rdma-core 44 "
				"(IBVERBS_PRIVATE_34); rebuild the device against this library's driver.h\n");
		verbs_uninit_context(&c->vctx);
		free(c);
		errno = EPROTO;
		return NULL;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK)) {
		verbs_uninit_context(&c->vctx);
		free(c);
		return NULL;
	}
	c->vctx.context.async_fd = p[0];
	c->evw = p[1];
	pthread_mutex_lock(&g_mu);
	if (g_contexts++ == 0) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&g_cv, &ca);
		pthread_condattr_destroy(&ca);
		if (pthread_create(&g_nic, NULL, nic, NULL)) {
			g_contexts--;
			pthread_mutex_unlock(&g_mu);
			close(p[1]);
			verbs_uninit_context(&c->vctx);
			free(c);
			errno = EAGAIN;
			return NULL;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return &c->vctx;
}

static struct verbs_device *sr_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	(void)sysfs_dev;
	struct sr_dev *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	pthread_mutex_init(&d->once, NULL);
	return &d->vdev;
}

static void sr_uninit_device(struct verbs_device *vdev)
{
	struct sr_dev *d = (struct sr_dev *)vdev;
	pthread_mutex_destroy(&d->once);
	free(d);
}

/* A device is ours when its sysfs node's device/modalias says so. */
static const struct sr_match_ent sr_match[] = {
	{ .u.modalias = "softrdma:*", .kind = SR_MATCH_MODALIAS },
	{ .kind = SR_MATCH_SENTINEL },
};

static const struct sr_device_ops sr_device_ops = {
	.name = "softrdma",
	.match_min_abi_version = 0,
	.match_max_abi_version = 0x7fffffff,
	.match_table = sr_match,
	.alloc_context = sr_alloc_context,
	.alloc_device = sr_alloc_device,
	.uninit_device = sr_uninit_device,
};

__attribute__((constructor)) static void sr_register(void) { verbs_register_driver_34(&sr_device_ops); }
