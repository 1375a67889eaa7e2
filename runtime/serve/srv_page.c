/* The chat page at "/" (srv_page.h): three static files, built into the
 * binary from runtime/serve/page/ by runtime/CMakeLists.txt. */
#include "srv_page.h"

#include <stdlib.h>
#include <string.h>

#include "srv_format.h"

extern const char ft_srv_page_chat_html[], ft_srv_page_chat_js[], ft_srv_page_chat_css[];

/* No inline script or style, nothing from another origin, no framing, no
 * form posts, no <base>: the page's own chat.js and chat.css, and fetch()
 * to this server's API. */
#define FT_SRV_PAGE_CSP                                                                           \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "             \
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct {
    const char *path;
    const char *body;
    const char *type;
} ft_srv_page_files[] = {
    {"/", ft_srv_page_chat_html, "text/html; charset=utf-8"},
    {"/chat.js", ft_srv_page_chat_js, "text/javascript; charset=utf-8"},
    {"/chat.css", ft_srv_page_chat_css, "text/css; charset=utf-8"},
};
#define FT_SRV_PAGE_N_FILES (sizeof(ft_srv_page_files) / sizeof(ft_srv_page_files[0]))

static int ft_srv_page_find(const char *url)
{
    for (size_t i = 0; i < FT_SRV_PAGE_N_FILES; i++)
        if (!strcmp(url, ft_srv_page_files[i].path)) return (int)i;
    return -1;
}

int ft_srv_page_path(const char *url)
{
    return url && ft_srv_page_find(url) >= 0;
}

enum MHD_Result ft_srv_page_reply(struct MHD_Connection *conn, const char *url,
                                  const char *method)
{
    const int i = ft_srv_page_find(url);
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    struct MHD_Response *r;
    unsigned status;
    if (i < 0 || !get) {
        ft_srv_error_t err;
        ft_srv_error_set(&err, 405, "invalid_request_error", "", "%s takes GET or HEAD, not %.40s",
                         url, method);
        char *body = ft_srv_error_body(FT_SRV_OPENAI, &err);
        if (!body) return MHD_NO;
        r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            free(body);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "application/json");
        MHD_add_response_header(r, "Allow", "GET, HEAD");
        status = 405;
    } else {
        const char *body = ft_srv_page_files[i].body;
        r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, "Content-Type", ft_srv_page_files[i].type);
        MHD_add_response_header(r, "Content-Security-Policy", FT_SRV_PAGE_CSP);
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        status = MHD_HTTP_OK;
    }
    const enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}
