/* Loading a generated kernel module (see cpu_module.h). */
#include "cpu_module.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* FT_KABI_FMT_* are ft_dtype_t's numbers: runtime/format/dtype_mirrors.c
 * _Static_asserts them. */

struct ft_cpu_module {
    void *handle;
    int fd; /* the memfd (or temporary file) the module was loaded from, open while it is */
    ft_kabi_table_t table;
};

/* The host services the module's fused kernels call back into. */
static void ft_cpu_module_prepare(uint32_t wformat, const float *x, size_t ldx, uint32_t n_rows,
                                  uint32_t cols, void *out)
{
    ft_cpu_act_prepare((ft_dtype_t)wformat, x, ldx, n_rows, cols, out);
}

static const ft_kabi_host_t ft_cpu_module_host = {FT_KABI_VERSION, ft_cpu_module_prepare};

static int ft_cpu_isa_ok(const char *isa)
{
    if (!strcmp(isa, "portable"))
        return 1;
#if defined(__x86_64__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(isa, "avx2"))
        return avx2;
    if (!strcmp(isa, "avx512"))
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#endif
    return 0;
}

/* dlopen of the bytes: a memfd when the kernel has them, else a private
 * temporary file, unlinked at once. *out_fd stays open while the module is
 * loaded: glibc's dlopen returns an already loaded object whose name
 * matches, and the name is /proc/self/fd/N, so were N closed and reused by
 * the next engine's module, that engine would get this module's kernels. */
FT_WARN_UNUSED static ft_status_t ft_cpu_module_dlopen(const uint8_t *so, size_t len, void **out,
                                                       int *out_fd)
{
    char path[512];
    /* FT_KERNEL_MODULE_DIR: a developer's switch for profilers (perf cannot
     * read symbols from a memfd): the module is written to a file in that
     * directory, named by the process and a count of the modules it loaded
     * (a distinct name per module, as dlopen needs), and left there. */
    const char *keep = getenv("FT_KERNEL_MODULE_DIR");
    int fd = -1, tmp_file = 0;
    if (keep && *keep) {
        static unsigned n_kept;
        const unsigned k = __atomic_fetch_add(&n_kept, 1u, __ATOMIC_RELAXED);
        snprintf(path, sizeof(path), "%s/ft-kernels-%ld-%u.so", keep, (long)getpid(), k);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return ft_status_make(FT_STATUS_IO, "cpu module: cannot create %s (FT_KERNEL_MODULE_DIR): %s",
                                  path, strerror(errno));
    } else if ((fd = memfd_create("ft_kernels", MFD_CLOEXEC)) >= 0) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(path, sizeof(path), "%s/ft-kernels-XXXXXX", t && *t ? t : "/tmp");
        fd = mkstemp(path);
        tmp_file = 1;
        if (fd < 0)
            return ft_status_make(FT_STATUS_IO, "cpu module: no memfd and cannot create %s: %s", path,
                                  strerror(errno));
    }
    size_t done = 0;
    while (done < len) {
        const ssize_t w = write(fd, so + done, len - done);
        if (w <= 0 && errno != EINTR)
            break;
        done += w > 0 ? (size_t)w : 0;
    }
    ft_status_t st = FT_OK;
    if (done != len) {
        st = ft_status_make(FT_STATUS_IO, "cpu module: wrote %zu of %zu bytes to %s", done, len, path);
    } else {
        *out = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!*out) {
            const char *e = dlerror();
            st = ft_status_make(FT_STATUS_FORMAT, "cpu module (%zu bytes): dlopen failed: %s", len,
                                e ? e : "unknown error");
        }
    }
    if (tmp_file)
        unlink(path);
    if (st)
        close(fd);
    else
        *out_fd = fd;
    return st;
}

ft_status_t ft_cpu_module_load(const uint8_t *so, size_t len, ft_cpu_module_t **out)
{
    *out = NULL;
    static const uint8_t elf[4] = {0x7f, 'E', 'L', 'F'};
    if (!so || len < 64 || memcmp(so, elf, 4) != 0)
        return ft_status_make(FT_STATUS_FORMAT, "cpu module: %zu bytes are not an ELF shared object (byte 0)",
                              len);
    void *h = NULL;
    int fd = -1;
    ft_status_t st = ft_cpu_module_dlopen(so, len, &h, &fd);
    if (st)
        return st;
    const uint32_t *abi = dlsym(h, FT_KABI_ABI_SYMBOL);
    const char *isa = dlsym(h, FT_KABI_ISA_SYMBOL);
    ft_kabi_entry_fn entry;
    void *sym = dlsym(h, FT_KABI_ENTRY_SYMBOL);
    memcpy(&entry, &sym, sizeof(entry));
    if (!abi || !isa || !entry) {
        st = ft_status_make(FT_STATUS_FORMAT, "cpu module: symbol %s, %s or %s missing", FT_KABI_ABI_SYMBOL,
                            FT_KABI_ISA_SYMBOL, FT_KABI_ENTRY_SYMBOL);
        goto out_close;
    }
    if (*abi != FT_KABI_VERSION) {
        st = ft_status_make(FT_STATUS_MISMATCH, "cpu module: kernel ABI version %u, this runtime has %u",
                            *abi, FT_KABI_VERSION);
        goto out_close;
    }
    if (strnlen(isa, 16) == 16 || !ft_cpu_isa_ok(isa)) {
        st = ft_status_make(FT_STATUS_UNSUPPORTED, "cpu module: built for ISA '%.16s', which this CPU lacks", isa);
        goto out_close;
    }
    ft_cpu_module_t *m = calloc(1, sizeof(*m));
    if (!m) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "cpu module: %zu bytes", sizeof(*m));
        goto out_close;
    }
    if (entry(&ft_cpu_module_host, &m->table) != 0 || m->table.abi_version != FT_KABI_VERSION ||
        (m->table.n_entries && !m->table.entries)) {
        st = ft_status_make(FT_STATUS_MISMATCH, "cpu module: entry refused ABI %u (module has %u)",
                            FT_KABI_VERSION, m->table.abi_version);
        free(m);
        goto out_close;
    }
    m->handle = h;
    m->fd = fd;
    *out = m;
    return FT_OK;
out_close:
    dlclose(h);
    close(fd);
    return st;
}

void ft_cpu_module_free(ft_cpu_module_t *mod)
{
    if (!mod)
        return;
    dlclose(mod->handle);
    close(mod->fd);
    free(mod);
}

const char *ft_cpu_module_isa(const ft_cpu_module_t *mod)
{
    return mod ? mod->table.isa : "reference";
}

uint32_t ft_cpu_module_count(const ft_cpu_module_t *mod)
{
    return mod ? mod->table.n_entries : 0;
}

static void (*ft_cpu_module_find(const ft_cpu_module_t *mod, uint32_t op, uint32_t fmt, uint32_t aux,
                                 uint32_t rows, uint32_t cols))(void)
{
    for (uint32_t i = 0; mod && i < mod->table.n_entries; i++) {
        const ft_kabi_entry_t *e = &mod->table.entries[i];
        if (e->op == op && e->format == fmt && e->format_aux == aux && e->rows == rows && e->cols == cols)
            return e->fn;
    }
    return NULL;
}

ft_kabi_matmul_fn ft_cpu_module_find_matmul(const ft_cpu_module_t *mod, uint32_t wtype,
                                            uint32_t rows, uint32_t cols)
{
    return (ft_kabi_matmul_fn)ft_cpu_module_find(mod, FT_KABI_OP_MATMUL, (uint32_t)wtype, 0, rows, cols);
}

ft_kabi_expert_fn ft_cpu_module_find_expert(const ft_cpu_module_t *mod, uint32_t gate_up,
                                            uint32_t down, uint32_t ffn, uint32_t d_model)
{
    return (ft_kabi_expert_fn)ft_cpu_module_find(mod, FT_KABI_OP_EXPERT, (uint32_t)gate_up,
                                                 (uint32_t)down, ffn, d_model);
}

ft_kabi_norm_prepare_fn ft_cpu_module_find_norm_prepare(const ft_cpu_module_t *mod, ft_dtype_t wtype,
                                                        uint32_t d)
{
    return (ft_kabi_norm_prepare_fn)ft_cpu_module_find(mod, FT_KABI_OP_NORM_PREPARE, (uint32_t)wtype, 0, d, d);
}

ft_kabi_router_fn ft_cpu_module_find_router(const ft_cpu_module_t *mod, ft_dtype_t wtype,
                                            uint32_t n_experts, uint32_t d_model)
{
    return (ft_kabi_router_fn)ft_cpu_module_find(mod, FT_KABI_OP_ROUTER, (uint32_t)wtype, 0, n_experts, d_model);
}

ft_kabi_attn_fn ft_cpu_module_find_attn(const ft_cpu_module_t *mod, uint32_t group, uint32_t head_dim)
{
    return (ft_kabi_attn_fn)ft_cpu_module_find(mod, FT_KABI_OP_ATTN, FT_KABI_FMT_F32, 0, group, head_dim);
}

ft_kabi_attn_f16_fn ft_cpu_module_find_attn_f16(const ft_cpu_module_t *mod, uint32_t group, uint32_t head_dim)
{
    return (ft_kabi_attn_f16_fn)ft_cpu_module_find(mod, FT_KABI_OP_ATTN, FT_KABI_FMT_F16, 0, group, head_dim);
}

ft_kabi_deltanet_fn ft_cpu_module_find_deltanet(const ft_cpu_module_t *mod, uint32_t n_v_heads,
                                                uint32_t n_k_heads, int tiled, uint32_t head_dim)
{
    if (n_k_heads == 0 || n_k_heads >= FT_KABI_DELTANET_TILED)
        return NULL;
    return (ft_kabi_deltanet_fn)ft_cpu_module_find(mod, FT_KABI_OP_DELTANET, FT_KABI_FMT_F32,
                                                   n_k_heads | (tiled ? FT_KABI_DELTANET_TILED : 0),
                                                   n_v_heads, head_dim);
}

ft_kabi_mla_fn ft_cpu_module_find_mla(const ft_cpu_module_t *mod, uint32_t nope, uint32_t rope,
                                      uint32_t kv_lora, uint32_t v)
{
    if (rope == 0 || rope > 0xffffu || v == 0 || v > 0xffffu)
        return NULL;
    return (ft_kabi_mla_fn)ft_cpu_module_find(mod, FT_KABI_OP_MLA, FT_KABI_FMT_F32, FT_KABI_MLA_AUX(rope, v),
                                              nope, kv_lora);
}

void ft_cpu_module_matmul(const ft_cpu_module_t *mod, ft_dtype_t wtype, const void *w,
                          size_t w_row_bytes, const void *xp, uint32_t n_tok, uint32_t rows,
                          uint32_t cols, uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    const ft_kabi_matmul_fn fn = ft_cpu_module_find_matmul(mod, wtype, rows, cols);
    if (fn)
        fn(w, w_row_bytes, xp, n_tok, r0, r1, y, ldy);
    else
        ft_cpu_matmul(wtype, w, w_row_bytes, xp, n_tok, cols, r0, r1, y, ldy);
}
