/* An rdma-core DevX program written only against <infiniband/mlx5dv.h>:
 * open the device, read the virtio caps, register umems, create a virtq,
 * move it to RDY, query it asynchronously, check an illegal transition.
 * Built twice: against the real libibverbs/libmlx5 (run with
 * LD_PRELOAD=libmlx5emu.so) and linked directly to libmlx5emu.so.
 * PRM bit offsets: tests/unit/prm/reference/prm-virtq-fields.tsv. Exit 0 = pass. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#define CHECK(c, ...)                                              \
    do {                                                           \
        if (!(c)) {                                                \
            fprintf(stderr, "shim_client: %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                          \
            fprintf(stderr, "\n");                                 \
            exit(1);                                               \
        }                                                          \
    } while (0)

/* Big-endian PRM bit field access (bit 0 = MSB of the first dword). */
static void set_bits(uint8_t *buf, unsigned off, unsigned width, uint64_t v)
{
    for (unsigned i = 0; i < width; i++) {
        unsigned bit = off + i;
        uint8_t mask = (uint8_t)(0x80u >> (bit % 8));
        if ((v >> (width - 1 - i)) & 1)
            buf[bit / 8] |= mask;
        else
            buf[bit / 8] &= (uint8_t)~mask;
    }
}

static uint64_t get_bits(const uint8_t *buf, unsigned off, unsigned width)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        unsigned bit = off + i;
        v = (v << 1) | ((buf[bit / 8] >> (7 - bit % 8)) & 1);
    }
    return v;
}

enum { HDR = 16, OBJ = 192, CAP_OUT = 16 + 4096 };
enum { OBJ_TYPE_VIRTQ = 0xd };

static void hdr(uint8_t *in, uint16_t opcode, uint32_t obj_id)
{
    set_bits(in, 0, 16, opcode);
    set_bits(in, 48, 16, OBJ_TYPE_VIRTQ);
    set_bits(in, 64, 32, obj_id);
}

int main(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    CHECK(list && n >= 1, "no device (errno %d)", errno);
    printf("device %s\n", ibv_get_device_name(list[0]));

    struct mlx5dv_context_attr attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};
    struct ibv_context *ctx = mlx5dv_open_device(list[0], &attr);
    CHECK(ctx, "mlx5dv_open_device: errno %d", errno);

    /* QUERY_HCA_CAP, virtio emulation caps (cap type 0x13, current). */
    uint8_t cin[16] = {0}, cout[CAP_OUT];
    set_bits(cin, 0, 16, 0x100);
    set_bits(cin, 48, 16, (0x13 << 1) | 1);
    CHECK(mlx5dv_devx_general_cmd(ctx, cin, sizeof cin, cout, sizeof cout) == 0, "caps");
    const uint8_t *cap = cout + 16;
    uint32_t max_q = (uint32_t)get_bits(cap, 136, 24);
    CHECK(max_q > 0, "max_num_virtio_queues 0");
    printf("max_num_virtio_queues %u freeze_to_rdy %u\n", max_q, (unsigned)get_bits(cap, 212, 1));

    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    CHECK(pd, "ibv_alloc_pd: errno %d", errno);
    struct mlx5dv_pd dvpd;
    struct mlx5dv_obj dvobj = {.pd = {.in = pd, .out = &dvpd}};
    CHECK(mlx5dv_init_obj(&dvobj, MLX5DV_OBJ_PD) == 0, "init_obj");

    const uint16_t qsize = 256;
    struct mlx5dv_devx_umem *umem[3];
    void *mem[3];
    uint32_t usize[3];
    for (int i = 0; i < 3; i++) {
        uint32_t a = (uint32_t)get_bits(cap, 256 + 64 * i, 32);
        uint32_t b = (uint32_t)get_bits(cap, 288 + 64 * i, 32);
        usize[i] = a * qsize + b;
        mem[i] = calloc(1, usize[i]);
        umem[i] = mlx5dv_devx_umem_reg(ctx, mem[i], usize[i], IBV_ACCESS_LOCAL_WRITE);
        CHECK(umem[i], "umem_reg %d: errno %d", i, errno);
    }

    /* CREATE_GENERAL_OBJECT(VIRTIO_NET_Q). Object bits are relative to byte 16. */
    uint8_t in[HDR + OBJ] = {0}, out[HDR + OBJ] = {0};
    uint8_t *obj = in + HDR;
    hdr(in, 0xa00, 0);
    set_bits(obj, 528, 16, 0);         /* queue_index */
    set_bits(obj, 545, 1, 1);          /* virtio_version_1_0 */
    set_bits(obj, 592, 16, qsize);     /* queue_size */
    set_bits(obj, 1320, 24, dvpd.pdn); /* pd */
    for (int i = 0; i < 3; i++) {
        set_bits(obj, 896 + 128 * i, 32, umem[i]->umem_id);
        set_bits(obj, 928 + 128 * i, 32, usize[i]);
    }
    struct mlx5dv_devx_obj *vq = mlx5dv_devx_obj_create(ctx, in, sizeof in, out, HDR);
    CHECK(vq, "create virtq: errno %d status 0x%x syndrome 0x%x", errno,
          (unsigned)get_bits(out, 0, 8), (unsigned)get_bits(out, 32, 32));
    uint32_t id = (uint32_t)get_bits(out, 64, 32);

    /* MODIFY: state INIT -> RDY. */
    memset(in, 0, sizeof in);
    hdr(in, 0xa01, id);
    set_bits(obj, 0, 64, 1);   /* modify_field_select STATE */
    set_bits(obj, 156, 4, 1);  /* state RDY */
    CHECK(mlx5dv_devx_obj_modify(vq, in, sizeof in, out, HDR) == 0, "modify to RDY");

    /* Async QUERY on a command-completion fd. */
    struct mlx5dv_devx_cmd_comp *cc = mlx5dv_devx_create_cmd_comp(ctx);
    CHECK(cc, "create_cmd_comp: errno %d", errno);
    uint8_t qin[HDR] = {0};
    hdr(qin, 0xa02, id);
    CHECK(mlx5dv_devx_obj_query_async(vq, qin, sizeof qin, HDR + OBJ, 42, cc) == 0, "query_async");
    struct pollfd p = {.fd = cc->fd, .events = POLLIN};
    CHECK(poll(&p, 1, 10000) == 1, "no completion on the cmd_comp fd");
    union {
        struct mlx5dv_devx_async_cmd_hdr h;
        uint8_t raw[sizeof(struct mlx5dv_devx_async_cmd_hdr) + HDR + OBJ];
    } resp;
    CHECK(mlx5dv_devx_get_async_cmd_comp(cc, &resp.h, sizeof resp) == 0, "get_async_cmd_comp");
    CHECK(resp.h.wr_id == 42, "wr_id %llu", (unsigned long long)resp.h.wr_id);
    CHECK(get_bits(resp.h.out_data, 0, 8) == 0, "query status");
    CHECK(get_bits(resp.h.out_data + HDR, 156, 4) == 1, "queried state not RDY");

    /* RDY -> INIT is illegal: EREMOTEIO, BAD_RES_STATE_ERR (0x9) in out. */
    set_bits(obj, 156, 4, 0);
    int rc = mlx5dv_devx_obj_modify(vq, in, sizeof in, out, HDR);
    CHECK(rc == EREMOTEIO && get_bits(out, 0, 8) == 0x9, "illegal transition: rc %d status 0x%x",
          rc, (unsigned)get_bits(out, 0, 8));

    mlx5dv_devx_destroy_cmd_comp(cc);
    CHECK(mlx5dv_devx_obj_destroy(vq) == 0, "destroy virtq");
    for (int i = 0; i < 3; i++) {
        CHECK(mlx5dv_devx_umem_dereg(umem[i]) == 0, "umem_dereg");
        free(mem[i]);
    }
    uint32_t eqn = 0;  /* CREATE_CQ's c_eqn (MLX5_1.7) */
    CHECK(mlx5dv_devx_query_eqn(ctx, 0, &eqn) == 0 && eqn != 0, "query_eqn: errno %d", errno);
    CHECK(mlx5dv_devx_query_eqn(ctx, 1000, &eqn) == EINVAL, "query_eqn of a bad vector");
    CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
    CHECK(ibv_close_device(ctx) == 0, "close");
    ibv_free_device_list(list);
    printf("shim_client: ok\n");
    return 0;
}
