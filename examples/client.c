/* client.c -- pushes jobs with the C client, like Sidekiq::Client.push.
 * usage: example_client [REDIS_URL]   (default $REDIS_URL) */
#include <stdio.h>
#include "hiredhand.h"

int main(int argc, char **argv) {
    hh_redis_options ro;
    hh_redis_options_init(&ro);
    ro.url = argc > 1 ? argv[1] : NULL;
    int err;
    hh_client *c = hh_client_new(&ro, &err);
    if (!c) {
        fprintf(stderr, "connect: %s\n", hh_strerror(err));
        return 1;
    }
    char jid[HH_JID_SIZE];
    hh_push_options po;
    hh_push_options_init(&po);
    if ((err = hh_client_push(c, "HardWorker", "[\"bob\", 5]", &po, jid)) != HH_OK) goto fail;
    printf("pushed HardWorker %s\n", jid);
    const char *bulk[3] = {"[1]", "[2]", "[3]"};
    char jids[3][HH_JID_SIZE];
    if ((err = hh_client_push_bulk(c, "NoopJob", bulk, 3, &po, jids)) != HH_OK) goto fail;
    printf("pushed 3 NoopJob %s %s %s\n", jids[0], jids[1], jids[2]);
    hh_client_free(c);
    return 0;
fail:
    fprintf(stderr, "push: %s\n", hh_strerror(err));
    hh_client_free(c);
    return 1;
}
