/* The toolchain: emitted C -> shared object through the system compiler.
 * The compile runs in a private temporary directory with fixed file names
 * and flags (no paths, no timestamps reach the output), so the same source
 * gives the same bytes. */
#include "cg_cpu_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FT_CG_MAX_SO = 256 << 20 }; /* bytes; a module is far smaller */

const char *const *ft_cg_cpu_isa_flags(const char *isa)
{
    static const char *const avx512[] = {"-march=x86-64-v4", "-mavx512vnni", "-mtune=generic", NULL};
    static const char *const avx2[] = {"-march=x86-64-v3", "-mtune=generic", NULL};
    static const char *const portable[] = {NULL};
    if (isa && !strcmp(isa, "avx512"))
        return avx512;
    if (isa && !strcmp(isa, "avx2"))
        return avx2;
    return portable;
}

FT_WARN_UNUSED static ft_status_t ft_cg_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return ft_status_make(FT_STATUS_IO, "codegen: cannot create %s: %s", path, strerror(errno));
    const size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len)
        return ft_status_make(FT_STATUS_IO, "codegen: cannot write %zu bytes to %s", len, path);
    return FT_OK;
}

/* Reads at most max bytes of path into a malloc'd buffer (+ NUL). */
FT_WARN_UNUSED static ft_status_t ft_cg_read_file(const char *path, size_t max, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ft_status_make(FT_STATUS_IO, "codegen: cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < 0 || (uint64_t)sb.st_size > max) {
        fclose(f);
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "codegen: %s is larger than %zu bytes", path, max);
    }
    uint8_t *buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        fclose(f);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "codegen: %lld bytes for %s", (long long)sb.st_size, path);
    }
    const size_t n = fread(buf, 1, (size_t)sb.st_size, f);
    fclose(f);
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return FT_OK;
}

/* The first "ft_kernels.c:L:C: error: ..." line of the compiler's output,
 * with the kernel it falls in. */
FT_WARN_UNUSED static ft_status_t ft_cg_compile_error(const char *source, const char *log, int exit_code)
{
    const char *p = strstr(log, FT_CG_SOURCE_NAME ":");
    for (; p; p = strstr(p + 1, FT_CG_SOURCE_NAME ":")) {
        unsigned line = 0, col = 0;
        int used = 0;
        if (sscanf(p, FT_CG_SOURCE_NAME ":%u:%u: error: %n", &line, &col, &used) == 2 && used > 0) {
            const char *msg = p + used;
            const char *end = strchr(msg, '\n');
            char kernel[128];
            ft_cg_cpu_function_at(source, line, kernel, sizeof(kernel));
            return ft_status_make(FT_STATUS_INTERNAL, "%s:%u:%u: in kernel '%s': error: %.*s",
                                  FT_CG_SOURCE_NAME, line, col, kernel,
                                  (int)(end ? (size_t)(end - msg) : strlen(msg)), msg);
        }
    }
    return ft_status_make(FT_STATUS_INTERNAL, "codegen: the C compiler failed (exit %d): %.400s", exit_code,
                          log);
}

/* Runs the compiler in dir; returns its exit code, or -1 when it could not
 * be started or was killed. */
static int ft_cg_run_cc(const char *dir, const char *isa)
{
    const char *cc = getenv("FT_CC");
    if (!cc || !*cc)
        cc = "cc";
    const char *args[32];
    int n = 0;
    args[n++] = cc;
    args[n++] = "-std=c11";
    args[n++] = "-O3";
    for (const char *const *fl = ft_cg_cpu_isa_flags(isa); *fl; fl++)
        args[n++] = *fl;
    const char *fixed[] = {"-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wno-unused-function",
                           "-Wl,--build-id=none", "-o", "ft_kernels.so", FT_CG_SOURCE_NAME, "-lm", NULL};
    for (int i = 0; fixed[i]; i++)
        args[n++] = fixed[i];
    args[n] = NULL;
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* child: only async-signal-safe calls until exec */
        if (chdir(dir) != 0)
            _exit(126);
        const int fd = open("cc.log", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execvp(cc, (char *const *)args);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

ft_status_t ft_cg_cpu_build(const char *source, const char *isa, uint8_t **out_so, size_t *out_len)
{
    *out_so = NULL;
    *out_len = 0;
    if (!source || !ft_cg_cpu_isa_valid(isa))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "codegen: build needs a source and a known ISA");
    const char *tmp = getenv("TMPDIR");
    char dir[512], src_path[600], so_path[600], log_path[600];
    snprintf(dir, sizeof(dir), "%s/ft-cg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return ft_status_make(FT_STATUS_IO, "codegen: cannot create a directory %s: %s", dir, strerror(errno));
    snprintf(src_path, sizeof(src_path), "%s/" FT_CG_SOURCE_NAME, dir);
    snprintf(so_path, sizeof(so_path), "%s/ft_kernels.so", dir);
    snprintf(log_path, sizeof(log_path), "%s/cc.log", dir);
    ft_status_t st = ft_cg_write_file(src_path, source, strlen(source));
    if (st)
        goto out_dir;
    const int rc = ft_cg_run_cc(dir, isa);
    if (rc != 0) {
        uint8_t *log = NULL;
        size_t log_len = 0;
        ft_status_t lst = ft_cg_read_file(log_path, 1 << 20, &log, &log_len);
        ft_status_free(lst);
        if (rc == 127 || rc == -1)
            st = ft_status_make(FT_STATUS_UNAVAILABLE, "codegen: could not run the C compiler (%s): exit %d",
                                getenv("FT_CC") ? getenv("FT_CC") : "cc", rc);
        else
            st = ft_cg_compile_error(source, log ? (const char *)log : "", rc);
        free(log);
        goto out_dir;
    }
    st = ft_cg_read_file(so_path, FT_CG_MAX_SO, out_so, out_len);
out_dir:
    unlink(src_path);
    unlink(so_path);
    unlink(log_path);
    rmdir(dir);
    return st;
}
