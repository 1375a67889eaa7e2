/* The chat page of ft serve (runtime/serve/page/: chat.html, chat.js,
 * chat.css, compiled in as strings at build time): served at "/" with
 * its script and style beside it, to anyone who passes the Host check
 * (the page holds no secret; the API calls it makes carry the key the
 * user types in). */
#ifndef FT_SERVE_SRV_PAGE_H
#define FT_SERVE_SRV_PAGE_H

#include <microhttpd.h>

/* 1 when url is one of the page's paths: "/", "/chat.js", "/chat.css". */
int ft_srv_page_path(const char *url);

/* Answers a request for one of the page's paths: 200 with the file, its
 * Content-Type and a Content-Security-Policy that allows nothing but this
 * origin's script, style and API, on GET and HEAD (MHD sends no body for
 * HEAD); 405 with an Allow header for any other method. */
enum MHD_Result ft_srv_page_reply(struct MHD_Connection *conn, const char *url,
                                  const char *method);

#endif
