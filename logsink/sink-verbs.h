/* SPDX-License-Identifier: MIT */
/* sink-verbs.h: the verbs of the sink (`serve`, `send`), for logsink.c's verb table. */

#ifndef LSINK_SINK_VERBS_H
#define LSINK_SINK_VERBS_H

/* serve.c: the daemon. */
int lsink_serve_main(int argc, char **argv, const char *db);

/* send.c: one event from arguments or Mercurial's logtoprocess environment. */
int lsink_send_main(int argc, char **argv, const char *db);

#endif /* LSINK_SINK_VERBS_H */
