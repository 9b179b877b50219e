/* SPDX-License-Identifier: MIT */
/* clone-http.c (the module bgrun-clone-http.so): `bgrun clone http://...`: a stream clone from a Mercurial server over its HTTP wire protocol (libcurl), fed to bgrun_clone through a pipe while it downloads. */

/*
 * What `hg clone --stream` asks of a server, through wireprotov1 over
 * HTTP (httppeer.py):
 *
 *   GET URL?cmd=capabilities   the server's capabilities: space-separated,
 *                              bundle2=... (urlquoted lines) among them;
 *                              a bundle2 stream clone needs stream=v2 there
 *   GET URL?cmd=getbundle      arguments form-encoded in X-HgArg-N headers:
 *                              bundlecaps=HG20,bundle2=<our caps>, cg=0,
 *                              common=<null node>, stream=1; X-HgProto-1
 *                              says we take the 0.2 media type, uncompressed
 *
 * The answer (application/mercurial-0.2: one byte, the length of the
 * compression engine's name, the name, "none" as asked, then the bundle)
 * is a bundle2 with one stream2 part: what bgrun_clone reads. A thread
 * runs the transfer and writes the bundle into a pipe; bgrun_clone reads
 * the other end on the calling thread, so the network and the disk
 * overlap and nothing is stored on the side.
 *
 * When the server has a clonebundles manifest, its first entry that is a
 * stream bundle we can apply (BUNDLESPEC none-v2;stream=v2 or
 * none-packed1, every requirement supported) is fetched instead, from
 * wherever it is, as hg does; a failure to fetch it fails the clone
 * (hg's default, ui.clonebundlefallback off).
 *
 * Afterwards the bookmarks come from listkeys, as hg reads them; the
 * phases of a non-publishing server come in the stream itself (its
 * phaseroots file).
 *
 * A server without a bundle2 stream (server.bundle2.stream off, or
 * older than hg 4.x) still offers the legacy stream_out command when it
 * advertises "stream" (the store is revlogv1 only) or "streamreqs=A,B".
 * Its answer (application/mercurial-0.1, uncompressed) is a status line
 * ("0" ok, "1" not allowed, "2" cannot lock), "FILECOUNT BYTECOUNT", then
 * the entries of a v1 stream bundle; the transfer writes a v1 bundle
 * header (HGS1UN, the counts, the requirements from the capability) into
 * the pipe ahead of them, so bgrun_clone applies it like a bundle file.
 * Like hg, the server's branch cache is not asked for.
 */

#include "clone-http.h"
#include "bgrun.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAPS_MAX (1 << 20)

struct clone_http {
	char *base;            /* the URL without a trailing '/' or query */
	char *bundle_url;      /* a clonebundles entry's, or NULL: getbundle */
	long timeout;          /* seconds without data */
	/* TLS and the manifest: see struct clone_http_opts. */
	bool insecure;
	const char *cacert;
	bool no_clonebundles;
	pthread_t thread;
	bool started;
	int pipe_w;            /* written by the thread, closed by it */
	char err[512];         /* the transfer's error, if any */
	/* The transfer's state. */
	long status;
	char content_type[128];
	unsigned char engine[256];
	size_t engine_len, engine_want; /* engine_want: 0 until the length byte */
	bool engine_checked;
	bool canceled;         /* the reading side went away */
	/* The legacy stream_out: the requirements, and its two header lines. */
	char *legacy_reqs;     /* NULL: a bundle2 stream (or a clone bundle) */
	char legacy_head[128];
	size_t legacy_len;
	bool legacy_done;
};

static void set_err(struct clone_http *h, const char *fmt, ...)
	BGRUN__PRINTF(2, 3);

static void set_err(struct clone_http *h, const char *fmt, ...)
{
	va_list ap;

	if (h->err[0] != '\0')
		return;
	va_start(ap, fmt);
	(void)vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
}

/* The settings both requests share: redirects, timeouts, ~/.netrc. */
static void common_opts(const struct clone_http *h, CURL *c)
{
	(void)curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	(void)curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, h->timeout);
	/* A server that sends nothing for that long has stalled. */
	(void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	(void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->timeout);
	(void)curl_easy_setopt(c, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_USERAGENT, "mercurial/proto-1.0 (bgrun clone)");
	if (h->cacert != NULL)
		(void)curl_easy_setopt(c, CURLOPT_CAINFO, h->cacert);
	if (h->insecure) {
		(void)curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		(void)curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

struct membuf {
	char *p;
	size_t len;
};

static size_t mem_write(char *data, size_t size, size_t n, void *arg)
{
	struct membuf *m = arg;
	size_t k = size * n;
	char *p;

	if (m->len + k > CAPS_MAX)
		return 0;
	p = realloc(m->p, m->len + k + 1);
	if (p == NULL)
		return 0;
	memcpy(p + m->len, data, k);
	m->p = p;
	m->len += k;
	m->p[m->len] = '\0';
	return k;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s in place. */
static void unquote(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		int hi, lo;

		if (s[0] == '%' && (hi = hexval(s[1])) >= 0 &&
		    (lo = hexval(s[2])) >= 0) {
			*o++ = (char)(hi << 4 | lo);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Whether the capabilities offer a bundle2 stream clone v2. */
static bool offers_stream_v2(char *caps)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(caps, " \n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \n", &save)) {
		char *line, *lsave = NULL;

		if (strncmp(tok, "bundle2=", 8) != 0)
			continue;
		unquote(tok + 8);
		for (line = strtok_r(tok + 8, "\n", &lsave); line != NULL;
		     line = strtok_r(NULL, "\n", &lsave)) {
			char *v, *vsave = NULL;

			if (strncmp(line, "stream=", 7) != 0)
				continue;
			for (v = strtok_r(line + 7, ",", &vsave); v != NULL;
			     v = strtok_r(NULL, ",", &vsave)) {
				unquote(v);
				if (strcmp(v, "v2") == 0)
					return true;
			}
		}
	}
	return false;
}

/*
 * The requirements of the legacy stream_out, as hg reads them from the
 * capabilities: "stream" means revlogv1 alone, "streamreqs=A,B" lists
 * them. A malloc'd comma-separated list, or NULL when the server offers
 * no legacy stream either (or on ENOMEM: then the clone fails as if).
 */
static char *legacy_requirements(const char *caps)
{
	const char *p = caps;

	while (*p != '\0') {
		size_t n = strcspn(p, " \n");

		if (n == 6 && strncmp(p, "stream", 6) == 0)
			return strdup("revlogv1");
		if (n > 11 && strncmp(p, "streamreqs=", 11) == 0)
			return strndup(p + 11, n - 11);
		p += n;
		p += strspn(p, " \n");
	}
	return NULL;
}

/* A request's failure as one line: curl's reason, or the HTTP status. */
static int request_error(struct clone_http *h, const char *what, CURLcode rc,
			 long status, const char *body)
{
	if (rc == CURLE_HTTP_RETURNED_ERROR)
		set_err(h, "%s: %s: HTTP %ld", h->base, what, status);
	else if (rc != CURLE_OK)
		set_err(h, "%s: %s: %s", h->base, what, curl_easy_strerror(rc));
	else if (body != NULL && body[0] != '\0')
		set_err(h, "%s: %s: HTTP %ld: %.200s", h->base, what, status, body);
	else
		set_err(h, "%s: %s: HTTP %ld", h->base, what, status);
	return -EPROTO;
}

/* GETs URL?cmd=CMD into *m (at most CAPS_MAX bytes). */
static int get_small(struct clone_http *h, const char *cmd, struct membuf *m)
{
	char url[4096];
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = 0;
	int r = 0;

	if (c == NULL) {
		set_err(h, "%s: cannot start libcurl", h->base);
		return -ENOMEM;
	}
	(void)snprintf(url, sizeof(url), "%s?cmd=%s", h->base, cmd);
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, m);
	common_opts(h, c);
	rc = curl_easy_perform(c);
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status != 200)
		r = request_error(h, cmd, rc, status, NULL);
	curl_easy_cleanup(c);
	return r;
}

/*
 * The bundle specification of a clonebundles entry (BUNDLESPEC, once
 * unquoted: "none-v2;stream=v2;requirements=a%2Cb" or
 * "none-packed1;requirements=..."): whether it is a stream bundle we can
 * apply, uncompressed, every requirement supported.
 */
static bool spec_ok(char *spec)
{
	char *save = NULL, *part = strtok_r(spec, ";", &save);
	bool v2 = false, stream = false;

	if (part == NULL)
		return false;
	if (strcmp(part, "none-packed1") == 0)
		stream = true;
	else if (strcmp(part, "none-v2") == 0)
		v2 = true;
	else
		return false;
	while ((part = strtok_r(NULL, ";", &save)) != NULL) {
		char *eq = strchr(part, '='), *r, *rsave = NULL;

		/* As hg's parsebundlespec: the whole entry is invalid. */
		if (eq == NULL)
			return false;
		*eq = '\0';
		unquote(part);
		unquote(eq + 1);
		if (strcmp(part, "stream") == 0)
			stream = v2 && strcmp(eq + 1, "v2") == 0;
		if (strcmp(part, "requirements") != 0)
			continue;
		for (r = strtok_r(eq + 1, ",", &rsave); r != NULL;
		     r = strtok_r(NULL, ",", &rsave))
			if (!bgrun_clone_supported_requirement(r))
				return false;
	}
	return stream;
}

/*
 * The server's clonebundles manifest (one entry a line: URL, then
 * urlquoted key=value attributes): the URL of the first entry that is a
 * stream bundle we can apply, as Mercurial picks (in the manifest's
 * order, the server's preference), or NULL.
 */
static char *pick_clonebundle(struct clone_http *h)
{
	struct membuf m = { NULL, 0 };
	char *save = NULL, *line, *pick = NULL;

	if (get_small(h, "clonebundles", &m) < 0 || m.p == NULL) {
		h->err[0] = '\0'; /* no manifest: the server streams itself */
		free(m.p);
		return NULL;
	}
	for (line = strtok_r(m.p, "\n", &save); line != NULL && pick == NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fsave = NULL, *url = strtok_r(line, " \t\r", &fsave), *a;

		if (url == NULL)
			continue;
		while ((a = strtok_r(NULL, " \t\r", &fsave)) != NULL) {
			char *eq = strchr(a, '=');

			if (eq == NULL)
				continue;
			*eq = '\0';
			unquote(a);
			unquote(eq + 1);
			if (strcmp(a, "BUNDLESPEC") == 0 && spec_ok(eq + 1)) {
				pick = strdup(url);
				break;
			}
		}
	}
	free(m.p);
	return pick;
}

static int capabilities(struct clone_http *h)
{
	struct membuf m = { NULL, 0 };
	bool clonebundles;
	int r;

	r = get_small(h, "capabilities", &m);
	if (r < 0)
		goto out;
	if (m.p == NULL || strstr(m.p, "unbundle") == NULL) {
		set_err(h, "%s: not a Mercurial server (its capabilities are not Mercurial's)",
			h->base);
		r = -EPROTO;
		goto out;
	}
	clonebundles = strstr(m.p, "clonebundles") != NULL;
	/* A clone bundle first, as hg does: it spares the server. */
	if (clonebundles && !h->no_clonebundles &&
	    (h->bundle_url = pick_clonebundle(h)) != NULL)
		goto out;
	/* offers_stream_v2 cuts its copy of the capabilities apart. */
	h->legacy_reqs = legacy_requirements(m.p);
	if (offers_stream_v2(m.p)) {
		free(h->legacy_reqs);
		h->legacy_reqs = NULL;
	} else if (h->legacy_reqs == NULL) {
		set_err(h, "%s: the server offers no stream clone (neither stream=v2 in its bundle2 capabilities nor the legacy stream; is server.uncompressed off?)",
			h->base);
		r = -EPROTONOSUPPORT;
	}
out:
	free(m.p);
	return r;
}

static size_t header_cb(char *data, size_t size, size_t n, void *arg)
{
	struct clone_http *h = arg;
	size_t k = size * n;

	if (k > 13 && strncasecmp(data, "content-type:", 13) == 0) {
		size_t i = 13, j = 0;

		while (i < k && data[i] == ' ')
			i++;
		while (i < k && data[i] != '\r' && data[i] != '\n' &&
		       j + 1 < sizeof(h->content_type))
			h->content_type[j++] = data[i++];
		h->content_type[j] = '\0';
	}
	return k;
}

/* Writes all of data to the pipe; false when the reader is gone. */
static bool pipe_write(struct clone_http *h, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t w = write(h->pipe_w, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			h->canceled = true;
			return false;
		}
		data += w;
		len -= (size_t)w;
	}
	return true;
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

/*
 * The legacy stream_out's two header lines, once both are in: checked,
 * then replaced by a v1 bundle's header in the pipe. Returns how many
 * bytes of data it took (all of them until both lines are in), or
 * (size_t)-1 after set_err.
 */
static size_t legacy_head(struct clone_http *h, const char *data, size_t k)
{
	unsigned char hdr[6 + 16 + 2];
	size_t used = 0, reqlen;
	unsigned long long files, bytes;
	char *nl, *end;

	if (strncmp(h->content_type, "application/mercurial-0.1", 25) != 0) {
		set_err(h, "%s: stream_out: not a Mercurial answer (content type '%s')",
			h->base, h->content_type);
		return (size_t)-1;
	}
	/* Byte by byte: the stream's own bytes start right after them. */
	while (used < k) {
		if (h->legacy_len + 1 >= sizeof(h->legacy_head)) {
			set_err(h, "%s: stream_out: no stream header in the first %zu bytes",
				h->base, sizeof(h->legacy_head));
			return (size_t)-1;
		}
		h->legacy_head[h->legacy_len++] = data[used++];
		h->legacy_head[h->legacy_len] = '\0';
		if (data[used - 1] != '\n')
			continue;
		nl = strchr(h->legacy_head, '\n');
		/* A status other than 0 ends the answer: no second line. */
		if (strncmp(h->legacy_head, "0\n", 2) != 0 ||
		    strchr(nl + 1, '\n') != NULL)
			break;
	}
	nl = strchr(h->legacy_head, '\n');
	if (nl == NULL)
		return used;
	if (strncmp(h->legacy_head, "0\n", 2) != 0) {
		if (strncmp(h->legacy_head, "1\n", 2) == 0)
			set_err(h, "%s: stream_out: the server does not allow stream clones",
				h->base);
		else if (strncmp(h->legacy_head, "2\n", 2) == 0)
			set_err(h, "%s: stream_out: the server could not lock its repository",
				h->base);
		else
			set_err(h, "%s: stream_out: unexpected status line '%.*s'",
				h->base, (int)(nl - h->legacy_head),
				h->legacy_head);
		return (size_t)-1;
	}
	if (strchr(nl + 1, '\n') == NULL)
		return used;
	errno = 0;
	files = strtoull(nl + 1, &end, 10);
	if (end == nl + 1 || *end != ' ' || errno != 0)
		goto bad;
	bytes = strtoull(end + 1, &end, 10);
	if (*end != '\n' || errno != 0)
		goto bad;
	reqlen = strlen(h->legacy_reqs) + 1;
	if (reqlen > 0xffff)
		goto bad;
	memcpy(hdr, "HGS1UN", 6);
	put_be(hdr + 6, files, 8);
	put_be(hdr + 14, bytes, 8);
	put_be(hdr + 22, reqlen, 2);
	if (!pipe_write(h, (const char *)hdr, sizeof(hdr)) ||
	    !pipe_write(h, h->legacy_reqs, reqlen))
		return (size_t)-1;
	h->legacy_done = true;
	h->engine_checked = true; /* no media type engine in 0.1 */
	return used;
bad:
	set_err(h, "%s: stream_out: not a stream header: '%.*s'", h->base,
		(int)strcspn(nl + 1, "\n"), nl + 1);
	return (size_t)-1;
}

static size_t body_cb(char *data, size_t size, size_t n, void *arg)
{
	struct clone_http *h = arg;
	size_t k = size * n, used = 0;

	if (h->legacy_reqs != NULL && !h->legacy_done) {
		used = legacy_head(h, data, k);
		if (used == (size_t)-1)
			return 0;
		if (!h->legacy_done)
			return k;
	} else if (!h->engine_checked && h->bundle_url != NULL) {
		/* A bundle file: the bytes as they are. */
		h->engine_checked = true;
	} else if (!h->engine_checked) {
		if (strncmp(h->content_type, "application/mercurial-0.2", 25) != 0) {
			if (strncmp(h->content_type, "application/hg-error", 20) == 0)
				set_err(h, "%s: getbundle: the server says: %.*s", h->base,
					(int)(k > 200 ? 200 : k), data);
			else
				set_err(h, "%s: getbundle: not a Mercurial answer (content type '%s')",
					h->base, h->content_type);
			return 0;
		}
		/* The 0.2 media type: u8 n, n bytes of compression engine. */
		while (used < k && !h->engine_checked) {
			if (h->engine_want == 0) {
				h->engine_want = (unsigned char)data[used++] + 1;
				continue;
			}
			h->engine[h->engine_len++] = (unsigned char)data[used++];
			if (h->engine_len + 1 == h->engine_want)
				h->engine_checked = true;
		}
		if (h->engine_want == 1)
			h->engine_checked = true;
		if (!h->engine_checked)
			return k;
		if (h->engine_len != 4 || memcmp(h->engine, "none", 4) != 0) {
			set_err(h, "%s: getbundle: the server compressed its answer with '%.*s' (asked: none)",
				h->base, (int)h->engine_len, h->engine);
			return 0;
		}
	}
	if (used < k && !pipe_write(h, data + used, k - used))
		return 0;
	return k;
}

static void *transfer(void *arg)
{
	struct clone_http *h = arg;
	char url[4096], hdr[4096];
	struct curl_slist *hs = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = 0;

	if (c == NULL) {
		set_err(h, "%s: cannot start libcurl", h->base);
		goto out;
	}
	if (h->bundle_url != NULL) {
		(void)curl_easy_setopt(c, CURLOPT_URL, h->bundle_url);
		goto perform;
	}
	if (h->legacy_reqs != NULL) {
		(void)snprintf(url, sizeof(url), "%s?cmd=stream_out", h->base);
		(void)curl_easy_setopt(c, CURLOPT_URL, url);
		goto perform;
	}
	(void)snprintf(url, sizeof(url), "%s?cmd=getbundle", h->base);
	/*
	 * The arguments, form-encoded: bundlecaps is "HG20,bundle2=" and our
	 * bundle2 capabilities ("HG20\nstream=v2"), urlquoted, all of it
	 * quoted again by the form encoding.
	 */
	(void)snprintf(hdr, sizeof(hdr), "X-HgArg-1: %s",
		       "bundlecaps=HG20%2Cbundle2%3DHG20%250Astream%253Dv2"
		       "&cg=0&common=0000000000000000000000000000000000000000"
		       "&stream=1");
	hs = curl_slist_append(hs, hdr);
	hs = curl_slist_append(hs, "X-HgProto-1: 0.1 0.2 comp=none");
	hs = curl_slist_append(hs, "Accept: application/mercurial-0.2");
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
perform:
	(void)curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	(void)curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	(void)curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	common_opts(h, c);
	rc = curl_easy_perform(c);
	if (rc == CURLE_WRITE_ERROR && h->err[0] != '\0')
		rc = CURLE_OK; /* body_cb said why */
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK && !h->canceled && h->bundle_url != NULL) {
		if (rc == CURLE_HTTP_RETURNED_ERROR)
			set_err(h, "%s: clone bundle %s: HTTP %ld", h->base,
				h->bundle_url, status);
		else
			set_err(h, "%s: clone bundle %s: %s", h->base,
				h->bundle_url, curl_easy_strerror(rc));
	} else if (rc != CURLE_OK && !h->canceled) {
		(void)request_error(h, h->legacy_reqs != NULL ? "stream_out" : "getbundle",
				    rc, status, NULL);
	} else if (h->legacy_reqs != NULL && !h->legacy_done && !h->canceled) {
		set_err(h, "%s: stream_out: the answer ended before its stream header",
			h->base);
	}
out:
	curl_slist_free_all(hs);
	if (c != NULL)
		curl_easy_cleanup(c);
	/* The end of the bundle, as the clone sees it. */
	(void)close(h->pipe_w);
	h->pipe_w = -1;
	return NULL;
}

static void set_opts(struct clone_http *h, const struct clone_http_opts *o)
{
	h->timeout = o->timeout;
	h->insecure = o->insecure;
	h->cacert = o->cacert;
	h->no_clonebundles = o->no_clonebundles;
}

int clone_http_start(const char *url, const struct clone_http_opts *o,
		     int *ret_fd, struct clone_http **ret_h, char **ret_err)
{
	struct clone_http *h = calloc(1, sizeof(*h));
	size_t len;
	int p[2] = { -1, -1 }, r;

	if (h == NULL)
		return -ENOMEM;
	h->pipe_w = -1;
	set_opts(h, o);
	h->base = strdup(url);
	if (h->base == NULL) {
		free(h);
		return -ENOMEM;
	}
	len = strlen(h->base);
	while (len > 0 && h->base[len - 1] == '/')
		h->base[--len] = '\0';
	/* The transfer learns that the clone stopped reading from EPIPE. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		set_err(h, "%s: cannot start libcurl", h->base);
		r = -ENOMEM;
		goto fail;
	}
	r = capabilities(h);
	if (r < 0)
		goto fail;
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		set_err(h, "%s: %s", h->base, strerror(errno));
		goto fail;
	}
	h->pipe_w = p[1];
	r = -pthread_create(&h->thread, NULL, transfer, h);
	if (r < 0) {
		set_err(h, "%s: cannot start the transfer: %s", h->base,
			strerror(-r));
		(void)close(p[0]);
		(void)close(p[1]);
		goto fail;
	}
	h->started = true;
	*ret_fd = p[0];
	*ret_h = h;
	return 0;
fail:
	if (ret_err != NULL)
		*ret_err = strdup(h->err);
	free(h->legacy_reqs);
	free(h->bundle_url);
	free(h->base);
	free(h);
	return r;
}

const char *clone_http_bundle_url(const struct clone_http *h)
{
	return h->bundle_url;
}

bool clone_http_legacy(const struct clone_http *h)
{
	return h->legacy_reqs != NULL;
}

int clone_http_finish(struct clone_http *h, int fd, char **ret_err)
{
	int r = 0;

	if (h == NULL)
		return 0;
	/* Whatever the clone left unread: the transfer stops on EPIPE. */
	(void)close(fd);
	if (h->started)
		(void)pthread_join(h->thread, NULL);
	if (h->err[0] != '\0') {
		r = -EPROTO;
		if (ret_err != NULL)
			*ret_err = strdup(h->err);
	}
	free(h->legacy_reqs);
	free(h->bundle_url);
	free(h->base);
	free(h);
	return r;
}

/*
 * The server's bookmarks (listkeys namespace=bookmarks: "name\thexnode"
 * lines), written as hg writes them ("hexnode name" lines, sorted by
 * name) to dest/.hg/bookmarks, or .hg/store/bookmarks when in_store.
 */
int clone_http_bookmarks(const char *url, const struct clone_http_opts *o,
			 const char *dest, bool in_store, char **ret_err)
{
	struct clone_http h = { .timeout = 0 };
	struct membuf m = { NULL, 0 };
	struct curl_slist *hs = NULL;
	char u[4096], path[4096], *save = NULL, *line;
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = 0;
	FILE *f = NULL;
	size_t len;
	int r = 0;

	set_opts(&h, o);
	h.base = strdup(url);
	if (c == NULL || h.base == NULL) {
		r = -ENOMEM;
		goto out;
	}
	len = strlen(h.base);
	while (len > 0 && h.base[len - 1] == '/')
		h.base[--len] = '\0';
	(void)snprintf(u, sizeof(u), "%s?cmd=listkeys", h.base);
	hs = curl_slist_append(hs, "X-HgArg-1: namespace=bookmarks");
	(void)curl_easy_setopt(c, CURLOPT_URL, u);
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	common_opts(&h, c);
	rc = curl_easy_perform(c);
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status != 200) {
		r = request_error(&h, "listkeys", rc, status, NULL);
		goto out;
	}
	if (m.p == NULL || m.len == 0)
		goto out; /* no bookmarks: no file, as hg */
	(void)snprintf(path, sizeof(path), "%s/.hg/%sbookmarks", dest,
		       in_store ? "store/" : "");
	f = fopen(path, "wxe");
	if (f == NULL) {
		r = -errno;
		set_err(&h, "%s: %s", path, strerror(errno));
		goto out;
	}
	/* The server sends them sorted by name, as hg writes them. */
	for (line = strtok_r(m.p, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (tab == NULL || strlen(tab + 1) != 40 ||
		    strspn(tab + 1, "0123456789abcdef") != 40) {
			set_err(&h, "%s: listkeys: not a bookmark line: %.80s",
				h.base, line);
			r = -EPROTO;
			goto out;
		}
		*tab = '\0';
		if (fprintf(f, "%s %s\n", tab + 1, line) < 0)
			r = -EIO;
	}
out:
	if (f != NULL && fclose(f) != 0 && r == 0) {
		r = -errno;
		set_err(&h, "%s: %s", path, strerror(errno));
	}
	if (r < 0 && ret_err != NULL)
		*ret_err = strdup(h.err[0] ? h.err : strerror(-r));
	curl_slist_free_all(hs);
	if (c != NULL)
		curl_easy_cleanup(c);
	free(m.p);
	free(h.base);
	return r;
}

int clone_http_write_hgrc(const char *dest, const char *url)
{
	char path[4096];
	FILE *f;
	int r = 0;

	(void)snprintf(path, sizeof(path), "%s/.hg/hgrc", dest);
	f = fopen(path, "wxe");
	if (f == NULL)
		return -errno;
	/* The path `hg clone` writes (without its commented examples). */
	if (fprintf(f, "[paths]\ndefault = %s\n", url) < 0)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

__attribute__((visibility("default")))
extern const struct clone_http_api bgrun_clone_http_api;

const struct clone_http_api bgrun_clone_http_api = {
	.start = clone_http_start,
	.finish = clone_http_finish,
	.bundle_url = clone_http_bundle_url,
	.legacy = clone_http_legacy,
	.bookmarks = clone_http_bookmarks,
	.write_hgrc = clone_http_write_hgrc,
};
