/*
 * shim_dc.h: the C side of Dynamically Connected queue pairs (build tag
 * ibverbs), on top of shim.h. DC is an extension of the mlx5 provider
 * (ConnectX-4 and later), reached through mlx5dv: a DCI or DCT is created
 * with mlx5dv_create_qp(3) as an IBV_QPT_DRIVER queue pair, and a DCI's
 * requests are posted with the extended post interface (ibv_wr_post(3)),
 * each naming its target with mlx5dv_wr_set_dc_addr(3). Only files that
 * use DC include this header; the package links libmlx5 for them.
 *
 * mlx5dv may be called for a device only when mlx5dv_is_supported(3) says
 * the mlx5 provider drives it: the backend asks once, when it opens the
 * device, and refuses DC queue pairs on any other device before reaching
 * this code.
 */
#ifndef RDMASHUFFLE_SHIM_DC_H
#define RDMASHUFFLE_SHIM_DC_H

#include "shim.h"
#include <infiniband/mlx5dv.h>

/* rs_is_mlx5: 1 when the mlx5 provider drives dev (mlx5dv is usable). */
static int rs_is_mlx5(struct ibv_device *dev)
{
	return mlx5dv_is_supported(dev) ? 1 : 0;
}

/* The operations a DCI is created for: the contract's send opcodes. */
#define RS_DCI_SEND_OPS                                                                                 \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |               \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ)

/*
 * rs_create_dci creates a DC initiator of pd completing in cq, with a send
 * queue of max_send_wr requests of one SGE and max_inline bytes of inline
 * data, set up for the extended post interface (RS_DCI_SEND_OPS). It has
 * no receive queue; cq is also given as its receive CQ, which verbs
 * requires of every queue pair of this kind. caps_out receives the granted
 * caps. NULL with errno set on failure.
 */
static struct ibv_qp *rs_create_dci(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				    uint32_t max_send_wr, uint32_t max_inline, struct ibv_qp_cap *caps_out)
{
	struct ibv_qp_init_attr_ex attr;
	struct mlx5dv_qp_init_attr dv;
	struct ibv_qp *qp;

	memset(&attr, 0, sizeof(attr));
	memset(&dv, 0, sizeof(dv));
	attr.qp_type = IBV_QPT_DRIVER;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	attr.pd = pd;
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = max_send_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_inline_data = max_inline;
	attr.send_ops_flags = RS_DCI_SEND_OPS;
	dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
	qp = mlx5dv_create_qp(ctx, &attr, &dv);
	if (qp)
		*caps_out = attr.cap;
	return qp;
}

/*
 * rs_create_dct creates a DC target of pd on srq, its receives completing
 * in cq, answering only requests that carry key. mlx5 creates it in the
 * device when it is moved to RTR, which gives it its number (qp_num).
 * NULL with errno set on failure.
 */
static struct ibv_qp *rs_create_dct(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
				    struct ibv_srq *srq, uint64_t key)
{
	struct ibv_qp_init_attr_ex attr;
	struct mlx5dv_qp_init_attr dv;

	memset(&attr, 0, sizeof(attr));
	memset(&dv, 0, sizeof(dv));
	attr.qp_type = IBV_QPT_DRIVER;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = pd;
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.srq = srq;
	dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	dv.dc_init_attr.dct_access_key = key;
	return mlx5dv_create_qp(ctx, &attr, &dv);
}

/*
 * rs_dc_post_handles finds a DCI's extended post interface (ibv_qp_ex) and
 * its mlx5 part (mlx5dv_qp_ex). 0, or EOPNOTSUPP when either is missing.
 */
static int rs_dc_post_handles(struct ibv_qp *qp, struct ibv_qp_ex **qpx, struct mlx5dv_qp_ex **mqpx)
{
	*qpx = ibv_qp_to_qp_ex(qp);
	if (!*qpx)
		return EOPNOTSUPP;
	*mqpx = mlx5dv_qp_ex_from_ibv_qp_ex(*qpx);
	if (!*mqpx)
		return EOPNOTSUPP;
	return 0;
}

/*
 * rs_post_send_dc posts n requests to a DCI in one critical section of the
 * extended post interface: per request its identifier and flags, the
 * operation (with its remote address and key, or its immediate data in
 * network order), its target (address handle, DCT number, DC key) and its
 * data (one SGE, none for a zero-length request, or inline bytes). It
 * returns n, or errno << 32 when ibv_wr_complete fails: the provider then
 * discards the whole batch, so the index part is 0.
 */
static int64_t rs_post_send_dc(struct ibv_qp_ex *qpx, struct mlx5dv_qp_ex *mqpx, const rs_send *in, int n)
{
	int rc;

	ibv_wr_start(qpx);
	for (int i = 0; i < n; i++) {
		const rs_send *s = &in[i];
		qpx->wr_id = s->wr_id;
		/* Inline is a setter of this interface, not a flag. */
		qpx->wr_flags = s->send_flags & ~(uint32_t)IBV_SEND_INLINE;
		switch (s->opcode) {
		case IBV_WR_SEND:
			ibv_wr_send(qpx);
			break;
		case IBV_WR_SEND_WITH_IMM:
			ibv_wr_send_imm(qpx, htonl(s->imm));
			break;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(qpx, s->rkey, s->remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(qpx, s->rkey, s->remote_addr, htonl(s->imm));
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(qpx, s->rkey, s->remote_addr);
			break;
		default:
			ibv_wr_abort(qpx);
			return (int64_t)EINVAL << 32;
		}
		mlx5dv_wr_set_dc_addr(mqpx, s->ah, s->remote_qpn, s->dc_key);
		if (s->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(qpx, (void *)(uintptr_t)s->addr, s->length);
		else if (s->length)
			ibv_wr_set_sge(qpx, s->lkey, s->addr, s->length);
		else /* as rs_build_send: no SGE rather than one of length 0 */
			ibv_wr_set_sge_list(qpx, 0, NULL);
	}
	rc = ibv_wr_complete(qpx);
	if (rc == 0)
		return n;
	return (int64_t)rc << 32;
}

#endif
