/* http.c -- stub until the libmicrohttpd server lands (see http.h). */
#include "http.h"
#include <stdio.h>
hh_http *hh_http_start(struct hh_manager *m, const char *bind, double max_age, char *err, size_t errlen) {
    (void)m, (void)bind, (void)max_age;
    snprintf(err, errlen, "HTTP endpoints are not built yet");
    return NULL;
}
void hh_http_stop(hh_http *h) { (void)h; }
