/*
 * provider_abi.h: the part of libibverbs' private provider interface that
 * softrdma implements, declared here because Debian's libibverbs-dev ships
 * only the public headers.
 *
 * Target: rdma-core 44 (Debian 12's libibverbs1 44.0), whose private symbols
 * carry the version IBVERBS_PRIVATE_34 (see `objdump -T libibverbs.so.1`).
 * The layouts below follow libibverbs/driver.h of that release (tag v44.0 of
 * github.com/linux-rdma/rdma-core). libibverbs checks none of them, so a
 * mismatch would corrupt memory. Two guards: the provider registers through
 * the versioned symbol verbs_register_driver_34 (a library with another
 * private ABI does not export it, the provider fails to load, and the device
 * list is empty), and every new context checks that the library copied the
 * provider's operations into the public context's slots (sr_abi_check in
 * softrdma.c), which would fail if an operation sat at another position.
 *
 * Operations the device does not implement are declared as plain function
 * pointers: every member is one pointer, so the layout only depends on their
 * number and order (76 members, sorted by name, as in the release).
 */
#ifndef SOFTRDMA_PROVIDER_ABI_H
#define SOFTRDMA_PROVIDER_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define SOFTRDMA_PRIVATE_ABI 34

typedef void (*sr_unused_op)(void);

/* A node of libibverbs' intrusive lists (ccan/list). */
struct sr_list_node {
	struct sr_list_node *next, *prev;
};

/* One entry of a provider's match table. */
enum { SR_MATCH_SENTINEL = 0, SR_MATCH_PCI = 1, SR_MATCH_MODALIAS = 2, SR_MATCH_DRIVER_ID = 3 };

struct sr_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

struct verbs_sysfs_dev; /* opaque here: the provider reads the device's own files */
struct verbs_device;

/* What a provider gives the library: matching and device/context creation. */
struct sr_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct sr_match_ent *match_table;
	const struct sr_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* The library's per-device record; the provider allocates it (first member
 * of its own device struct) and the library fills ops, refcount, entry and
 * sysfs after alloc_device returns. */
struct verbs_device {
	struct ibv_device device;
	const struct sr_device_ops *ops;
	atomic_int refcount;
	struct sr_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* A memory region as the library sees it: ibv_dereg_mr reads mr_type and
 * access behind the public struct. */
enum { SR_MR_TYPE_MR = 0 };

struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;
	int access;
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* Every operation a provider may supply, in the library's order. */
struct sr_context_ops {
	sr_unused_op advise_mr;
	sr_unused_op alloc_dm;
	sr_unused_op alloc_mw;
	sr_unused_op alloc_null_mr;
	sr_unused_op alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	sr_unused_op alloc_td;
	void (*async_event)(struct ibv_context *context, struct ibv_async_event *event);
	sr_unused_op attach_counters_point_flow;
	sr_unused_op attach_mcast;
	sr_unused_op bind_mw;
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	sr_unused_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
				    int comp_vector);
	sr_unused_op create_cq_ex;
	sr_unused_op create_flow;
	sr_unused_op create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	sr_unused_op create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context, struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	sr_unused_op create_wq;
	sr_unused_op dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	sr_unused_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	sr_unused_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	sr_unused_op destroy_flow;
	sr_unused_op destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	sr_unused_op destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	sr_unused_op destroy_wq;
	sr_unused_op detach_mcast;
	void (*free_context)(struct ibv_context *context);
	sr_unused_op free_dm;
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	sr_unused_op import_dm;
	sr_unused_op import_mr;
	sr_unused_op import_pd;
	sr_unused_op modify_cq;
	sr_unused_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	sr_unused_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
	sr_unused_op modify_wq;
	sr_unused_op open_qp;
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context, struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	sr_unused_op post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr, struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	sr_unused_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	sr_unused_op query_qp_data_in_order;
	sr_unused_op query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	sr_unused_op read_counters;
	sr_unused_op reg_dm_mr;
	sr_unused_op reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	sr_unused_op rereg_mr;
	sr_unused_op resize_cq;
	sr_unused_op set_ece;
	sr_unused_op unimport_dm;
	sr_unused_op unimport_mr;
	sr_unused_op unimport_pd;
};

#define SR_CONTEXT_OPS_COUNT 76

/* The library's entry points for providers (version IBVERBS_PRIVATE_34). */
void verbs_register_driver_34(const struct sr_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx, const struct sr_context_ops *ops);

#endif
